package snapshot

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// liveBlob is the NSS index of the file at path, read from its pages.
func liveBlob(t *testing.T, path string) []byte {
	t.Helper()
	l, err := readLiveFromPages(path)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func readLiveFromPages(path string) ([]byte, error) {
	dropLiveIndex()
	l, err := readLive(path)
	return l.index, err
}

// TestKeptIndexIsTheFiles: after each in-place update the blob kept in
// memory is, byte for byte, the index of the file installed, the next
// update uses it, and a kept blob that differs from the file where the
// samples look is refused (the file is read) without changing what the
// update writes.
func TestKeptIndexIsTheFiles(t *testing.T) {
	r := rand.New(rand.NewPCG(18, 32))
	path := filepath.Join(t.TempDir(), "cache.db")
	cur := generated(600, 60)
	if _, err := Write(path, cur); err != nil {
		t.Fatal(err)
	}
	seq := 0
	liveIndex.Lock()
	used0 := liveIndex.used
	liveIndex.Unlock()
	for round := range 12 {
		next := clone(cur)
		randomChange(r, next, &seq)
		if round == 8 {
			// A kept blob that is not the file's: its first page differs.
			liveIndex.Lock()
			if liveIndex.blob != nil {
				liveIndex.blob = bytes.Clone(liveIndex.blob)
				liveIndex.blob[len(liveIndex.blob)-1] ^= 0xff
			}
			liveIndex.Unlock()
		}
		_, info, err := UpdateWith(path, cur, next, UpdateOptions{})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if !info.Incremental {
			t.Fatalf("round %d: written whole: %s", round, info.Fallback)
		}
		liveIndex.Lock()
		kept := liveIndex.blob
		liveIndex.Unlock()
		if want := liveBlob(t, path); !bytes.Equal(kept, want) {
			t.Fatalf("round %d: the kept index (%d bytes) is not the file's (%d bytes)", round, len(kept), len(want))
		}
		// liveBlob dropped it: keep it again, as Update left it.
		st, ok := statFile(path)
		if !ok {
			t.Fatal("stat")
		}
		liveIndex.Lock()
		liveIndex.blob, liveIndex.id = kept, st
		liveIndex.Unlock()
		sameAsWhole(t, "round", path, filepath.Join(t.TempDir(), "full.db"), cur, next)
		cur = next
	}
	liveIndex.Lock()
	used := liveIndex.used - used0
	liveIndex.Unlock()
	if used != 10 {
		t.Fatalf("the kept index stood for the file in %d of the 11 updates after the first; want 10 (the tampered one refused)", used)
	}
}

// newIndex.span is the patched blob's bytes over any range (chunks laid
// over the base, across chunk boundaries), and flatten makes the base
// that blob.
func TestNewIndexSpan(t *testing.T) {
	r := rand.New(rand.NewPCG(18, 33))
	base := make([]byte, 5000)
	for i := range base {
		base[i] = byte(r.Uint32())
	}
	x := &newIndex{base: bytes.Clone(base), chunks: map[int][]byte{}, h: 100, c: 60}
	want := bytes.Clone(base)
	for range 20 {
		at := 100 + r.IntN(80)*60
		ch := make([]byte, 60)
		for i := range ch {
			ch[i] = byte(r.Uint32())
		}
		x.chunks[at] = ch
		copy(want[at:], ch)
	}
	for range 2000 {
		lo := r.IntN(len(base))
		hi := lo + r.IntN(len(base)-lo+1)
		if got := x.span(lo, hi); !bytes.Equal(got, want[lo:hi]) {
			t.Fatalf("span(%d, %d) differs", lo, hi)
		}
	}
	if !bytes.Equal(x.base, base) {
		t.Fatal("span changed the base (the live blob)")
	}
	if got := x.flatten(); !bytes.Equal(got, want) {
		t.Fatal("flatten is not the patched blob")
	}
}

// A user in so many groups that the by-name record is kept outside its
// bucket is disabled, renamed in GECOS, and given one more and one fewer
// group in place, the NSS index patched (the record rewritten in its own
// chunks), not laid out again; every answer is a whole write's.
func TestLargeRecordPatchedInPlace(t *testing.T) {
	dir := t.TempDir()
	path, full := filepath.Join(dir, "cache.db"), filepath.Join(dir, "full.db")
	cur := generated(600, 60)
	big := cur.Users[len(cur.Users)/2].Name
	for k := range 400 {
		cur.Groups = append(cur.Groups, Group{Name: fmt.Sprintf("many%03d", k), GID: uint32(700000 + k), Members: []string{big}})
	}
	if _, err := Write(path, cur); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		what   string
		change func(c *Contents, u *User)
	}{
		{"disable", func(c *Contents, u *User) { u.Active = false }},
		{"enable", func(c *Contents, u *User) { u.Active = true }},
		{"gecos", func(c *Contents, u *User) { u.GECOS += " (on leave)" }},
		{"one more group", func(c *Contents, u *User) {
			c.Groups = append(c.Groups, Group{Name: "many-more", GID: 799999, Members: []string{big}})
		}},
		{"one fewer group", func(c *Contents, u *User) { c.Groups = c.Groups[:len(c.Groups)-2] }},
	}
	for _, st := range steps {
		next := clone(cur)
		i := slices.IndexFunc(next.Users, func(u User) bool { return u.Name == big })
		st.change(next, &next.Users[i])
		_, info, err := UpdateWith(path, cur, next, UpdateOptions{})
		if err != nil {
			t.Fatalf("%s: %v", st.what, err)
		}
		if !info.Incremental || info.IndexLayout != "patched" {
			t.Fatalf("%s: in place %v (%s), index %q", st.what, info.Incremental, info.Fallback, info.IndexLayout)
		}
		sameAsWhole(t, st.what, path, full, cur, next)
		cur = next
	}
}

