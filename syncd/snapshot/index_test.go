package snapshot

import (
	"bytes"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/scimbridge/scimbridge/syncd/cache"
)

// bigContents: n users in g groups, user i in group i%g and, for every
// 7th user, in all of the first 40 groups; group 0 has every user.
func bigContents(n, g int) *Contents {
	c := &Contents{Source: "test"}
	for j := 0; j < g; j++ {
		c.Groups = append(c.Groups, Group{Name: fmt.Sprintf("grp%05d", j), GID: uint32(200000 + j), SCIMID: fmt.Sprint("g", j)})
	}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("user%06d", i)
		c.Users = append(c.Users, User{Name: name, UID: uint32(100000 + i), GID: uint32(200000 + i%g),
			GECOS: fmt.Sprintf("User Number %d", i), Home: "/home/" + name, Shell: "/bin/bash", Active: i%13 != 0, SCIMID: fmt.Sprint("u", i)})
		c.Groups[0].Members = append(c.Groups[0].Members, name)
		if j := i % g; j != 0 {
			c.Groups[j].Members = append(c.Groups[j].Members, name)
		}
		if i%7 == 0 {
			for j := 1; j < 40 && j < g; j++ {
				if j != i%g {
					c.Groups[j].Members = append(c.Groups[j].Members, name)
				}
			}
		}
	}
	return c
}

// The writer's file has an index the C reader uses, spread over many
// overflow pages, and every answer from it equals what was written
// (Verify checks each user and group by name and id through it).
func TestIndexUsedAndRight(t *testing.T) {
	for _, n := range []int{0, 2, 5000} {
		t.Run(fmt.Sprint(n, "users"), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cache.db")
			c := bigContents(n, 50)
			m, err := Write(path, c)
			if err != nil {
				t.Fatal(err)
			}
			if !m.NSSIndex {
				t.Error("Write reports no usable NSS index")
			}
			r, err := cache.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if !r.Indexed() {
				t.Fatal("the reader does not use the writer's NSS index")
			}
			if n == 0 {
				if _, err := r.User("user000000"); err != cache.ErrNotFound {
					t.Errorf("user in an empty index: %v, want not found", err)
				}
				return
			}
			for _, i := range []int{0, 7, n / 2, n - 1} {
				if i >= n {
					continue
				}
				u := c.Users[i]
				got, err := r.User(u.Name)
				if err != nil || !sameUser(got, u) {
					t.Errorf("%s: %+v, %v", u.Name, got, err)
				}
				gids, err := r.UserGroups(u.Name)
				want := []uint32{200000}
				if j := i % 50; j != 0 {
					want = append(want, uint32(200000+j))
				}
				if i%7 == 0 {
					for j := 1; j < 40; j++ {
						want = append(want, uint32(200000+j))
					}
				}
				slices.Sort(want)
				want = slices.Compact(want)
				if err != nil || !slices.Equal(gids, want) {
					t.Errorf("groups of %s: %v, %v; want %v", u.Name, gids, err, want)
				}
			}
			g, err := r.Group("grp00000")
			if err != nil || len(g.Members) != n {
				t.Errorf("grp00000: %d members, %v; want %d", len(g.Members), err, n)
			}
			for _, miss := range []string{"nobody-here", "user", "user0000000", "USER000001"} {
				if _, err := r.User(miss); err != cache.ErrNotFound {
					t.Errorf("User(%q) = %v, want not found", miss, err)
				}
			}
			if _, err := r.UserByUID(99999); err != cache.ErrNotFound {
				t.Errorf("uid 99999: %v, want not found", err)
			}
		})
	}
}

