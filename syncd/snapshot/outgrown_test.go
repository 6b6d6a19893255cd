package snapshot

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// liveGeometry is the geometry of the NSS index of the file at path.
func liveGeometry(t *testing.T, path string) (indexGeometry, int) {
	t.Helper()
	l, err := readLive(path)
	if err != nil {
		t.Fatal(err)
	}
	g, err := geometryOf(l.index, l.pageSize)
	if err != nil {
		t.Fatal(err)
	}
	return g, l.pageSize
}

// The decision from sizes never says outgrown where the layout would
// fit: whenever outgrownBySize says so, laying the index out in the live
// geometry fails with ErrIndexOutgrown too (so the whole write with room
// that follows is the one that followed before). Directories grown by
// steps from 1.05 to 3 times, some with long GECOS fields (records that
// crowd single buckets), and the step where it first says so is near
// the layout's own.
func TestOutgrownBySizeIsALowerBound(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cache.db")
	base := generated(2000, 100)
	if _, err := Write(path, base); err != nil {
		t.Fatal(err)
	}
	g, ps := liveGeometry(t, path)
	said, failed := 0, 0
	firstSaid, firstFailed := 0, 0
	for step := 1; step <= 40; step++ {
		for _, long := range []int{0, 7, 300} {
			next := clone(base)
			seq := 0
			grow(next, len(base.Users)*step/20, &seq)
			if long > 0 {
				for i := range next.Users {
					if i%long == 0 {
						next.Users[i].GECOS = strings.Repeat("x", 900)
					}
				}
			}
			why := outgrownBySize(g, ps, next)
			users, groups := IndexOf(next)
			_, err := buildIndexIn(g, ps, users, groups)
			if why != "" {
				said++
				if firstSaid == 0 && long == 0 {
					firstSaid = len(next.Users)
				}
				if !errors.Is(err, ErrIndexOutgrown) {
					t.Fatalf("%d users (long GECOS every %d): outgrown by sizes (%s), but the layout says %v", len(next.Users), long, why, err)
				}
			}
			if err != nil {
				failed++
				if firstFailed == 0 && long == 0 {
					firstFailed = len(next.Users)
				}
			}
		}
	}
	t.Logf("outgrown by sizes %d times, by the layout %d; first at %d and %d users", said, failed, firstSaid, firstFailed)
	if said == 0 || firstSaid > firstFailed*3/2 {
		t.Errorf("by sizes first at %d users, the layout at %d: the bound is too loose to spare anything", firstSaid, firstFailed)
	}
}

// A directory that doubled since the live file (the receiver's load
// between two bursts) is written whole with room without the in-place
// attempt's diff and layout (the reason says the sizes decided), and the
// file is the one the attempt led to before: the rows, NSS answers and
// the very index blob of a whole write with the room roomFor gives.
func TestOutgrownDecidedBySizes(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cache.db")
	full := generated(4000, 200)
	prev := firstUsers(full, 1900)
	if _, _, err := UpdateWith(path, nil, prev, UpdateOptions{KeepIndex: true}); err != nil {
		t.Fatal(err)
	}
	_, info, err := UpdateWith(path, prev, full, UpdateOptions{KeepIndex: true})
	if err != nil {
		t.Fatal(err)
	}
	if info.Incremental || !strings.Contains(info.Fallback, ErrIndexOutgrown.Error()) || !strings.Contains(info.Fallback, "by their sizes") {
		t.Fatalf("written in place %v, reason %q; want whole, outgrown, decided by the records' sizes", info.Incremental, info.Fallback)
	}
	grown := *full
	grown.indexRoom = roomFor(prev, full)
	want := filepath.Join(dir, "want.db")
	if _, err := write(want, &grown, time.Time{}, false); err != nil {
		t.Fatal(err)
	}
	sameAsWhole(t, "doubled", path, filepath.Join(dir, "full.db"), prev, full)
	a, b := indexBlob(t, path), indexBlob(t, want)
	if string(a) != string(b) {
		t.Fatalf("the NSS index differs from a whole write with room %d (%d and %d bytes)", grown.indexRoom, len(a), len(b))
	}
	// The next commit fits the room in place, as before.
	next := clone(full)
	seq := 0
	grow(next, 500, &seq)
	if _, info, err := UpdateWith(path, full, next, UpdateOptions{KeepIndex: true}); err != nil || !info.Incremental {
		t.Fatalf("the commit after: %v, %s", err, info.Fallback)
	}
}

// indexBlob is the NSS index blob of the file at path.
func indexBlob(t *testing.T, path string) []byte {
	t.Helper()
	l, err := readLive(path)
	if err != nil {
		t.Fatal(err)
	}
	return l.index
}
