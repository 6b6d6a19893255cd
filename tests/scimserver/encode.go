package scimserver

import (
	"encoding/json"
	"strings"
)

// A client syncing a large directory asks for the same attributes on every
// poll, so each resource keeps its last encoded projection: a page is then
// a concatenation of cached bytes instead of a walk through maps.
type encoded struct {
	ver  uint64
	base string
	sel  string
	b    json.RawMessage
}

// encodePage renders, projects and encodes the page's resources.
func (s *Server) encodePage(rs *resourceSchema, base string, page []item, q listQuery, f Faults) []json.RawMessage {
	attrs, excluded := rs.parseSelection(q.attributes), rs.parseSelection(q.excluded)
	sel := strings.Join(q.attributes, ",") + "\x00" + strings.Join(q.excluded, ",") + "\x00" + s.returned()
	// Per-item faults change what is sent: no caching under them.
	cacheable := f.HugeFieldBytes == 0 && !f.GroupMembersOmitted && !f.GroupMembersEmpty && f.GroupMembersCap == 0 &&
		!f.GroupMembersNever && !f.MembersRefOnly
	out := make([]json.RawMessage, len(page))
	s.mu.RLock()
	defer s.mu.RUnlock()
	for i, it := range page {
		var cache *encodedCache
		var ver uint64
		m := it.m
		if it.u != nil {
			cache, ver = &it.u.enc, s.userRenderGen(it.u)
			if m == nil {
				m = s.fullUserLocked(it.u, base)
			}
		} else {
			cache, ver = &it.g.enc, s.gen
			if m == nil {
				m = s.fullGroupLocked(it.g, base)
			}
		}
		if cacheable {
			if e := cache.Load(); e != nil && e.ver == ver && e.base == base && e.sel == sel {
				out[i] = e.b
				continue
			}
		}
		pm := rs.project(m, attrs, excluded)
		s.itemFaults(rs, pm, f, true)
		out[i] = marshal(pm)
		if cacheable {
			cache.Store(&encoded{ver: ver, base: base, sel: sel, b: out[i]})
		}
	}
	return out
}

// listBody appends Resources to a marshalled ListResponse by hand:
// json.Marshal would re-validate every cached byte.
func listBody(lr map[string]any, resources []json.RawMessage) []byte {
	head := marshal(lr)
	n := len(head) + 16
	for _, r := range resources {
		n += len(r) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, head[:len(head)-1]...)
	b = append(b, `,"Resources":[`...)
	for i, r := range resources {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, r...)
	}
	return append(b, "]}"...)
}
