package snapshot

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/scimbridge/scimbridge/tests/scimserver"
)

// generated is the directory `scim-testserver -generate users,groups`
// serves (tests/scimserver.Generate), as syncd commits it: users without
// the POSIX extension are left out, members named by userName.
func generated(users, groups int) *Contents {
	d := scimserver.Generate(users, groups, 1)
	c := &Contents{Source: "generated"}
	names := map[string]string{}
	for _, u := range d.Users {
		if u.POSIX == nil || u.POSIX.UIDNumber == nil || u.POSIX.GIDNumber == nil {
			continue
		}
		names[u.ID] = u.UserName
		c.Users = append(c.Users, User{Name: u.UserName, UID: uint32(*u.POSIX.UIDNumber), GID: uint32(*u.POSIX.GIDNumber),
			GECOS: u.POSIX.GECOS, Home: u.POSIX.HomeDirectory, Shell: u.POSIX.LoginShell,
			Active: u.Active == nil || *u.Active, SCIMID: u.ID, SSHKeys: slices.Clone(u.POSIX.SSHPublicKeys)})
	}
	for _, g := range d.Groups {
		grp := Group{Name: g.DisplayName, GID: uint32(*g.GIDNumber), SCIMID: g.ID}
		for _, m := range g.Members {
			if n, ok := names[m]; ok {
				grp.Members = append(grp.Members, n)
			}
		}
		c.Groups = append(c.Groups, grp)
	}
	return c
}

// clone is a deep copy, so that a change to next leaves prev as it was.
func clone(c *Contents) *Contents {
	n := &Contents{Source: c.Source, Users: slices.Clone(c.Users), Groups: slices.Clone(c.Groups),
		Associations: slices.Clone(c.Associations)}
	for i := range n.Users {
		n.Users[i].SSHKeys = slices.Clone(n.Users[i].SSHKeys)
	}
	for i := range n.Groups {
		n.Groups[i].Members = slices.Clone(n.Groups[i].Members)
	}
	return n
}

// changeKind is one kind of change the source makes, applied to c.
type changeKind struct {
	name  string
	apply func(c *Contents)
}

// smallGroup is a project group with a few members (not slurm-users,
// which holds 90% of the directory).
func smallGroup(c *Contents) int {
	for j := len(c.Groups) - 1; j > 1; j-- {
		if n := len(c.Groups[j].Members); n >= 2 && n <= 50 {
			return j
		}
	}
	return len(c.Groups) - 1
}

func changeKinds() []changeKind {
	return []changeKind{
		{"disable", func(c *Contents) { c.Users[len(c.Users)/2].Active = false }},
		{"enable", func(c *Contents) {
			for i := range c.Users {
				if !c.Users[i].Active {
					c.Users[i].Active = true
					return
				}
			}
		}},
		{"add member", func(c *Contents) {
			g := &c.Groups[smallGroup(c)]
			for _, u := range c.Users[len(c.Users)/3:] {
				if !slices.Contains(g.Members, u.Name) {
					g.Members = append(g.Members, u.Name)
					return
				}
			}
		}},
		{"remove member", func(c *Contents) {
			g := &c.Groups[smallGroup(c)]
			g.Members = g.Members[1:]
		}},
		{"new user", func(c *Contents) {
			c.Users = append(c.Users, User{Name: "zz-newcomer", UID: 999999, GID: c.Groups[0].GID, GECOS: "New Comer",
				Home: "/home/zz-newcomer", Shell: "/bin/bash", Active: true, SCIMID: "new-1",
				SSHKeys: []string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJ6Y0newcomer newcomer@generated"}})
			c.Groups[0].Members = append(c.Groups[0].Members, "zz-newcomer")
			g := &c.Groups[smallGroup(c)]
			g.Members = append(g.Members, "zz-newcomer")
		}},
		{"delete user", func(c *Contents) {
			i := len(c.Users) / 4
			gone := c.Users[i].Name
			c.Users = slices.Delete(c.Users, i, i+1)
			for j := range c.Groups {
				c.Groups[j].Members = slices.DeleteFunc(c.Groups[j].Members, func(m string) bool { return m == gone })
			}
		}},
		{"new key", func(c *Contents) {
			u := &c.Users[len(c.Users)*2/3]
			u.SSHKeys = append(u.SSHKeys, "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJ6Y0anotherkey "+u.Name+"@laptop")
		}},
		{"rename", func(c *Contents) {
			i := len(c.Users) / 5
			old := c.Users[i].Name
			c.Users[i].Name = old + "-renamed"
			for j := range c.Groups {
				for k, m := range c.Groups[j].Members {
					if m == old {
						c.Groups[j].Members[k] = old + "-renamed"
					}
				}
			}
		}},
	}
}

// updatedPages writes c, applies kind through Update and returns the
// pages that differ between the two files (syncd/publish's delta unit).
func updatedPages(t *testing.T, base *Contents, kind changeKind) (int, UpdateInfo) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "cache.db")
	if _, err := Write(path, base); err != nil {
		t.Fatal(err)
	}
	before := filepath.Join(dir, "before.db")
	if err := os.Link(path, before); err != nil {
		t.Fatal(err)
	}
	next := clone(base)
	kind.apply(next)
	_, info, err := UpdateWith(path, base, next, UpdateOptions{})
	if err != nil {
		t.Fatalf("%s: %v", kind.name, err)
	}
	if !info.Incremental {
		t.Fatalf("%s: written whole: %s", kind.name, info.Fallback)
	}
	d, _ := pagesDiffering(t, before, path, false)
	return d, info
}

// Every kind of change rewrites a few pages, the same few whatever the
// directory's size: at 2,000 and 20,000 generated users each kind stays
// within 16 pages (64 KiB, the delta budget of issue 18) and the larger
// directory needs at most 4 more pages than the smaller (a B-tree one
// level deeper).
func TestUpdatePagesPerKind(t *testing.T) {
	small, large := generated(2000, 200), generated(20000, 2000)
	for _, kind := range changeKinds() {
		a, ia := updatedPages(t, small, kind)
		b, ib := updatedPages(t, large, kind)
		t.Logf("%-14s 2k: %2d pages (%d index)  20k: %2d pages (%d index)", kind.name, a, ia.IndexPages, b, ib.IndexPages)
		if a > 16 || b > 16 {
			t.Errorf("%s: %d and %d pages differ at 2k and 20k users, want at most 16 (64 KiB)", kind.name, a, b)
		}
		if b > a+4 {
			t.Errorf("%s: %d pages at 20k users against %d at 2k: the delta grows with the directory", kind.name, b, a)
		}
	}
}

var _ = fmt.Sprint