// Keys that all land in one bucket under a seed make the writer try the
// next seed; if a bucket cannot list its keys under any seed, the index
// is marked unusable (read through SQL), never laid out wrongly.
func TestIndexCrowdedBucket(t *testing.T) {
	users := make([]IndexUser, 200)
	for i := range users {
		users[i] = IndexUser{Name: fmt.Sprint("u", i), UID: uint32(1000 + i), GID: 1000}
	}
	blob := BuildIndex(4096, users, nil)
	if !IndexUsable(blob) {
		t.Fatal("200 ordinary users: index not usable")
	}
	big := make([]IndexUser, 3000)
	for i := range big {
		big[i] = IndexUser{Name: fmt.Sprint("n", i), UID: uint32(5000 + i), GID: 5000, GECOS: string(make([]byte, 3000))}
	}
	if b := BuildIndex(4096, big, nil); !IndexUsable(b) {
		t.Error("3,000 users with 3 KB GECOS each (records kept outside the buckets): index not usable")
	}
}

// A file whose index overflow pages are not in order (free pages reused)
// is not read through a wrong index: the reader's link check refuses it.
func TestIndexBrokenLinkNotUsedWrongly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	c := bigContents(3000, 20)
	if _, err := Write(path, c); err != nil {
		t.Fatal(err)
	}
	// Rewrite the blob in place: SQLite frees the old overflow pages and
	// the new ones come from the free list, in no guaranteed order.
	db, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE nss_index SET data = data || zeroblob(9000) WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	r, err := cache.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, u := range c.Users[:200] {
		got, err := r.User(u.Name)
		if err == nil && !sameUser(got, u) {
			t.Fatalf("%s answered wrongly from a rewritten index: %+v", u.Name, got)
		}
	}
}

// Page deltas stay small with the index: a one-user change rewrites the
// chunks of that user's and its groups' buckets, not every record after
// it. (Without an index, 20,000 users: 3, 7 and 6 pages; with a flat
// index of hash slots and sorted records: 3, 888 and 281.)
func TestIndexKeepsDeltasSmall(t *testing.T) {
	dir := t.TempDir()
	c := bigContents(20000, 2000)
	write := func(name string) string {
		p := filepath.Join(dir, name)
		if _, err := Write(p, c); err != nil {
			t.Fatal(err)
		}
		return p
	}
	prev := write("a.db")
	for _, step := range []struct {
		what   string
		change func()
		most   int
	}{
		{"disable a user", func() { c.Users[5000].Active = false }, 12},
		{"add a member to a group", func() {
			c.Groups[7].Members = append(c.Groups[7].Members, c.Users[9000].Name)
		}, 30},
		{"lengthen an early user's GECOS", func() { c.Users[100].GECOS = "A Much Longer Gecos Than Before For This User" }, 30},
		{"add a user", func() {
			c.Users = append(c.Users, User{Name: "newcomer", UID: 190000, GID: 200001, Home: "/home/newcomer", Shell: "/bin/bash", Active: true})
			c.Groups[1].Members = append(c.Groups[1].Members, "newcomer")
		}, 40},
	} {
		step.change()
		next := write(fmt.Sprint(step.what, ".db"))
		d, n := pagesDiffering(t, prev, next, false)
		t.Logf("%s: %d of %d pages differ", step.what, d, n)
		if d > step.most {
			t.Errorf("%s: %d of %d pages differ, want at most %d", step.what, d, n, step.most)
		}
		prev = next
	}
}

// A record the layout cannot hold (a string of 64 KiB or more) gets an
// index marked unusable: Write still publishes, says so, and the reader
// answers everything through SQL.
func TestUnusableIndexFallsBackToSQL(t *testing.T) {
	c := bigContents(300, 10)
	c.Users[3].GECOS = string(bytes.Repeat([]byte("g"), 70000))
	path := filepath.Join(t.TempDir(), "cache.db")
	m, err := Write(path, c)
	if err != nil {
		t.Fatal(err)
	}
	if m.NSSIndex {
		t.Error("Write reports a usable index with a 70,000-byte GECOS")
	}
	r, err := cache.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Indexed() {
		t.Error("the reader uses an index marked unusable")
	}
	for _, i := range []int{0, 3, 299} {
		got, err := r.User(c.Users[i].Name)
		if err != nil || !sameUser(got, c.Users[i]) {
			t.Errorf("%s through SQL: %v", c.Users[i].Name, err)
		}
	}
}

