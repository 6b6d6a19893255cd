package scimserver

import (
	"cmp"
	"slices"
)

// Listings walk every resource on every request, so the insertion order
// and each resource's full rendering are kept between requests. Callers
// hold s.mu (read or write); the order cache has its own lock because
// readers fill it.

func (s *Server) orderedUsersLocked() []*userRec {
	s.omu.Lock()
	defer s.omu.Unlock()
	if s.userOrderGen != s.gen || s.userOrder == nil {
		s.userOrder = s.userRecsLocked()
		s.userOrderGen = s.gen
	}
	return s.userOrder
}

func (s *Server) orderedGroupsLocked() []*groupRec {
	s.omu.Lock()
	defer s.omu.Unlock()
	if s.groupOrderGen != s.gen || s.groupOrder == nil {
		s.groupOrder = s.groupRecsLocked()
		s.groupOrderGen = s.gen
	}
	return s.groupOrder
}

// fullUserLocked is the user's full rendering. A user's rendering depends
// only on the user, so its version keys the cache; with Options.UserGroups
// it also depends on the groups, and any change invalidates it.
func (s *Server) fullUserLocked(rec *userRec, base string) map[string]any {
	gen := s.userRenderGen(rec)
	if c := rec.cache.Load(); c != nil && c.gen == gen && c.base == base {
		return c.m
	}
	m := s.renderUser(&rec.u, base)
	rec.cache.Store(&rendered{gen: gen, base: base, m: m})
	return m
}

// userRenderGen is what a user's cached rendering is valid for.
func (s *Server) userRenderGen(rec *userRec) uint64 {
	if s.opts.UserGroups {
		return s.gen
	}
	return uint64(rec.u.Version)
}

// userGroupsLocked is the RFC 7643 section 4.1.2 "groups" value of user
// id: the groups that list it ("direct") and the groups that list those,
// transitively ("indirect").
func (s *Server) userGroupsLocked(id, base string) []any {
	s.omu.Lock()
	if s.memberOfGen != s.gen || s.memberOf == nil {
		s.memberOf = map[string][]string{}
		for _, rec := range s.groupRecsLocked() {
			for _, m := range rec.g.Members {
				s.memberOf[m] = append(s.memberOf[m], rec.g.ID)
			}
		}
		s.memberOfGen = s.gen
	}
	memberOf := s.memberOf
	s.omu.Unlock()
	out := []any{}
	seen := map[string]bool{}
	var add func(gid, typ string)
	add = func(gid, typ string) {
		if seen[gid] {
			return
		}
		seen[gid] = true
		rec := s.groups[gid]
		if rec == nil {
			return
		}
		out = append(out, map[string]any{"value": gid, "$ref": base + "/Groups/" + gid, "display": rec.g.DisplayName, "type": typ})
		for _, parent := range memberOf[gid] {
			add(parent, "indirect")
		}
	}
	for _, gid := range memberOf[id] {
		add(gid, "direct")
	}
	return out
}

// fullGroupLocked is the group's full rendering. Member display names
// depend on other resources, so any change invalidates it.
func (s *Server) fullGroupLocked(rec *groupRec, base string) map[string]any {
	if c := rec.cache.Load(); c != nil && c.gen == s.gen && c.base == base {
		return c.m
	}
	m := s.renderGroup(&rec.g, base)
	rec.cache.Store(&rendered{gen: s.gen, base: base, m: m})
	return m
}

func (s *Server) userRecsLocked() []*userRec {
	recs := make([]*userRec, 0, len(s.users))
	for _, rec := range s.users {
		recs = append(recs, rec)
	}
	slices.SortFunc(recs, func(a, b *userRec) int { return cmp.Compare(a.seq, b.seq) })
	return recs
}

func (s *Server) groupRecsLocked() []*groupRec {
	recs := make([]*groupRec, 0, len(s.groups))
	for _, rec := range s.groups {
		recs = append(recs, rec)
	}
	slices.SortFunc(recs, func(a, b *groupRec) int { return cmp.Compare(a.seq, b.seq) })
	return recs
}
