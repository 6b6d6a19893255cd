package scimserver

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// serveList answers GET /Users, GET /Groups and POST /{Users,Groups}/.search.
func (s *Server) serveList(w *recorder, r *http.Request, rs *resourceSchema, search bool) {
	q, err := parseListQuery(r, search)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalidValue", err.Error())
		return
	}
	f, broken := s.listFault()
	truncate := false
	if broken {
		if f.FailHTML || f.FailStatus != 0 {
			writeBrokenList(w, f)
			return
		}
		truncate = true
	}
	if f.IgnoreAttributes {
		q.attributes, q.excluded = nil, nil
	}
	if f.IgnoreStartIndex {
		q.startIndex, q.hasStart = 0, false
	}

	useCursor := false
	if s.opts.Cursor {
		if q.cursor != nil && q.hasStart {
			writeError(w, http.StatusBadRequest, "invalidValue", "startIndex and cursor are mutually exclusive")
			return
		}
		useCursor = q.cursor != nil || (!q.hasStart && s.opts.CursorDefault)
	}

	var filter filterExpr
	if strings.TrimSpace(q.filter) != "" {
		filter, err = parseFilter(rs, q.filter, filterLimits{eqAndOnly: f.FilterEqAndOnly, noExtension: f.NoExtensionFilter, noMembers: f.GroupMembersNever})
		if err != nil {
			writeError(w, http.StatusBadRequest, "invalidFilter", fmt.Sprintf("filter %q: %v", q.filter, err))
			return
		}
	}
	ord, ok := newOrdering(rs, q.sortBy, q.sortOrder)
	if !ok {
		writeError(w, http.StatusBadRequest, "invalidValue", fmt.Sprintf("sortBy %q: no such attribute", q.sortBy))
		return
	}

	base := s.baseURL(r)
	unstable := f.UnstableOrder && !ord.has
	var items []item
	if filter != nil && !ord.has && metaOnly(filter) {
		items = s.collectByMeta(rs, base, filter)
	} else {
		items = s.collect(rs, base, filter, filter != nil || ord.has)
	}
	if unstable {
		shuffle(items)
	} else {
		ord.sort(items)
	}
	if f.FilterNoMatch != "" && strings.Contains(strings.ToLower(q.filter), strings.ToLower(f.FilterNoMatch)) {
		items = nil
	}
	if f.TruncateAt > 0 && len(items) > f.TruncateAt {
		items = items[:f.TruncateAt]
	}
	if f.EmptyUnlessPaged && !useCursor && !(q.hasStart && q.hasCount) {
		items = nil
	}
	total := len(items)
	if s.hostileList(w, r, rs, q, f, items) {
		return
	}

	lr := map[string]any{"schemas": []string{URNListResponse}}
	var page []item
	if useCursor {
		page, ok = s.cursorPage(w, q, f, rs, ord, unstable, items, lr)
		if !ok {
			return
		}
	} else {
		page = s.indexPage(q, f, items, lr)
	}
	if !(useCursor && f.OmitTotalResults) {
		lr["totalResults"] = max(0, total+f.TotalResultsDelta)
	}
	lr["itemsPerPage"] = len(page)

	body := listBody(lr, s.encodePage(rs, base, page, q, f))
	response{body: body, etag: bodyETag(body), truncate: truncate}.write(w, r)
}

// collect returns every resource of the type that matches filter, in
// insertion order. Full renderings are made only when withMaps (to filter
// or sort); otherwise encodePage renders just the page.
func (s *Server) collect(rs *resourceSchema, base string, filter filterExpr, withMaps bool) []item {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var items []item
	if rs.name == resourceTypeUser {
		recs := s.orderedUsersLocked()
		items = make([]item, 0, len(recs))
		for _, rec := range recs {
			it := item{seq: rec.seq, u: rec}
			if withMaps {
				it.m = s.fullUserLocked(rec, base)
			}
			if filter == nil || filter.match(rs, it.m) {
				items = append(items, it)
			}
		}
	} else {
		recs := s.orderedGroupsLocked()
		items = make([]item, 0, len(recs))
		for _, rec := range recs {
			it := item{seq: rec.seq, g: rec}
			if withMaps {
				it.m = s.fullGroupLocked(rec, base)
			}
			if filter == nil || filter.match(rs, it.m) {
				items = append(items, it)
			}
		}
	}
	return items
}

// metaOnly: the filter reads only meta's sub-attributes (syncd's change
// check, meta.lastModified gt W).
func metaOnly(f filterExpr) bool {
	switch e := f.(type) {
	case andExpr:
		return metaOnly(e.l) && metaOnly(e.r)
	case orExpr:
		return metaOnly(e.l) && metaOnly(e.r)
	case notExpr:
		return metaOnly(e.e)
	case cmpExpr:
		return e.known && e.path.top == "meta" && e.path.sub != ""
	}
	return false
}

// collectByMeta is collect for a filter that reads only meta: each
// resource is matched against its meta alone, as a server with an index
// on lastModified answers it, instead of rendering every resource (at
// 100,000 users and 10,000 groups, every group rendered again after any
// change cost about a second per request). The page is rendered whole
// afterwards, as for any listing.
func (s *Server) collectByMeta(rs *resourceSchema, base string, filter filterExpr) []item {
	s.mu.RLock()
	defer s.mu.RUnlock()
	matches := func(rt, path string, created, modified time.Time, version int) bool {
		return filter.match(rs, map[string]any{"meta": meta(rt, base+path, created, modified, version)})
	}
	var items []item
	if rs.name == resourceTypeUser {
		for _, rec := range s.orderedUsersLocked() {
			if u := &rec.u; matches(resourceTypeUser, "/Users/"+u.ID, u.Created, u.LastModified, u.Version) {
				items = append(items, item{seq: rec.seq, u: rec})
			}
		}
		return items
	}
	for _, rec := range s.orderedGroupsLocked() {
		if g := &rec.g; matches(resourceTypeGroup, "/Groups/"+g.ID, g.Created, g.LastModified, g.Version) {
			items = append(items, item{seq: rec.seq, g: rec})
		}
	}
	return items
}

