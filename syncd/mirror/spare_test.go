package mirror

import (
	"os"
	"testing"
	"time"

	"github.com/scimbridge/scimbridge/syncd/commit"
	"github.com/scimbridge/scimbridge/syncd/publish"
	"github.com/scimbridge/scimbridge/syncd/snapshot"
)

// noHistory turns the install seam's history off for one test: a history
// entry links the previous live file, which then may not be rewritten.
func noHistory(t *testing.T) {
	keep := snapshot.HistoryKeep
	snapshot.HistoryKeep = 0
	t.Cleanup(func() { snapshot.HistoryKeep = keep })
}

// Consecutive deltas installed through the spare give the head's file
// (the install checks its SHA-256 against the signed manifest; sameFile
// compares it with the head's), and the spare was really used; a missing
// or damaged sidecar, a spare changed behind its back, a spare younger
// than the grace, or one the history still links: the copy, still right.
func TestMirrorDeltaThroughSpare(t *testing.T) {
	noHistory(t)
	r := newRig(t, "auto")
	r.pub.Deltas = 2
	c0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	r.commit(contents(3000, ""), c0)
	n := r.node(&dirTransport{dir: r.dir})
	n.SpareGrace = time.Nanosecond
	mustPoll(t, n, commit.Committed)
	if _, err := os.Stat(n.sparePath()); err == nil {
		t.Fatal("a spare after a full download (what differs is not known)")
	}
	step := 0
	next := func(wantSpare bool, why string) {
		t.Helper()
		step++
		r.commit(contents(3000, "user"+string(rune('0'+step%10))+"100"), c0.Add(time.Duration(step)*time.Minute))
		res := mustPoll(t, n, commit.Committed)
		sameFile(t, n.Live, r.headCache)
		if res.Spare != wantSpare {
			t.Fatalf("step %d (%s): spare used %v, want %v", step, why, res.Spare, wantSpare)
		}
		if _, err := os.Stat(n.spareStatePath()); err != nil {
			t.Fatalf("step %d: no spare kept after a delta: %v", step, err)
		}
	}
	next(false, "the first delta: no spare yet")
	next(true, "the previous live file")
	next(true, "again")
	next(true, "and again")

	os.Remove(n.spareStatePath())
	next(false, "sidecar missing")
	if _, err := os.Stat(n.spareWorkPath()); err == nil {
		t.Fatal("a work file left behind")
	}
	next(true, "kept again")

	os.WriteFile(n.spareStatePath(), []byte("{not json"), 0o600)
	next(false, "sidecar damaged")

	// The spare changed behind its back (same size): its ctime moved.
	f, err := os.OpenFile(n.sparePath(), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte{0xff}, 5000)
	f.Close()
	next(false, "spare modified")

	n.SpareGrace = time.Hour
	next(false, "spare younger than the grace")
	n.SpareGrace = time.Nanosecond
	next(true, "grace passed")

	// A history entry links the spare's inode: not rewritten (the spare
	// of an install is the live file of two installs before).
	snapshot.HistoryKeep = 10
	next(true, "installed before the history was on")
	next(true, "the same")
	// The kept snapshots keep their bytes.
	es, _ := snapshot.History(n.Live)
	sums := map[string]string{}
	for _, e := range es {
		sums[e.Path], _, _ = publish.HashFile(e.Path)
	}
	next(false, "the history links the spare")
	for p, sum := range sums {
		if got, _, err := publish.HashFile(p); err == nil && got != sum {
			t.Fatalf("history entry %s changed", p)
		}
	}
}
