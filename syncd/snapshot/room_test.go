package snapshot

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// grow adds n new users to c (each in the first group, as the
// receiver's load puts everyone in one), numbered from *seq.
func grow(c *Contents, n int, seq *int) {
	for range n {
		*seq++
		name := fmt.Sprintf("load%d", *seq)
		c.Users = append(c.Users, User{Name: name, UID: uint32(300000 + *seq), GID: uint32(300000 + *seq),
			GECOS: "Load " + name, Home: "/home/" + name, Shell: "/bin/bash", Active: true, SCIMID: "l" + name})
		c.Groups[0].Members = append(c.Groups[0].Members, name)
	}
}

// A directory that grows commit after commit (an identity provider
// pushing its users, committed every max_delay) is written whole once per
// doubling, not on every commit: the write after the directory outgrew
// the live index sizes its buckets with room (index.go, "Room to grow"),
// and the commits after it are updated in place. Every commit's rows and
// NSS answers are those of a whole write of the same contents.
func TestGrowingDirectoryFitsInPlace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cache.db")
	cur := generated(500, 20)
	firstSize := writtenSize(t, path, cur)
	seq, inPlace, steps := 0, 0, 0
	var whole []string
	// 500 users growing by 500 a commit to 8,000: four doublings.
	for len(cur.Users) < 8000 {
		steps++
		next := clone(cur)
		grow(next, 500, &seq)
		_, info, err := UpdateWith(path, cur, next, UpdateOptions{})
		if err != nil {
			t.Fatalf("commit %d (%d users): %v", steps, len(next.Users), err)
		}
		if info.Incremental {
			inPlace++
		} else {
			whole = append(whole, fmt.Sprintf("%d users: %s", len(next.Users), info.Fallback))
		}
		if steps%5 == 0 || len(next.Users) >= 8000 {
			sameAsWhole(t, fmt.Sprintf("%d users", len(next.Users)), path, filepath.Join(dir, "full.db"), cur, next)
		}
		cur = next
	}
	t.Logf("%d commits: %d in place, written whole: %q", steps, inPlace, whole)
	// Growing 16 times: without room a whole write at every doubling
	// (4, measured), with it one for the first write's lack of room and
	// about one per fourfold growth after it.
	if len(whole) > 3 {
		t.Errorf("%d of %d growing commits written whole (want at most 3): %q", len(whole), steps, whole)
	}
	for _, w := range whole {
		if !strings.Contains(w, ErrIndexOutgrown.Error()) {
			t.Errorf("whole write for another reason than growth: %s", w)
		}
	}
	// A first write (no growth seen) has no room: a directory that does
	// not grow keeps the file size it had.
	if again := writtenSize(t, filepath.Join(dir, "again.db"), generated(500, 20)); again != firstSize {
		t.Errorf("a first write is %d bytes, was %d", again, firstSize)
	}
}

// writtenSize writes c whole at path and returns the file's size.
func writtenSize(t *testing.T, path string, c *Contents) int64 {
	t.Helper()
	if _, err := Write(path, c); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// sameAsWhole: the file at path, updated from prev to next, has the rows
// and NSS answers of a whole write of next (at full); what names the
// step in a failure.
func sameAsWhole(t *testing.T, what, path, full string, prev, next *Contents) {
	t.Helper()
	os.Remove(full)
	if _, err := Write(full, next); err != nil {
		t.Fatal(err)
	}
	got, want := tableRows(t, path), tableRows(t, full)
	for table := range want {
		if !slices.Equal(got[table], want[table]) {
			t.Fatalf("%s: table %s differs from a whole write:\n got %d rows %.300v\nwant %d rows %.300v",
				what, table, len(got[table]), got[table], len(want[table]), want[table])
		}
	}
	g, w := nssAnswers(t, path, next, prev), nssAnswers(t, full, next, prev)
	for i := range max(len(g), len(w)) {
		if i >= len(g) || i >= len(w) || g[i] != w[i] {
			t.Fatalf("%s: NSS answers differ from a whole write at %d:\n got %.300v\nwant %.300v", what, i, g[i:], w[i:])
		}
	}
}

// A directory that more than doubled between two commits (a load) gets
// room for that growth, not just twice: the next commit as large again
// is in place.
func TestFastGrowthGetsItsRoom(t *testing.T) {
	if r := roomFor(&Contents{Users: make([]User, 100)}, &Contents{Users: make([]User, 195)}); r != 3 {
		t.Errorf("room after growing 1.95 times: %d, want 3 (half as much again: the receiver load at 39k of 100k)", r)
	}
	if r := roomFor(&Contents{Users: make([]User, 100)}, &Contents{Users: make([]User, 210)}); r != 4 {
		t.Errorf("room after growing 2.1 times: %d, want 4", r)
	}
	if r := roomFor(&Contents{Users: make([]User, 100)}, &Contents{Users: make([]User, 120)}); r != growthRoom {
		t.Errorf("room after growing 1.2 times: %d, want %d", r, growthRoom)
	}
	if r := roomFor(&Contents{Users: make([]User, 100)}, &Contents{Users: make([]User, 1000)}); r != maxGrowthRoom {
		t.Errorf("room after growing 10 times: %d, want %d", r, maxGrowthRoom)
	}
	path := filepath.Join(t.TempDir(), "cache.db")
	cur := generated(1000, 10)
	if _, err := Write(path, cur); err != nil {
		t.Fatal(err)
	}
	seq := 0
	for _, add := range []int{1200, 2500, 2000} { // 2,200 (whole, outgrown), then 4,700 and 6,700
		next := clone(cur)
		grow(next, add, &seq)
		_, info, err := UpdateWith(path, cur, next, UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%d users: in place %v %s", len(next.Users), info.Incremental, info.Fallback)
		if add != 1200 && !info.Incremental {
			t.Errorf("%d users: written whole (%s), want in place with the room of the last rewrite", len(next.Users), info.Fallback)
		}
		cur = next
	}
}

// TestLargeBurstInPlaceIsAWholeWrite: one in-place update that adds more
// users, keys, groups, members and associations than one batch of rows
// carries (insertBatch: full batches and a rest), and replaces the keys
// of more than a batch of users, leaves the rows and NSS answers of a
// whole write of the same contents.
func TestLargeBurstInPlaceIsAWholeWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cache.db")
	cur := generated(300, 20)
	seq := 0
	room := clone(cur)
	room.indexRoom = maxGrowthRoom
	if _, err := write(path, room, time.Time{}, false); err != nil {
		t.Fatal(err)
	}
	next := clone(cur)
	grow(next, 3*batchRows+17, &seq)
	for i := len(cur.Users); i < len(next.Users); i++ {
		u := &next.Users[i]
		u.SSHKeys = []string{fmt.Sprintf("ssh-ed25519 AAAA%d a", i), fmt.Sprintf("ssh-ed25519 BBBB%d b", i)}
		next.Groups = append(next.Groups, Group{Name: u.Name + "-g", GID: u.GID, SCIMID: "g" + u.Name, Members: []string{u.Name}})
		next.Associations = append(next.Associations, Association{User: u.Name, Account: "acct", QOS: []string{"normal"}, IsDefault: true})
	}
	for i := range min(len(cur.Users), batchRows+5) {
		next.Users[i].SSHKeys = append(next.Users[i].SSHKeys, fmt.Sprintf("ssh-ed25519 CCCC%d c", i))
	}
	_, info, err := UpdateWith(path, cur, next, UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !info.Incremental {
		t.Fatalf("written whole: %s", info.Fallback)
	}
	sameAsWhole(t, "large burst", path, filepath.Join(dir, "full.db"), cur, next)
}
