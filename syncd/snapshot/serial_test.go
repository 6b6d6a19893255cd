package snapshot

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func bigSample(n int) *Contents {
	c := sample()
	for i := 0; i < n; i++ {
		c.Users = append(c.Users, User{Name: fmt.Sprintf("user%05d", i), UID: uint32(20000 + i), GID: 10001,
			Home: fmt.Sprintf("/home/user%05d", i), Shell: "/bin/bash", Active: true, SCIMID: fmt.Sprintf("id-%d", i)})
	}
	return c
}

// pagesDiffering counts the 4 KiB pages (syncd/publish's delta unit) in
// which a and b differ, a page past the end of one file counting as
// different, and returns it with the larger file's page count. With
// sameSize, files of different sizes fail the test.
func pagesDiffering(t *testing.T, a, b string, sameSize bool) (int, int) {
	x, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := os.ReadFile(b)
	if err != nil {
		t.Fatal(err)
	}
	if sameSize && len(x) != len(y) {
		t.Fatalf("sizes differ: %d and %d", len(x), len(y))
	}
	n := 0
	for off := 0; off < max(len(x), len(y)); off += 4096 {
		if off >= min(len(x), len(y)) ||
			!bytes.Equal(x[off:min(off+4096, len(x))], y[off:min(off+4096, len(y))]) {
			n++
		}
	}
	return n, (max(len(x), len(y)) + 4095) / 4096
}

// A clock-based serial changes the same pages a plain next serial does
// (the meta page): page deltas stay as small as before.
func TestSerialTouchesOnlyMeta(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cache.db")
	c := bigSample(3000)
	keep := func(name string) string {
		p := filepath.Join(dir, name)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(p, b, 0o644)
		return p
	}
	m1, err := Write(path, c)
	if err != nil {
		t.Fatal(err)
	}
	a := keep("a.db")
	m2, err := Write(path, c)
	if err != nil {
		t.Fatal(err)
	}
	b := keep("b.db")
	ClockSerials = true
	defer func() { ClockSerials = false }()
	before := time.Now().Unix()
	m3, err := Write(path, c)
	after := time.Now().Unix()
	if err != nil {
		t.Fatal(err)
	}
	cc := keep("c.db")
	if m1.Serial != 1 || m2.Serial != 2 {
		t.Fatalf("serials %d %d, want 1 2 without ClockSerials", m1.Serial, m2.Serial)
	}
	// Bounded by the clock around the write (a loaded machine can take
	// seconds over it), not by a fixed tolerance.
	if m3.Serial < before-1 || m3.Serial > after+1 {
		t.Fatalf("clock serial %d, want between %d and %d", m3.Serial, before, after)
	}
	plain, total := pagesDiffering(t, a, b, true)
	clock, _ := pagesDiffering(t, b, cc, true)
	t.Logf("%d pages: serial 1->2 changes %d, 2->%d changes %d", total, plain, m3.Serial, clock)
	if total < 50 || clock > plain || clock > 1 {
		t.Fatalf("%d pages: serial 1->2 changes %d pages, 2->clock changes %d", total, plain, clock)
	}
	// Never backwards: a next commit in the same second is one more; a
	// rollback's rewrite is above everything kept.
	before4 := time.Now().Unix()
	m4, err := Write(path, c)
	if err != nil || m4.Serial != m3.Serial+1 && m4.Serial < before4 {
		t.Fatalf("next serial %d after %d: %v", m4.Serial, m3.Serial, err)
	}
	// A head rebuilt from scratch starts at the clock, above every serial
	// it published before (but for commits within the same second).
	os.RemoveAll(HistoryDir(path))
	os.Remove(path)
	m5, err := Write(path, c)
	if err != nil || m5.Serial < m3.Serial {
		t.Fatalf("rebuilt head: serial %d, before %d: %v", m5.Serial, m3.Serial, err)
	}
}