// Schema version 3: a member list longer than piecedOver bytes is NULL
// in groups.members and in pieces in the index. Every way a node reads
// the group gives the whole list in name order: the index by name and by
// gid, the SQL walk (getent group), SQL by name when the index is
// unusable; lists at the threshold stay whole; pieces are cut where the
// names say, so one member added changes only the pieces around it.
func TestPiecedMemberLists(t *testing.T) {
	c := bigContents(6000, 20)
	// Names of every length up to 255 bytes (the longest a name can be).
	for i := 0; i < 200; i++ {
		name := fmt.Sprintf("x%s%03d", strings.Repeat("y", i), i)
		c.Users = append(c.Users, User{Name: name, UID: uint32(500000 + i), GID: 200000, Home: "/home/x", Shell: "/bin/sh", Active: true})
		c.Groups[0].Members = append(c.Groups[0].Members, name)
	}
	// One group just at the threshold (91 names of 10 bytes: 1,000 bytes
	// with the commas), one just past it (90 of them and one of 11 bytes).
	ten := func(n int) []string {
		var m []string
		for i := 0; i < n; i++ {
			m = append(m, c.Users[i].Name)
		}
		return m
	}
	c.Groups = append(c.Groups, Group{Name: "edge1000", GID: 301000, Members: ten(91)},
		Group{Name: "edge1001", GID: 301001, Members: append(ten(90), "xyyyyyyy007")})
	path := filepath.Join(t.TempDir(), "cache.db")
	if _, err := Write(path, c); err != nil {
		t.Fatal(err)
	}
	db, err := openReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	nulls := map[string]bool{}
	rows, err := db.Query(`SELECT name, members IS NULL FROM groups`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name string
		var null bool
		if err := rows.Scan(&name, &null); err != nil {
			t.Fatal(err)
		}
		nulls[name] = null
	}
	rows.Close()
	db.Close()
	r, err := cache.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	walk, err := r.Groups()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]cache.Group{}
	for _, g := range walk {
		byName[g.Name] = g
	}
	for _, g := range c.Groups {
		want := sortedMembers(g.Members)
		if pieced := Pieced(len(strings.Join(want, ","))); nulls[g.Name] != pieced {
			t.Errorf("%s: groups.members NULL is %v, want %v (%d members)", g.Name, nulls[g.Name], pieced, len(want))
		}
		a, err1 := r.Group(g.Name)
		b, err2 := r.GroupByGID(g.GID)
		w := byName[g.Name]
		if err1 != nil || err2 != nil || !slices.Equal(a.Members, want) || !slices.Equal(b.Members, want) || !slices.Equal(w.Members, want) {
			t.Errorf("%s: %d members by name, %d by gid, %d in the walk (%v, %v); want %d",
				g.Name, len(a.Members), len(b.Members), len(w.Members), err1, err2, len(want))
		}
	}
	if !nulls["grp00000"] || nulls["edge1000"] || !nulls["edge1001"] {
		t.Errorf("pieced: grp00000 %v, edge1000 %v, edge1001 %v; want true, false, true", nulls["grp00000"], nulls["edge1000"], nulls["edge1001"])
	}
	// Pieces: every one at most memberPieceMax bytes, joined they are the
	// list, and a member added changes at most three of them.
	list := strings.Join(sortedMembers(c.Groups[0].Members), ",")
	pieces := memberPieces(list)
	if strings.Join(pieces, ",") != list {
		t.Fatal("the pieces joined are not the list")
	}
	for _, p := range pieces {
		if len(p) > memberPieceMax || p == "" {
			t.Fatalf("a piece of %d bytes", len(p))
		}
	}
	more := strings.Join(sortedMembers(append(slices.Clone(c.Groups[0].Members), "user003000a")), ",")
	after := memberPieces(more)
	was := map[string]bool{}
	for _, p := range pieces {
		was[p] = true
	}
	changed := 0
	for _, p := range after {
		if !was[p] {
			changed++
		}
	}
	if changed == 0 || changed > 3 || len(pieces) < 300 {
		t.Errorf("one member added to %d pieces changed %d of them, want 1 to 3", len(pieces), changed)
	}
}
