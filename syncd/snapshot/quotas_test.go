package snapshot

import (
	"database/sql"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func quotasOf(c *Contents) map[string]uint64 {
	m := map[string]uint64{}
	for _, u := range c.Users {
		if u.Quota > 0 {
			m[u.Name] = u.Quota
		}
	}
	for _, g := range c.Groups {
		if g.Quota > 0 {
			m["group "+g.Name] = g.Quota
		}
	}
	return m
}

// The identity provider's per-user limits travel in the snapshot: a whole
// write and Load keep them; an in-place update that only sets, changes or
// clears limits stays in place and equals a whole write; a removed or
// renamed user takes their row along; the C reader answers as before.
func TestQuotasRoundTripAndUpdateInPlace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cache.db")
	cur := generated(200, 20)
	cur.Users[0].Quota = 50 << 30
	cur.Users[1].Quota = 3 << 40
	cur.Groups[1].Quota = 5 << 40
	if _, err := Write(path, cur); err != nil {
		t.Fatal(err)
	}
	got, _, err := Load(path)
	if err != nil || !maps.Equal(quotasOf(got), quotasOf(cur)) {
		t.Fatalf("after a whole write: %v, %v; want %v", quotasOf(got), err, quotasOf(cur))
	}
	if ContentsDigest(got) != ContentsDigest(cur) {
		t.Fatal("Load of the file digests differently from what was written")
	}
	steps := []func(c *Contents){
		func(c *Contents) { c.Users[0].Quota = 60 << 30 },                      // changed
		func(c *Contents) { c.Users[1].Quota = 0; c.Users[2].Quota = 1 << 30 }, // cleared, set
		func(c *Contents) { c.Groups[1].Quota = 6 << 40; c.Groups[2].Quota = 1 << 40 },
		func(c *Contents) { c.Groups[1].Quota = 0 },
		func(c *Contents) { c.Groups[2].Name += "-renamed" }, // the team's limit follows
		func(c *Contents) { // user 0 removed, with its limit
			gone := c.Users[0].Name
			c.Users = c.Users[1:]
			for gi := range c.Groups {
				c.Groups[gi].Members = slices.DeleteFunc(c.Groups[gi].Members, func(m string) bool { return m == gone })
			}
		},
		func(c *Contents) { // a rename: the limit follows the new name
			old := c.Users[1].Name
			c.Users[1].Name = "renamed"
			for gi := range c.Groups {
				for mi, m := range c.Groups[gi].Members {
					if m == old {
						c.Groups[gi].Members[mi] = "renamed"
					}
				}
			}
		},
	}
	for i, step := range steps {
		next := clone(cur)
		step(next)
		_, info, err := UpdateWith(path, cur, next, UpdateOptions{})
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if !info.Incremental {
			t.Errorf("step %d: written whole: %s", i, info.Fallback)
		}
		got, _, err := Load(path)
		if err != nil || !maps.Equal(quotasOf(got), quotasOf(next)) {
			t.Fatalf("step %d: quotas %v, %v; want %v", i, quotasOf(got), err, quotasOf(next))
		}
		full := filepath.Join(dir, "full.db")
		os.Remove(full)
		if _, err := Write(full, next); err != nil {
			t.Fatal(err)
		}
		if g, w := tableRows(t, path)["meta"], tableRows(t, full)["meta"]; strings.Join(g, ";") != strings.Join(w, ";") {
			t.Fatalf("step %d: meta differs from a whole write (digest):\n%v\n%v", i, g, w)
		}
		cur = next
	}
}

// A live file written before the table existed (an older syncd): Load
// gives no limits; the first update that carries one writes the file
// whole, once, with the table; digests of contents without limits are
// what older writers stored.
func TestQuotasOnAnOlderFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cache.db")
	cur := generated(100, 10)
	if _, err := Write(path, cur); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`DROP TABLE quotas`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if got, _, err := Load(path); err != nil || len(quotasOf(got)) != 0 {
		t.Fatalf("older file: %v %v", err, quotasOf(got))
	}
	if d, _ := StoredDigest(path); d != ContentsDigest(cur) {
		t.Fatal("the digest of contents without limits changed")
	}
	// A change without limits stays in place on the older file.
	next := clone(cur)
	next.Users[0].GECOS = "changed"
	if _, info, err := UpdateWith(path, cur, next, UpdateOptions{}); err != nil || !info.Incremental {
		t.Fatalf("no limits, older file: %v %+v", err, info)
	}
	cur = next
	next = clone(cur)
	next.Users[0].Quota = 7 << 30
	_, info, err := UpdateWith(path, cur, next, UpdateOptions{})
	if err != nil || info.Incremental || !strings.Contains(info.Fallback, "no quotas table") {
		t.Fatalf("first limit on an older file: %v %+v", err, info)
	}
	if got, _, err := Load(path); err != nil || quotasOf(got)[next.Users[0].Name] != 7<<30 {
		t.Fatalf("after the whole write: %v %v", err, quotasOf(got))
	}
	cur = next
	next = clone(cur)
	next.Users[0].Quota = 8 << 30
	if _, info, err := UpdateWith(path, cur, next, UpdateOptions{}); err != nil || !info.Incremental {
		t.Fatalf("then in place again: %v %+v", err, info)
	}
}
