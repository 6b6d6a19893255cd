package scimserver

import (
	"encoding/json"
	"fmt"
	"os"
)

// ReadFixture reads a directory in the fixture format: the JSON form of
// Directory, where group members may be user ids or userNames.
func ReadFixture(path string) (*Directory, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read fixture: %w", err)
	}
	var d Directory
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("parse fixture %s: %w", path, err)
	}
	return &d, nil
}

// LoadFixture replaces the server's content with the fixture at path.
func (s *Server) LoadFixture(path string) error {
	d, err := ReadFixture(path)
	if err != nil {
		return err
	}
	if err := s.Load(d); err != nil {
		return fmt.Errorf("load fixture %s: %w", path, err)
	}
	return nil
}

// Load replaces the server's content with d (users first, in order, then
// groups) and remembers it for Reset. Resources without ids get fresh
// ones; group members may be ids or userNames (or group displayNames).
func (s *Server) Load(d *Directory) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users = map[string]*userRec{}
	s.groups = map[string]*groupRec{}
	s.gen++
	loaded := &Directory{}
	for _, u := range d.Users {
		if u.UserName == "" {
			return fmt.Errorf("user %q has no userName", u.ID)
		}
		if u.ID != "" && s.users[u.ID] != nil {
			return fmt.Errorf("user id %q appears twice", u.ID)
		}
		loaded.Users = append(loaded.Users, s.upsertUserLocked(u))
	}
	// Groups may nest: give every group its id before resolving members.
	groups := make([]Group, len(d.Groups))
	for i, g := range d.Groups {
		if g.DisplayName == "" {
			return fmt.Errorf("group %q has no displayName", g.ID)
		}
		if g.ID != "" && (s.groups[g.ID] != nil || s.users[g.ID] != nil) {
			return fmt.Errorf("group id %q appears twice", g.ID)
		}
		members := g.Members
		g.Members = nil
		groups[i] = s.upsertGroupLocked(g)
		groups[i].Members = members
	}
	for _, g := range groups {
		g.Members = s.resolveMembersLocked(g.Members)
		if err := s.checkMembersLocked(g.DisplayName, g.Members); err != nil {
			return err
		}
		rec := s.groups[g.ID]
		rec.g.Members = dedupe(g.Members)
		loaded.Groups = append(loaded.Groups, rec.g.clone())
	}
	s.initial = loaded
	s.cursors.reset()
	return nil
}

// Reset restores the last loaded directory (or an empty one), clears the
// faults, the cursors, the counters and the request log.
func (s *Server) Reset() {
	s.mu.RLock()
	d := s.initial
	s.mu.RUnlock()
	if d == nil {
		d = &Directory{}
	}
	if err := s.Load(d); err != nil {
		// d was loaded once already.
		panic("scimserver: reset: " + err.Error())
	}
	s.SetFaults(Faults{})
	s.ResetCounters()
}
