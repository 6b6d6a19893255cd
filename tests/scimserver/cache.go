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
// only on the user, so its version keys the cache.
func (s *Server) fullUserLocked(rec *userRec, base string) map[string]any {
	if c := rec.cache.Load(); c != nil && c.gen == uint64(rec.u.Version) && c.base == base {
		return c.m
	}
	m := s.renderUser(&rec.u, base)
	rec.cache.Store(&rendered{gen: uint64(rec.u.Version), base: base, m: m})
	return m
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
