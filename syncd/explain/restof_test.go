package explain

import (
	"bytes"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/scimbridge/scimbridge/syncd/source"
)

// sync --once encodes its record as each user and group is made, and
// keeps the bytes in an unnamed file through the write (EncodeRestOf,
// issue 18): the file it finishes is the one EncodeRest(Build(...))
// finishes, json.Encoder's text of Build's record, over directories of
// every shape the world makes (rejected, filtered and published users,
// groups rejected or with dropped members, repeated ids, no users or no
// groups), spilled or not.
func TestEncodeRestOfIsBuilds(t *testing.T) {
	defer func(n int) { restChunk = n }(restChunk)
	restChunk = 8 << 10 // several chunks, so the file takes more than one
	r := rand.New(rand.NewPCG(18, 10))
	at := time.Unix(1_800_000_000, 0).UTC()
	spilled := 0
	for round := range 40 {
		w := newWorld(r, 50+r.IntN(700), 1+r.IntN(60))
		for range r.IntN(20) {
			w.change()
		}
		switch round % 8 {
		case 1: // a repeated id
			if len(w.dir.Users) > 1 {
				w.dir.Users = append(w.dir.Users, w.dir.Users[r.IntN(len(w.dir.Users))])
			}
		case 2:
			w.dir.Groups = nil
		case 3:
			w.dir = &source.Directory{Groups: w.dir.Groups}
		}
		res := w.result()
		want, err := EncodeRest(Build(0, "test", w.dir, res))
		if err != nil {
			t.Fatal(err)
		}
		wz, err := want.Finish(int64(round), at)
		if err != nil {
			t.Fatal(err)
		}
		dir := ""
		if round%2 == 0 {
			dir = t.TempDir()
		}
		got, err := EncodeRestOf("test", w.dir, res, dir)
		if err != nil {
			t.Fatal(err)
		}
		if got.Spilled() != (dir != "") {
			t.Fatalf("round %d: spilled %v into %q", round, got.Spilled(), dir)
		}
		if got.Spilled() {
			spilled++
			if names, _ := os.ReadDir(dir); len(names) != 0 {
				t.Fatalf("round %d: the spilled record has a name in %s: %v", round, dir, names)
			}
		}
		gz, err := got.Finish(int64(round), at)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(gz, wz) {
			t.Fatalf("round %d: EncodeRestOf's file (%d bytes) is not EncodeRest(Build)'s (%d bytes)", round, len(gz), len(wz))
		}
		rec := Build(int64(round), "test", w.dir, res)
		rec.WrittenAt = at
		if text, want := gunzip(t, gz), encoders(t, rec); !bytes.Equal(text, want) {
			t.Fatalf("round %d: the record differs from json.Encoder's text of Build's", round)
		}
	}
	if spilled == 0 {
		t.Fatal("no record was spilled: the test does not check the file")
	}
}
