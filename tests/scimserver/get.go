package scimserver

import (
	"net/http"
	"strings"
)

// serveGet answers GET /Users/{id} and GET /Groups/{id}, with the
// attributes parameters and the resource's version as ETag.
func (s *Server) serveGet(w *recorder, r *http.Request, rs *resourceSchema, id string) {
	q, err := parseListQuery(r, false)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalidValue", err.Error())
		return
	}
	f := s.currentFaults()
	if f.IgnoreAttributes {
		q.attributes, q.excluded = nil, nil
	}
	base := s.baseURL(r)
	var full map[string]any
	var version int
	s.mu.RLock()
	if rs.name == resourceTypeUser {
		if rec := s.users[id]; rec != nil {
			full, version = s.fullUserLocked(rec, base), rec.u.Version
		}
	} else if rec := s.groups[id]; rec != nil {
		full, version = s.fullGroupLocked(rec, base), rec.g.Version
	}
	s.mu.RUnlock()
	if full == nil {
		writeError(w, http.StatusNotFound, "", "Resource "+id+" not found")
		return
	}
	m := rs.project(full, rs.parseSelection(q.attributes), rs.parseSelection(q.excluded))
	s.itemFaults(rs, m, f, false)
	resp := response{body: marshal(m), etag: etagOf(version)}
	// The version names the whole resource; a projection is another
	// representation and gets its own tag.
	// So is a user whose groups (Options.UserGroups) changed, and a
	// group whose members a fault rewrote.
	if len(q.attributes) > 0 || len(q.excluded) > 0 || s.returned() == returnedRequest || f.GroupMembersCap > 0 ||
		f.GroupMembersNever || f.MembersRefOnly || (rs.name == resourceTypeUser && s.opts.UserGroups) {
		resp.etag = bodyETag(resp.body)
	}
	if strings.HasSuffix(r.URL.Path, "/") {
		w.Header().Set("Content-Location", strings.TrimSuffix(r.URL.Path, "/"))
	}
	resp.write(w, r)
}
