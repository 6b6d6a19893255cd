package snapshot

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strconv"

	"github.com/scimbridge/scimbridge/syncd/cache"
)

// sampleLookups bounds the point lookups Verify makes on top of the full
// enumeration, so verifying a 100,000-user snapshot stays well under a
// second.
const sampleLookups = 64

// Verify opens the file at path through the C reader, the code every node
// runs, and checks that it answers exactly what c holds: meta, every user
// and group by enumeration, and a spread of lookups by name, uid, gid,
// membership and keys. A snapshot the nodes cannot read is never
// published.
func Verify(path string, c *Contents, meta Meta) error {
	return verify(path, c, meta, c.userGIDTable())
}

// verify is Verify with c's users' gids made already (the writer's). It
// holds no second copy of the directory (issue 18: a map of every user
// and the reader's list of them were 35 MB at 100,000 users, held with
// the writer's): the reader enumerates users in uid order and groups in
// gid order, and each is compared with the record of c at the same rank
// in that order, which also proves none is missing or repeated.
func verify(path string, c *Contents, meta Meta, memberOf gidTable) error {
	r, err := cache.Open(path)
	if err != nil {
		return fmt.Errorf("verify: C reader cannot open it: %w", err)
	}
	defer r.Close()

	for key, want := range map[string]string{
		"schema_version": strconv.Itoa(SchemaVersion),
		"serial":         strconv.FormatInt(meta.Serial, 10),
		"users":          strconv.Itoa(len(c.Users)),
		"groups":         strconv.Itoa(len(c.Groups)),
	} {
		got, err := r.Meta(key)
		if err != nil {
			return fmt.Errorf("verify: meta %s: %w", key, err)
		}
		if got != want {
			return fmt.Errorf("verify: meta %s is %q, want %q", key, got, want)
		}
	}

	byUID := ranks(len(c.Users), func(i, j int) int { return cmp.Compare(c.Users[i].UID, c.Users[j].UID) })
	n := 0
	err = r.EachUser(func(got cache.User) error {
		if n >= len(byUID) {
			return fmt.Errorf("verify: reader enumerates more than the snapshot's %d users (%q, uid %d)", len(c.Users), got.Name, got.UID)
		}
		if w := c.Users[byUID[n]]; !sameUser(got, w) {
			return fmt.Errorf("verify: reader returns user %q (uid %d) that differs from what was written", got.Name, got.UID)
		}
		n++
		return nil
	})
	if err != nil {
		return fmt.Errorf("verify: enumerate users: %w", err)
	}
	if n != len(c.Users) {
		return fmt.Errorf("verify: reader enumerates %d users, snapshot has %d", n, len(c.Users))
	}
	byUID = nil
	MarkStage("verify-users")
	// Every user's group list: user_groups is derived data (schema.sql),
	// and initgroups reads nothing else.
	for i, u := range c.Users {
		gids, err := r.UserGroups(u.Name)
		w := memberOf.of(i)
		if err != nil || !slices.Equal(gids, w) {
			return fmt.Errorf("verify: groups of %q: got %v, %v; want %v", u.Name, gids, err, w)
		}
	}

	byGID := ranks(len(c.Groups), func(i, j int) int { return cmp.Compare(c.Groups[i].GID, c.Groups[j].GID) })
	n = 0
	err = r.EachGroup(func(got cache.Group) error {
		if n >= len(byGID) {
			return fmt.Errorf("verify: reader enumerates more than the snapshot's %d groups (%q, gid %d)", len(c.Groups), got.Name, got.GID)
		}
		if w := c.Groups[byGID[n]]; got.Name != w.Name || got.GID != w.GID || !sameMembers(got.Members, w.Members) {
			return fmt.Errorf("verify: reader returns group %q (gid %d) that differs from what was written", got.Name, got.GID)
		}
		n++
		return nil
	})
	if err != nil {
		return fmt.Errorf("verify: enumerate groups: %w", err)
	}
	if n != len(c.Groups) {
		return fmt.Errorf("verify: reader enumerates %d groups, snapshot has %d", n, len(c.Groups))
	}
	MarkStage("verify-groups")

	if err := verifyIndex(r, c); err != nil {
		return err
	}
	MarkStage("verify-index")
	return verifySample(r, c)
}

