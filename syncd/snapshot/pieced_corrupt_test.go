package snapshot

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/scimbridge/scimbridge/syncd/cache"
)

// A real schema version 3 file with one pieced group, corrupted byte for
// byte where its pieces are: every corruption makes the C reader answer
// UNAVAIL for the group by name and by gid (a damaged index), never a
// hang, a crash, or a member list other than the written one; and a file
// whose header or index claims a version above 3 is refused, naming it.
func TestPiecedCorruptionUnavailable(t *testing.T) {
	const gid = 200000
	c := &Contents{Source: "test", Groups: []Group{{Name: "big", GID: gid, SCIMID: "g0"}, {Name: "small", GID: gid + 1, SCIMID: "g1"}}}
	for i := 0; i < 400; i++ {
		name := fmt.Sprintf("user%06d", i)
		c.Users = append(c.Users, User{Name: name, UID: uint32(100000 + i), GID: gid + 1, Home: "/home/" + name, Shell: "/bin/sh", Active: true, SCIMID: fmt.Sprint("u", i)})
		c.Groups[0].Members = append(c.Groups[0].Members, name)
	}
	want := sortedMembers(c.Groups[0].Members)
	list := strings.Join(want, ",")
	pieces := memberPieces(list)
	if !Pieced(len(list)) || len(pieces) < 4 {
		t.Fatalf("the fixture is not pieced: %d bytes in %d pieces", len(list), len(pieces))
	}
	dir := t.TempDir()
	good := filepath.Join(dir, "good.db")
	if _, err := Write(good, c); err != nil {
		t.Fatal(err)
	}
	orig, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	first := func(p string) string { f, _, _ := strings.Cut(p, ","); return f }
	// Where the records lie in the file (a record across a page boundary
	// is not found whole and is skipped; the group record is in two
	// buckets, by name and by gid).
	all := func(rec []byte) []int {
		var at []int
		for off := 0; ; {
			i := bytes.Index(orig[off:], rec)
			if i < 0 {
				return at
			}
			at = append(at, off+i)
			off += i + 1
		}
	}
	grec := le.AppendUint32(nil, gid)
	grec = le.AppendUint32(grec, 3)
	grec = le.AppendUint32(grec, uint32(len(list))|piecedFlag)
	grec = append(grec, "big"...)
	gat := all(grec)
	if len(gat) == 0 {
		t.Fatal("the pieced group record is not in the file")
	}
	var pat []int // pieces found whole, by index; -1 if not
	for i, p := range pieces {
		next := ""
		if i+1 < len(pieces) {
			next = first(pieces[i+1])
		}
		a := all(pieceRecord(gid, p, next))
		pat = append(pat, -1)
		if len(a) == 1 {
			pat[i] = a[0]
		}
	}
	mid := -1 // a piece found whole that is neither the first nor the last
	for i := 1; i+1 < len(pieces); i++ {
		if pat[i] >= 0 {
			mid = i
			break
		}
	}
	if mid < 0 {
		t.Fatal("no middle piece lies whole in one page")
	}
	hdr := bytes.Index(orig, []byte("SCIMNSS2"))
	if hdr < 0 || le.Uint32(orig[hdr+64:]) != 3 {
		t.Fatal("no version 3 index header in the file")
	}
	u32 := func(b []byte, at int, v uint32) { le.PutUint32(b[at:], v) }
	cases := []struct {
		name string
		mod  func(b []byte)
	}{
		{"a chain that loops back to the first piece", func(b []byte) {
			copy(b[pat[mid]+9:], first(pieces[0]))
		}},
		{"a chain that names itself next", func(b []byte) {
			copy(b[pat[mid]+9:], first(pieces[mid]))
		}},
		{"a next piece that does not exist", func(b []byte) {
			copy(b[pat[mid]+9:], "user999999")
		}},
		{"a first piece that does not exist", func(b []byte) {
			for _, g := range gat {
				copy(b[g+len(grec)+5:], "user000000"[:9]+"x")
			}
		}},
		{"a piece that does not start with the name it is found by", func(b []byte) {
			b[pat[mid]+9+10] = 'v'
		}},
		{"a total length one short", func(b []byte) {
			for _, g := range gat {
				u32(b, g+8, uint32(len(list)-1)|piecedFlag)
			}
		}},
		{"a total length one long", func(b []byte) {
			for _, g := range gat {
				u32(b, g+8, uint32(len(list)+1)|piecedFlag)
			}
		}},
		{"one piece more than the chain", func(b []byte) {
			for _, g := range gat {
				u32(b, g+len(grec), uint32(len(pieces)+1))
			}
		}},
		{"one piece fewer than the chain", func(b []byte) {
			for _, g := range gat {
				u32(b, g+len(grec), uint32(len(pieces)-1))
			}
		}},
		{"a huge number of pieces", func(b []byte) {
			for _, g := range gat {
				u32(b, g+len(grec), 0xFFFFFFFF)
			}
		}},
		{"a piece's text truncated", func(b []byte) {
			u32(b, pat[mid]+4, uint32(len(pieces[mid])-1))
		}},
		{"a piece's text past the index", func(b []byte) {
			u32(b, pat[mid]+4, 0xFFFFFFF0)
		}},
		{"a piece of another gid", func(b []byte) {
			u32(b, pat[mid], gid+1)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := cache.Open(corrupted(t, orig, tc.mod))
			if err != nil {
				t.Fatalf("open: %v (only the lookup crosses the pieces)", err)
			}
			defer r.Close()
			g1, err1 := r.Group("big")
			g2, err2 := r.GroupByGID(gid)
			for i, e := range []error{err1, err2} {
				if !errors.Is(e, cache.ErrUnavailable) {
					t.Errorf("lookup %d: %v, want unavailable (got %d members)", i, e, len([][]string{g1.Members, g2.Members}[i]))
				}
			}
		})
	}
	// The good file answers the whole list (the patterns above found the
	// real records).
	r, err := cache.Open(good)
	if err != nil {
		t.Fatal(err)
	}
	g, err := r.Group("big")
	r.Close()
	if err != nil || !slices.Equal(g.Members, want) {
		t.Fatalf("the good file: %d members, %v", len(g.Members), err)
	}
	// Versions above 3: the header's user_version (offset 60, big-endian)
	// and the index's own.
	for _, v := range []struct {
		name string
		mod  func(b []byte)
		msg  string
	}{
		{"header user_version 4", func(b []byte) { binary.BigEndian.PutUint32(b[60:], 4) }, "schema version 4"},
		{"index version 4", func(b []byte) { u32(b, hdr+64, 4) }, "4"},
	} {
		r, err := cache.Open(corrupted(t, orig, v.mod))
		if err == nil {
			_, err = r.Group("big")
			r.Close()
		}
		if !errors.Is(err, cache.ErrUnavailable) || !strings.Contains(err.Error(), v.msg) || !strings.Contains(err.Error(), "understands 2 to 3") {
			t.Errorf("%s: %v, want unavailable naming version 4 and what this reader understands", v.name, err)
		}
	}
}

// corrupted writes a copy of the file's bytes orig, changed by mod, to a
// temp file and returns its path.
func corrupted(t *testing.T, orig []byte, mod func([]byte)) string {
	t.Helper()
	b := slices.Clone(orig)
	mod(b)
	path := filepath.Join(t.TempDir(), "bad.db")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
