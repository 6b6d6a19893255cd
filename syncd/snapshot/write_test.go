package snapshot

import (
	"bytes"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// The whole write inserts the NSS index as zeros and fills its pages
// after (insertIndex, fillIndex): the row SQLite reads back is the blob
// the layout made, the file passes SQLite's own integrity check, and the
// C reader answers every key from it (Write's verification).
func TestWholeWriteIndexIsTheBlob(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	c := bigContents(3000, 60)
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
	users, groups := IndexOf(c)
	if want := buildIndex(SchemaVersion, 4096, users, groups); !bytes.Equal(got, want) {
		t.Fatalf("the file's index (%d bytes) is not the layout's blob (%d bytes)", len(got), len(want))
	}
	var ok string
	if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&ok); err != nil || ok != "ok" {
		t.Fatalf("integrity_check: %q, %v", ok, err)
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM memberships`).Scan(&n); err != nil || n != m.Memberships {
		t.Fatalf("memberships rows: %d, %v; meta says %d", n, err, m.Memberships)
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
