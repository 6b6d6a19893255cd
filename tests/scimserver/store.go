package scimserver

import (
	"crypto/rand"
	"fmt"
	"slices"
	"strings"
	"time"
)

// UpsertUser stores u, replacing the user with the same id. An empty ID
// gets a fresh UUID. Created is kept across replacements; LastModified and
// Version advance. It returns the stored user. userNames are deliberately
// not checked for uniqueness: tests feed clients what broken directories
// hold.
func (s *Server) UpsertUser(u User) (User, error) {
	if strings.TrimSpace(u.UserName) == "" {
		return User{}, fmt.Errorf("upsert user %q: userName is empty", u.ID)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, clash := s.groups[u.ID]; clash && u.ID != "" {
		return User{}, fmt.Errorf("upsert user %q: id is already a group's", u.ID)
	}
	return s.upsertUserLocked(u), nil
}

func (s *Server) upsertUserLocked(u User) User {
	u = u.clone()
	now := s.opts.Now().UTC()
	if u.ID == "" {
		u.ID = newID()
	}
	rec := s.users[u.ID]
	if rec == nil {
		s.seq++
		rec = &userRec{seq: s.seq}
		s.users[u.ID] = rec
		if u.Created.IsZero() {
			u.Created = now
		}
		if u.LastModified.IsZero() {
			u.LastModified = u.Created
		}
		u.Version = max(u.Version, 1)
	} else {
		u.Created = rec.u.Created
		u.LastModified = later(now, rec.u.LastModified)
		u.Version = rec.u.Version + 1
	}
	rec.u = u
	s.gen++
	return u.clone()
}

// UpsertGroup stores g like UpsertUser. Members must be ids of stored users
// or groups.
func (s *Server) UpsertGroup(g Group) (Group, error) {
	if strings.TrimSpace(g.DisplayName) == "" {
		return Group{}, fmt.Errorf("upsert group %q: displayName is empty", g.ID)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, clash := s.users[g.ID]; clash && g.ID != "" {
		return Group{}, fmt.Errorf("upsert group %q: id is already a user's", g.ID)
	}
	if err := s.checkMembersLocked(g.DisplayName, g.Members); err != nil {
		return Group{}, err
	}
	return s.upsertGroupLocked(g), nil
}

func (s *Server) checkMembersLocked(group string, ids []string) error {
	for _, id := range ids {
		if s.users[id] == nil && s.groups[id] == nil {
			return fmt.Errorf("group %q: member %q is no stored user or group id", group, id)
		}
	}
	return nil
}

func (s *Server) upsertGroupLocked(g Group) Group {
	g = g.clone()
	g.Members = dedupe(g.Members)
	now := s.opts.Now().UTC()
	if g.ID == "" {
		g.ID = newID()
	}
	rec := s.groups[g.ID]
	if rec == nil {
		s.seq++
		rec = &groupRec{seq: s.seq}
		s.groups[g.ID] = rec
		if g.Created.IsZero() {
			g.Created = now
		}
		if g.LastModified.IsZero() {
			g.LastModified = g.Created
		}
		g.Version = max(g.Version, 1)
	} else {
		g.Created = rec.g.Created
		g.LastModified = later(now, rec.g.LastModified)
		g.Version = rec.g.Version + 1
	}
	rec.g = g
	s.gen++
	return g.clone()
}

// DeleteUser removes the user and, as real servers do, its memberships.
// Nothing marks the deletion: it simply vanishes from listings.
func (s *Server) DeleteUser(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.users[id] == nil {
		return fmt.Errorf("delete user %q: no such user", id)
	}
	delete(s.users, id)
	s.dropMemberLocked(id)
	s.gen++
	return nil
}

// DeleteGroup removes the group (and its nesting in other groups).
func (s *Server) DeleteGroup(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.groups[id] == nil {
		return fmt.Errorf("delete group %q: no such group", id)
	}
	delete(s.groups, id)
	s.dropMemberLocked(id)
	s.gen++
	return nil
}

func (s *Server) dropMemberLocked(id string) {
	for _, rec := range s.groups {
		if i := slices.Index(rec.g.Members, id); i >= 0 {
			g := rec.g.clone()
			g.Members = slices.Delete(g.Members, i, i+1)
			s.upsertGroupLocked(g)
		}
	}
}

// User returns the stored user with this id, or else this userName.
func (s *Server) User(idOrName string) (User, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	rec := s.findUserLocked(idOrName)
	if rec == nil {
		return User{}, false
	}
	return rec.u.clone(), true
}

// Group returns the stored group with this id, or else this displayName.
func (s *Server) Group(idOrName string) (Group, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	rec := s.findGroupLocked(idOrName)
	if rec == nil {
		return Group{}, false
	}
	return rec.g.clone(), true
}

func (s *Server) findUserLocked(idOrName string) *userRec {
	if rec := s.users[idOrName]; rec != nil {
		return rec
	}
	for _, rec := range s.users {
		if strings.EqualFold(rec.u.UserName, idOrName) {
			return rec
		}
	}
	return nil
}

func (s *Server) findGroupLocked(idOrName string) *groupRec {
	if rec := s.groups[idOrName]; rec != nil {
		return rec
	}
	for _, rec := range s.groups {
		if strings.EqualFold(rec.g.DisplayName, idOrName) {
			return rec
		}
	}
	return nil
}

// UpdateUser applies fn to a copy of the user (by id or userName) and
// stores the result.
func (s *Server) UpdateUser(idOrName string, fn func(*User)) (User, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := s.findUserLocked(idOrName)
	if rec == nil {
		return User{}, fmt.Errorf("update user %q: no such user", idOrName)
	}
	u := rec.u.clone()
	fn(&u)
	u.ID = rec.u.ID
	return s.upsertUserLocked(u), nil
}

// UpdateGroup applies fn to a copy of the group (by id or displayName).
func (s *Server) UpdateGroup(idOrName string, fn func(*Group)) (Group, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := s.findGroupLocked(idOrName)
	if rec == nil {
		return Group{}, fmt.Errorf("update group %q: no such group", idOrName)
	}
	g := rec.g.clone()
	fn(&g)
	g.ID = rec.g.ID
	if err := s.checkMembersLocked(g.DisplayName, g.Members); err != nil {
		return Group{}, err
	}
	return s.upsertGroupLocked(g), nil
}

// SetActive sets a user's active flag.
func (s *Server) SetActive(idOrName string, active bool) error {
	_, err := s.UpdateUser(idOrName, func(u *User) { u.Active = Bool(active) })
	return err
}

// SetSSHKeys replaces a user's SSH public keys (creating the extension if
// the user had none).
func (s *Server) SetSSHKeys(idOrName string, keys []string) error {
	_, err := s.UpdateUser(idOrName, func(u *User) {
		if u.POSIX == nil {
			u.POSIX = &POSIX{}
		}
		u.POSIX.SSHPublicKeys = append([]string(nil), keys...)
	})
	return err
}

// SetMembers replaces a group's members with the given ids (or userNames).
func (s *Server) SetMembers(groupIDOrName string, members []string) error {
	return s.editMembers(groupIDOrName, func([]string) []string { return members })
}

// AddMembers adds users (ids or userNames) to a group.
func (s *Server) AddMembers(groupIDOrName string, members ...string) error {
	return s.editMembers(groupIDOrName, func(cur []string) []string { return append(cur, members...) })
}

// RemoveMembers removes users (ids or userNames) from a group.
func (s *Server) RemoveMembers(groupIDOrName string, members ...string) error {
	s.mu.RLock()
	ids := s.resolveMembersLocked(members)
	s.mu.RUnlock()
	return s.editMembers(groupIDOrName, func(cur []string) []string {
		return slices.DeleteFunc(cur, func(id string) bool { return slices.Contains(ids, id) })
	})
}

func (s *Server) editMembers(groupIDOrName string, fn func([]string) []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := s.findGroupLocked(groupIDOrName)
	if rec == nil {
		return fmt.Errorf("edit members of group %q: no such group", groupIDOrName)
	}
	g := rec.g.clone()
	g.Members = s.resolveMembersLocked(fn(g.Members))
	if err := s.checkMembersLocked(g.DisplayName, g.Members); err != nil {
		return err
	}
	s.upsertGroupLocked(g)
	return nil
}

// resolveMembersLocked turns userNames (and group displayNames) into ids;
// ids and unknown names pass through for checkMembersLocked to reject.
func (s *Server) resolveMembersLocked(names []string) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		if s.users[n] == nil && s.groups[n] == nil {
			if rec := s.findUserLocked(n); rec != nil {
				n = rec.u.ID
			} else if rec := s.findGroupLocked(n); rec != nil {
				n = rec.g.ID
			}
		}
		out = append(out, n)
	}
	return out
}

// Snapshot returns everything the server holds, in listing order.
func (s *Server) Snapshot() *Directory {
	s.mu.RLock()
	defer s.mu.RUnlock()
	d := &Directory{}
	for _, rec := range s.userRecsLocked() {
		d.Users = append(d.Users, rec.u.clone())
	}
	for _, rec := range s.groupRecsLocked() {
		d.Groups = append(d.Groups, rec.g.clone())
	}
	return d
}

func newID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

func dedupe(ids []string) []string {
	seen := make(map[string]bool, len(ids))
	return slices.DeleteFunc(ids, func(id string) bool {
		dup := seen[id]
		seen[id] = true
		return dup
	})
}

// later returns now, or just after prev when the clock has not moved past
// it: lastModified must advance on every change for "gt" polling to see it.
func later(now, prev time.Time) time.Time {
	if now.After(prev) {
		return now
	}
	return prev.Add(time.Millisecond)
}