// indexPage slices an RFC 7644 §3.4.2.4 page: 1-based startIndex, count
// capped by maxPageSize, with the paging faults applied.
func (s *Server) indexPage(q listQuery, f Faults, items []item, lr map[string]any) []item {
	start := max(q.startIndex, 1)
	count := s.opts.DefaultPageSize
	if q.hasCount {
		count = max(q.count, 0)
	}
	count = min(count, s.opts.MaxPageSize)
	if f.PageCap > 0 {
		count = min(count, f.PageCap)
	}
	if f.IgnoreCount {
		count = len(items)
	}
	if f.WrapPastEnd && start > len(items) {
		start = 1
	}
	lr["startIndex"] = start
	off := start - 1
	if f.ZeroBasedStartIndex {
		// 0-based through and through: startIndex=0 (which RFC 7644
		// reads as 1) is the first item here.
		off = max(q.startIndex, 0)
		if f.WrapPastEnd && off >= len(items) {
			off = 0
		}
	}
	if f.RepeatAcrossPages && off > 0 {
		off--
	}
	if off >= len(items) {
		return nil
	}
	return items[off:min(off+count, len(items))]
}

// cursorPage slices an RFC 9865 page and sets nextCursor/previousCursor.
// It answers the request itself (and returns false) for a bad cursor or
// count.
func (s *Server) cursorPage(w *recorder, q listQuery, f Faults, rs *resourceSchema, ord ordering, unstable bool, items []item, lr map[string]any) ([]item, bool) {
	count := s.opts.DefaultPageSize
	if q.hasCount {
		if q.count < 0 || (f.RejectCountOverMax && q.count > s.opts.MaxPageSize) {
			writeError(w, http.StatusBadRequest, "invalidCount", fmt.Sprintf("count %d is outside 0..%d", q.count, s.opts.MaxPageSize))
			return nil, false
		}
		count = q.count
	}
	count = min(count, s.opts.MaxPageSize)
	if f.PageCap > 0 {
		count = min(count, f.PageCap)
	}
	qkey := rs.name + "\x00" + q.filter + "\x00" + strings.ToLower(q.sortBy) + "\x00" + strings.ToLower(q.sortOrder)
	pos := 0
	if q.cursor != nil && *q.cursor != "" {
		st := s.cursors.get(*q.cursor)
		switch {
		case st == nil || st.query != qkey:
			writeError(w, http.StatusBadRequest, "invalidCursor", fmt.Sprintf("cursor %q is not one this server issued for this query", *q.cursor))
			return nil, false
		case time.Now().After(st.expires):
			writeError(w, http.StatusBadRequest, "expiredCursor", fmt.Sprintf("cursor %q has expired", *q.cursor))
			return nil, false
		case st.after == nil || unstable:
			pos = min(st.offset, len(items))
		default:
			pos = ord.after(items, *st.after)
		}
	}
	end := min(pos+count, len(items))
	page := items[pos:end]
	issue := func(at int) string {
		st := &cursorState{query: qkey, offset: at, expires: time.Now().Add(s.opts.CursorTimeout)}
		pos := strconv.Itoa(at)
		if at > 0 && !unstable {
			k := ord.key(items[at-1])
			st.after = &k
			pos = fmt.Sprintf("%v/%d", k.val, k.seq)
		}
		// Equal positions get equal cursors, so an unchanged page has an
		// unchanged body and ETag.
		h := sha256.Sum256([]byte(qkey + "\x00" + pos))
		return s.cursors.put(hex.EncodeToString(h[:12]), st)
	}
	if end < len(items) {
		lr["nextCursor"] = issue(end)
	}
	if pos > 0 {
		lr["previousCursor"] = issue(max(0, pos-count))
	}
	return page, true
}

// itemFaults applies per-resource faults to a projected (owned) map.
func (s *Server) itemFaults(rs *resourceSchema, m map[string]any, f Faults, inList bool) {
	if rs.name == resourceTypeGroup {
		if f.GroupMembersNever {
			delete(m, "members")
		}
		if ms, ok := m["members"].([]any); ok && f.MembersRefOnly {
			// The elements are shared with the cached rendering: copy.
			out := make([]any, 0, len(ms))
			for _, e := range ms {
				em, _ := e.(map[string]any)
				n := map[string]any{}
				for _, k := range []string{"$ref", "display"} {
					if v, ok := em[k]; ok {
						n[k] = v
					}
				}
				out = append(out, n)
			}
			m["members"] = out
		}
		if _, has := m["members"]; has {
			switch {
			case inList && f.GroupMembersOmitted:
				delete(m, "members")
			case inList && f.GroupMembersEmpty:
				m["members"] = []any{}
			case f.GroupMembersCap > 0:
				if ms, ok := m["members"].([]any); ok && len(ms) > f.GroupMembersCap {
					m["members"] = ms[:f.GroupMembersCap]
				}
			}
		}
		return
	}
	if inList && f.HugeFieldBytes > 0 {
		m["displayName"] = strings.Repeat("x", f.HugeFieldBytes)
	}
}