// Users whose records crowd their buckets (long GECOS: the whole layout
// moved the largest to the packed area) are disabled and enabled one
// after another: each change patches the index, the packed record
// rewritten where it is instead of put back into a bucket it no longer
// fits; every answer is a whole write's. (The disable of a user whose
// by-uid entry was packed laid the whole index out again at 100,000
// users: 0.25 s more CPU.)
func TestPackedRecordPatchedInPlace(t *testing.T) {
	dir := t.TempDir()
	path, full := filepath.Join(dir, "cache.db"), filepath.Join(dir, "full.db")
	cur := generated(600, 20)
	for i := range cur.Users {
		cur.Users[i].GECOS = strings.Repeat(string(rune('a'+i%26)), 850+i%120)
	}
	if _, err := Write(path, cur); err != nil {
		t.Fatal(err)
	}
	for k := range 60 {
		next := clone(cur)
		u := &next.Users[(k*37)%len(next.Users)]
		u.Active = !u.Active
		_, info, err := UpdateWith(path, cur, next, UpdateOptions{})
		if err != nil {
			t.Fatalf("change %d: %v", k, err)
		}
		if !info.Incremental || info.IndexLayout != "patched" {
			t.Fatalf("change %d (%s): in place %v (%s), index %q", k, u.Name, info.Incremental, info.Fallback, info.IndexLayout)
		}
		if k%30 == 0 {
			sameAsWhole(t, fmt.Sprint("change ", k), path, full, cur, next)
		}
		cur = next
	}
	sameAsWhole(t, "last", path, full, cur, cur)
}

// TestWholeWriteKeepsItsIndex: with KeepIndex, a whole write made by
// Update (the first write, and the one after the directory outgrew the
// live index) keeps the blob it wrote, byte for byte the file's, and the
// next in-place update uses it instead of reading the file's pages;
// without KeepIndex (sync --once, Write) nothing is kept. The files are
// a whole build's either way.
func TestWholeWriteKeepsItsIndex(t *testing.T) {
	usedNow := func() int {
		liveIndex.Lock()
		defer liveIndex.Unlock()
		return liveIndex.used
	}
	keptNow := func() []byte {
		liveIndex.Lock()
		defer liveIndex.Unlock()
		return liveIndex.blob
	}
	for _, keep := range []bool{true, false} {
		dir := t.TempDir()
		path := filepath.Join(dir, "cache.db")
		dropLiveIndex()
		seq := 0
		cur := generated(400, 20)
		opt := UpdateOptions{KeepIndex: keep}
		if _, info, err := UpdateWith(path, nil, cur, opt); err != nil || info.Incremental {
			t.Fatalf("keep %v: first write: %v %+v", keep, err, info)
		}
		steps := []struct {
			add   int
			whole bool
		}{{1600, true}, {3, false}, {2, false}}
		for i, st := range steps {
			next := clone(cur)
			grow(next, st.add, &seq)
			kept, used := keptNow(), usedNow()
			_, info, err := UpdateWith(path, cur, next, opt)
			if err != nil {
				t.Fatalf("keep %v step %d: %v", keep, i, err)
			}
			if info.Incremental == st.whole {
				t.Fatalf("keep %v step %d: in place %v (%s), want %v", keep, i, info.Incremental, info.Fallback, !st.whole)
			}
			if st.whole && !strings.Contains(info.Fallback, ErrIndexOutgrown.Error()) {
				t.Fatalf("keep %v step %d: whole for another reason: %s", keep, i, info.Fallback)
			}
			if !st.whole {
				// The update after a whole write used a kept blob only
				// when the whole write kept one.
				if got := usedNow() - used; (got == 1) != (keep || i > 1) {
					t.Errorf("keep %v step %d: kept blob used %d times (kept before: %v)", keep, i, got, kept != nil)
				}
			}
			if st.whole {
				k := keptNow()
				if !keep && k != nil {
					t.Errorf("step %d: a whole write without KeepIndex kept a blob", i)
				}
				if keep {
					want := liveBlob(t, path) // drops it: keep it again, as Update left it
					if !bytes.Equal(k, want) {
						t.Fatalf("step %d: the kept index (%d bytes) is not the file's (%d bytes)", i, len(k), len(want))
					}
					id, ok := statFile(path)
					if !ok {
						t.Fatal("stat")
					}
					m, err := ReadMeta(path)
					if err != nil {
						t.Fatal(err)
					}
					d, _ := StoredDigest(path)
					keepLiveIndex(path, m.Serial, d, k)
					if now, _ := statFile(path); now != id {
						t.Fatal("the file changed")
					}
				}
			}
			sameAsWhole(t, fmt.Sprintf("keep %v step %d", keep, i), path, filepath.Join(dir, "full.db"), cur, next)
			cur = next
		}
	}
}
