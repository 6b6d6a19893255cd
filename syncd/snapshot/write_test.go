package snapshot

import (
	"bytes"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The whole write inserts the NSS index as zeros and fills its pages
// after (insertIndex, fillIndex), writing the layout's bytes page by page
// without making the blob (indexPlan.emit): the row SQLite reads back is
// the blob the layout makes in memory (what an in-place update compares
// and patches), byte for byte, the file passes SQLite's own integrity
// check, and the C reader answers every key from it (Write's
// verification). The directories cover every kind of bytes the layout
// makes: bucket chunks, member pieces, records moved out of a full
// bucket (packed) and records of more than 1 KiB (chunk-aligned).
func TestWholeWriteIndexIsTheBlob(t *testing.T) {
	large := bigContents(400, 8)
	for i := range large.Users {
		switch {
		case i%50 == 0:
			large.Users[i].GECOS = strings.Repeat("long gecos ", 300) // 3,300 bytes: chunk-aligned
		case i%3 == 0:
			large.Users[i].GECOS = strings.Repeat("g", 900) // four to a bucket: some are packed
		}
	}
	for name, c := range map[string]*Contents{"plain": bigContents(3000, 60), "large records": large} {
		t.Run(name, func(t *testing.T) {
			users, groups := IndexOf(c)
			x := planIndexRoom(SchemaVersion, 4096, users, groups, 1)
			if x == nil {
				t.Fatal("the index is not usable")
			}
			if name == "large records" && (len(x.packed) == 0 || len(x.aligned) == 0) {
				t.Fatalf("the directory makes %d packed and %d chunk-aligned records; the test needs both", len(x.packed), len(x.aligned))
			}
			path := filepath.Join(t.TempDir(), "cache.db")
			m, err := Write(path, c)
			if err != nil {
				t.Fatal(err)
			}
			if !m.NSSIndex {
				t.Fatal("the index is not usable")
			}
			db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var got []byte
			if err := db.QueryRow(`SELECT data FROM nss_index WHERE id = 1`).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if want := buildIndex(SchemaVersion, 4096, users, groups); !bytes.Equal(got, want) {
				at := 0
				for at < min(len(got), len(want)) && got[at] == want[at] {
					at++
				}
				t.Fatalf("the file's index (%d bytes) is not the layout's blob (%d bytes): first difference at byte %d", len(got), len(want), at)
			}
			var ok string
			if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&ok); err != nil || ok != "ok" {
				t.Fatalf("integrity_check: %q, %v", ok, err)
			}
			var n int
			if err := db.QueryRow(`SELECT count(*) FROM memberships`).Scan(&n); err != nil || n != m.Memberships {
				t.Fatalf("memberships rows: %d, %v; meta says %d", n, err, m.Memberships)
			}
		})
	}
}

// The page writer refuses bytes out of blob order (they would be lost
// or land in the wrong page), naming them.
func TestIndexPageWriterWantsBlobOrder(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := &pageWriter{f: f, n: 100000, l0: 480, c: 4092, seg: noSegment, ps: 4096, page2: 4096, pages: 8192}
	w.buf = make([]byte, w.c)
	if err := w.put(5000, []byte("abc")); err != nil {
		t.Fatal(err)
	}
	if err := w.put(4000, []byte("x")); err == nil || !strings.Contains(err.Error(), "blob order") {
		t.Fatalf("a put before the last one: %v", err)
	}
	if err := w.put(99999, []byte("xy")); err == nil {
		t.Fatal("a put past the blob's end was taken")
	}
}

// Rows go in many to a statement (rows.go); a row that breaks a
// constraint still fails the write with an error naming it.
func TestBatchedInsertNamesTheBadRow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	c := bigContents(700, 10)
	c.Users[600].Name = c.Users[3].Name // a repeated name in the second batch
	_, err := Write(path, c)
	if err == nil {
		t.Fatal("Write accepted two users with one name")
	}
	if want := fmt.Sprintf("user %q (uid %d)", c.Users[600].Name, c.Users[600].UID); !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not name %s", err, want)
	}
}

// The whole write's gids by user position (gidTable) are what the map
// of gids by name says for every user: ascending, without repeats, none
// for a user in no group, the same for two users of one name (a write
// that then fails naming them), none from a member who is not a user.
func TestGIDTableIsTheMap(t *testing.T) {
	c := bigContents(2000, 30)
	c.Groups[5].Members = append(c.Groups[5].Members, c.Users[7].Name, "not-a-user") // a repeat, a stranger
	c.Users = append(c.Users, User{Name: "loner", UID: 1})
	c.Users = append(c.Users, c.Users[9]) // one name twice
	want := c.gidsOf(nil)
	tab := c.userGIDTable()
	for i, u := range c.Users {
		if got := tab.of(i); !slices.Equal(got, want[u.Name]) || !slices.IsSorted(got) {
			t.Fatalf("user %d (%s): gids %v, the map says %v", i, u.Name, got, want[u.Name])
		}
	}
	if n := len(tab.of(len(c.Users) - 2)); n != 0 {
		t.Fatalf("a user in no group has %d gids", n)
	}
}
