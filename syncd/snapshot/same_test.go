package snapshot

import (
	"database/sql"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// sameSample is sample() with a quota on a user and a group, a second
// key, and a user without a SCIM id: every column Matches compares.
func sameSample() *Contents {
	c := sample()
	c.Users[0].SSHKeys = append(c.Users[0].SSHKeys, "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJ6Y0second alice@desk")
	c.Users[0].Quota = 50 << 30
	c.Users = append(c.Users, User{Name: "carl", UID: 10007, GID: 10007, Home: "/home/carl", Shell: "/bin/bash", Active: true})
	c.Groups = append(c.Groups, Group{Name: "carl", GID: 10007})
	c.Groups[1].Quota = 1 << 40
	return c
}

// Matches says the file holds next's users and groups exactly when Load's
// lists are next's field by field, with Load's Meta; any single
// difference (a field, a key, a member, a quota, a record more or fewer,
// next out of id order) makes it false, so the caller loads the file and
// computes the diff as before.
func TestMatchesIsLoadsComparison(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	if _, err := Write(path, sameSample()); err != nil {
		t.Fatal(err)
	}
	_, want, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	next := sameSample()
	next.Associations, next.Source = nil, "elsewhere" // neither is compared (nor is it by the diff)
	same, meta, err := Matches(path, next)
	if err != nil || !same {
		t.Fatalf("the written contents: Matches = %v, %v; want true", same, err)
	}
	if meta != want {
		t.Errorf("Meta %+v, want Load's %+v", meta, want)
	}

	for name, change := range map[string]func(c *Contents){
		"user name":          func(c *Contents) { c.Users[1].Name = "bobby" },
		"uid":                func(c *Contents) { c.Users[1].UID = 10003 },
		"gid":                func(c *Contents) { c.Users[1].GID = 10005 },
		"gecos":              func(c *Contents) { c.Users[1].GECOS = "Bob B" },
		"home":               func(c *Contents) { c.Users[1].Home = "/home/b" },
		"shell":              func(c *Contents) { c.Users[1].Shell = "/bin/bash" },
		"active":             func(c *Contents) { c.Users[1].Active = true },
		"user scim id":       func(c *Contents) { c.Users[2].SCIMID = "u-7" },
		"a key changed":      func(c *Contents) { c.Users[0].SSHKeys[1] = "ssh-ed25519 AAAAother" },
		"a key added":        func(c *Contents) { c.Users[1].SSHKeys = []string{"ssh-ed25519 AAAAnew bob"} },
		"a key added last":   func(c *Contents) { c.Users[2].SSHKeys = []string{"ssh-ed25519 AAAAnew carl"} },
		"a key removed":      func(c *Contents) { c.Users[0].SSHKeys = c.Users[0].SSHKeys[:1] },
		"keys reordered":     func(c *Contents) { slices.Reverse(c.Users[0].SSHKeys) },
		"user quota":         func(c *Contents) { c.Users[0].Quota++ },
		"user quota cleared": func(c *Contents) { c.Users[0].Quota = 0 },
		"user quota set":     func(c *Contents) { c.Users[2].Quota = 1 << 30 },
		"group quota":        func(c *Contents) { c.Groups[1].Quota = 0 },
		"group quota set":    func(c *Contents) { c.Groups[2].Quota = 1 << 30 },
		"group name":         func(c *Contents) { c.Groups[1].Name = "ml" },
		"group gid":          func(c *Contents) { c.Groups[1].GID = 10006 },
		"group scim id":      func(c *Contents) { c.Groups[1].SCIMID = "g-9" },
		"member added":       func(c *Contents) { c.Groups[1].Members = []string{"alice", "bob"} },
		"member added last":  func(c *Contents) { c.Groups[2].Members = []string{"carl"} },
		"member removed":     func(c *Contents) { c.Groups[0].Members = []string{"alice"} },
		"members reordered":  func(c *Contents) { c.Groups[0].Members = []string{"bob", "alice"} },
		"user more": func(c *Contents) {
			c.Users = append(c.Users, User{Name: "dan", UID: 10009, GID: 10001, Home: "/home/dan", Shell: "/bin/bash"})
		},
		"user fewer":      func(c *Contents) { c.Users = c.Users[:2] },
		"group more":      func(c *Contents) { c.Groups = append(c.Groups, Group{Name: "x", GID: 10011}) },
		"group fewer":     func(c *Contents) { c.Groups = c.Groups[:2] },
		"users reordered": func(c *Contents) { c.Users[0], c.Users[1] = c.Users[1], c.Users[0] },
		"groups reordered": func(c *Contents) {
			c.Groups[0], c.Groups[1] = c.Groups[1], c.Groups[0]
		},
	} {
		next := sameSample()
		change(next)
		if same, _, err := Matches(path, next); err != nil || same {
			t.Errorf("%s: Matches = %v, %v; want false", name, same, err)
		}
	}

	if same, _, err := Matches(filepath.Join(t.TempDir(), "none.db"), sameSample()); !IsNotExist(err) || same {
		t.Errorf("no file: Matches = %v, %v; want a not-exist error", same, err)
	}
}

// A file whose rows were changed behind syncd's back (its stored digest
// not updated) no longer matches the contents it was written from:
// Matches reads the rows, not the digest.
func TestMatchesReadsTheRowsNotTheDigest(t *testing.T) {
	for name, stmt := range map[string]string{
		"a shell":            `UPDATE users SET shell = '/bin/sh' WHERE name = 'bob'`,
		"a membership":       `DELETE FROM memberships WHERE gid = 10005 AND user_name = 'alice'`,
		"a key":              `INSERT INTO ssh_keys (user_name, seq, key) VALUES ('bob', 0, 'ssh-ed25519 AAAAplanted')`,
		"a quota":            `DELETE FROM quotas WHERE kind = 'user'`,
		"a user":             `DELETE FROM users WHERE name = 'carl'`,
		"a group's scim id":  `UPDATE groups SET scim_id = 'g-x' WHERE gid = 10001`,
		"a user's activity":  `UPDATE users SET active = 1 WHERE name = 'bob'`,
		"a user's gecos":     `UPDATE users SET gecos = 'x' WHERE name = 'carl'`,
		"a user's scim id":   `UPDATE users SET scim_id = 'u-planted' WHERE name = 'carl'`,
		"a group's member 2": `INSERT INTO memberships (gid, user_name) VALUES (10007, 'carl')`,
	} {
		path := filepath.Join(t.TempDir(), "cache.db")
		if _, err := Write(path, sameSample()); err != nil {
			t.Fatal(err)
		}
		if same, _, err := Matches(path, sameSample()); err != nil || !same {
			t.Fatalf("before the edit: Matches = %v, %v; want true", same, err)
		}
		digest, _ := StoredDigest(path)
		os.Chmod(path, 0o600)
		db, err := sql.Open("sqlite3", "file:"+path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		db.Close()
		if d, _ := StoredDigest(path); d != digest {
			t.Fatalf("%s: the edit changed the stored digest", name)
		}
		if same, _, err := Matches(path, sameSample()); err != nil || same {
			t.Errorf("%s changed in the file: Matches = %v, %v; want false", name, same, err)
		}
	}
}

// EachID gives every group, then every user, with the fields validation's
// live index reads equal to Load's, and Load's user and group counts.
func TestEachIDIsLoadsIDs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	if _, err := Write(path, sameSample()); err != nil {
		t.Fatal(err)
	}
	c, want, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var users []User
	var groups []Group
	var sized [2]int
	meta, err := EachID(path, func(u, g int) { sized = [2]int{u, g} }, func(g *Group) {
		if len(users) > 0 {
			t.Error("a group after a user")
		}
		groups = append(groups, *g)
	}, func(u *User) { users = append(users, *u) })
	if err != nil {
		t.Fatal(err)
	}
	if sized != [2]int{len(c.Users), len(c.Groups)} {
		t.Errorf("size hint %v, want %d users and %d groups", sized, len(c.Users), len(c.Groups))
	}
	if meta.Serial != want.Serial || meta.Source != want.Source || !meta.CreatedAt.Equal(want.CreatedAt) ||
		meta.Users != want.Users || meta.Groups != want.Groups {
		t.Errorf("Meta %+v, want Load's %+v", meta, want)
	}
	if len(users) != len(c.Users) || len(groups) != len(c.Groups) {
		t.Fatalf("%d users and %d groups, want %d and %d", len(users), len(groups), len(c.Users), len(c.Groups))
	}
	for i, u := range c.Users {
		g := users[i]
		if g.Name != u.Name || g.UID != u.UID || g.GID != u.GID || g.Home != u.Home || g.SCIMID != u.SCIMID {
			t.Errorf("user %d: %+v, want the ids of %+v", i, g, u)
		}
	}
	for i, g := range c.Groups {
		h := groups[i]
		if h.Name != g.Name || h.GID != g.GID || h.SCIMID != g.SCIMID {
			t.Errorf("group %d: %+v, want the ids of %+v", i, h, g)
		}
	}
	if _, err := EachID(filepath.Join(t.TempDir(), "none.db"), func(int, int) {}, func(*Group) {}, func(*User) {}); !IsNotExist(err) {
		t.Errorf("no file: %v, want a not-exist error", err)
	}
}