// ranks is 0..n-1 ordered by less: the positions of a list in another
// order, without copying its records.
func ranks(n int, compare func(i, j int) int) []int32 {
	r := make([]int32, n)
	for i := range r {
		r[i] = int32(i)
	}
	slices.SortFunc(r, func(a, b int32) int { return compare(int(a), int(b)) })
	return r
}

// verifyIndex asks the reader for every user by name and uid and every
// group by name and gid: with an NSS index (index.go) these are answered
// from it, which the enumeration above (SQL) does not read. A writer's
// file whose index is unusable (names colliding under every seed) is
// still published: it is read through SQL, as fast as before the index.
func verifyIndex(r *cache.Cache, c *Contents) error {
	// cache.Open ran scim_cache_check: every overflow link is checked.
	if !r.Indexed() {
		return nil
	}
	// Each user's activity (scim_user_active by name, what PAM and SPANK
	// read) was answered and compared for every user by the enumeration
	// above; asked again here with the same name it is the same call on
	// the same bytes, so only the entries are (Dec 2: two of every
	// user's five calls into the reader).
	for _, u := range c.Users {
		byName, err := r.UserEntry(u.Name)
		if err != nil || !sameEntry(byName, u) {
			return fmt.Errorf("verify: NSS index: user %q by name: got %+v, %v", u.Name, byName, err)
		}
		byUID, err := r.UserEntryByUID(u.UID)
		if err != nil || !sameEntry(byUID, u) {
			return fmt.Errorf("verify: NSS index: uid %d: got %+v, %v; want %q", u.UID, byUID, err, u.Name)
		}
	}
	for _, g := range c.Groups {
		byName, err := r.Group(g.Name)
		if err != nil || byName.GID != g.GID || !sameMembers(byName.Members, g.Members) {
			return fmt.Errorf("verify: NSS index: group %q by name: got gid %d, %v; want %d", g.Name, byName.GID, err, g.GID)
		}
		byGID, err := r.GroupByGID(g.GID)
		if err != nil || byGID.Name != g.Name || !sameMembers(byGID.Members, g.Members) {
			return fmt.Errorf("verify: NSS index: gid %d: got %q, %v; want %q", g.GID, byGID.Name, err, g.Name)
		}
	}
	return nil
}

func verifySample(r *cache.Cache, c *Contents) error {
	for _, u := range spread(c.Users, sampleLookups) {
		byName, err := r.User(u.Name)
		if err != nil || !sameUser(byName, u) {
			return fmt.Errorf("verify: lookup of user %q by name: got %+v, %v", u.Name, byName, err)
		}
		byUID, err := r.UserByUID(u.UID)
		if err != nil || byUID.Name != u.Name {
			return fmt.Errorf("verify: lookup of uid %d: got %q, %v; want %q", u.UID, byUID.Name, err, u.Name)
		}
		keys, err := r.Keys(u.Name)
		if err != nil || !slices.Equal(keys, u.SSHKeys) {
			return fmt.Errorf("verify: ssh keys of %q: got %d keys, %v; want %d", u.Name, len(keys), err, len(u.SSHKeys))
		}
	}
	for _, g := range spread(c.Groups, sampleLookups) {
		got, err := r.GroupByGID(g.GID)
		if err != nil || got.Name != g.Name || !sameMembers(got.Members, g.Members) {
			return fmt.Errorf("verify: lookup of gid %d: got %q, %v; want %q", g.GID, got.Name, err, g.Name)
		}
	}
	return nil
}

func sameUser(got cache.User, w User) bool {
	return sameEntry(got, w) && got.Active == w.Active
}

// sameEntry is sameUser but for Active (the passwd entry alone).
func sameEntry(got cache.User, w User) bool {
	return got.Name == w.Name && got.UID == w.UID && got.GID == w.GID && got.GECOS == w.GECOS &&
		got.Home == w.Home && got.Shell == w.Shell
}

func sameMembers(got, want []string) bool {
	if len(got) != len(want) {
		return false
	}
	if slices.Equal(got, want) {
		// Both in name order, as validation and the reader give them:
		// no copies to sort (a 90,000-member group is compared three
		// times per write).
		return true
	}
	a, b := slices.Clone(got), slices.Clone(want)
	sort.Strings(a)
	sort.Strings(b)
	return slices.Equal(a, b)
}

// spread picks at most n elements evenly across s, first and last included.
func spread[T any](s []T, n int) []T {
	if len(s) <= n {
		return s
	}
	out := make([]T, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, s[i*(len(s)-1)/(n-1)])
	}
	return out
}
