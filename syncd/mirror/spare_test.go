package mirror

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"syscall"
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

// TestSpareKillHelper is the child of TestMirrorKillDuringSpareInstall:
// one node poll through the spare, until killed.
func TestSpareKillHelper(t *testing.T) {
	spec := os.Getenv("MIRROR_KILL_CHILD")
	if spec == "" {
		t.Skip("only run by TestMirrorKillDuringSpareInstall")
	}
	snapshot.HistoryKeep = 0
	f := strings.Split(spec, "|")
	if len(f) != 3 {
		t.Fatalf("MIRROR_KILL_CHILD %q", spec)
	}
	dir, live := f[0], f[1]
	pub, _ := hex.DecodeString(f[2])
	n := &Node{T: &dirTransport{dir: dir}, Key: ed25519.PublicKey(pub), Live: live, StatusPath: live + ".status",
		MaxSize: 1 << 30, SpareGrace: time.Nanosecond, Log: newRig(t, "auto").node(nil).Log}
	n.Poll(context.Background())
}

// kill -9 at any moment of a delta install through the spare leaves the
// live file one of the head's snapshots, and the next poll installs the
// head's file (a half-written spare is never used).
func TestMirrorKillDuringSpareInstall(t *testing.T) {
	if os.Getenv("MIRROR_KILL_CHILD") != "" {
		t.Skip("child")
	}
	noHistory(t)
	r := newRig(t, "auto")
	r.pub.Deltas = 2
	c0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	sums := map[string]bool{r.commit(contents(3000, ""), c0).SHA256: true}
	n := r.node(&dirTransport{dir: r.dir})
	n.SpareGrace = time.Nanosecond
	mustPoll(t, n, commit.Committed)
	spared := 0
	for run := 1; run <= 40; run++ {
		sums[r.commit(contents(3000, fmt.Sprintf("user%04d", run)), c0.Add(time.Duration(run)*time.Minute)).SHA256] = true
		cmd := exec.Command(os.Args[0], "-test.run=^TestSpareKillHelper$")
		cmd.Env = append(os.Environ(), "MIRROR_KILL_CHILD="+r.dir+"|"+n.Live+"|"+hex.EncodeToString(r.key.Public().(ed25519.PublicKey)))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(mrand.IntN(100)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		sum, _, err := publish.HashFile(n.Live)
		if err != nil || !sums[sum] {
			t.Fatalf("run %d: after kill -9 the live file is no snapshot of the head (%v)", run, err)
		}
		if _, err := snapshot.VerifyFile(n.Live); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		// The next poll (a new node process) installs the head's file.
		n2 := r.node(&dirTransport{dir: r.dir})
		n2.Live, n2.SpareGrace = n.Live, time.Nanosecond
		res := n2.Poll(context.Background())
		if res.Err != nil {
			t.Fatalf("run %d: %v", run, res.Err)
		}
		sameFile(t, n.Live, r.headCache)
		if res.Spare {
			spared++
		}
	}
	if spared == 0 {
		t.Fatal("no poll after a kill went through the spare")
	}
	t.Logf("%d of 40 polls after a kill went through the spare", spared)
}
