package snapshot

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// killPair is the two directories the kill test switches between: a
// generated one and the same after every kind of change.
func killPair() (a, b *Contents) {
	a = generated(400, 40)
	b = clone(a)
	for _, k := range changeKinds() {
		k.apply(b)
	}
	return a, b
}

// TestKillHelper is the child of TestKillDuringUpdate: it updates the
// live file from one of killPair to the other, forever, until killed.
func TestKillHelper(t *testing.T) {
	path := os.Getenv("SNAPSHOT_KILL_PATH")
	if path == "" {
		t.Skip("only run by TestKillDuringUpdate")
	}
	a, b := killPair()
	for {
		prev, next := a, b
		if c, _, err := Load(path); err == nil && contentsHash(c) == contentsHash(b) {
			prev, next = b, a
		}
		if _, info, err := UpdateWith(path, prev, next, UpdateOptions{}); err != nil || !info.Incremental {
			t.Fatalf("update: %v (%s)", err, info.Fallback)
		}
	}
}

// kill -9 at any point of an incremental write leaves the live snapshot
// whole: exactly the old or the new contents, readable by the C reader,
// never a mix. 200 kills at random moments of a child that updates the
// file in place in a loop.
func TestKillDuringUpdate(t *testing.T) {
	if os.Getenv("SNAPSHOT_KILL_PATH") != "" {
		t.Skip("child")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "cache.db")
	a, b := killPair()
	if _, err := Write(path, a); err != nil {
		t.Fatal(err)
	}
	ha, hb := contentsHash(a), contentsHash(b)
	seen := map[string]int{}
	deadline := time.Now().Add(3 * time.Minute)
	for run := 0; run < 200 && time.Now().Before(deadline); run++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKillHelper$")
		cmd.Env = append(os.Environ(), "SNAPSHOT_KILL_PATH="+path)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(rand.IntN(400)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		c, _, err := Load(path)
		if err != nil {
			t.Fatalf("run %d: the live snapshot after kill -9: %v", run, err)
		}
		h := contentsHash(c)
		switch h {
		case ha:
			seen["old"]++
		case hb:
			seen["new"]++
		default:
			t.Fatalf("run %d: the live snapshot holds neither contents after kill -9 (a mix)", run)
		}
		want := a
		if h == hb {
			want = b
		}
		m, err := VerifyFile(path)
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		if err := Verify(path, want, m); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		// Temp files of killed writers are never live; the next writer
		// (under the writers' lock) removes them, and nothing else.
		leftovers, _ := filepath.Glob(filepath.Join(dir, ".cache.db.new-*"))
		removed := RemoveStaleTemps(path)
		if removed != len(leftovers) {
			t.Errorf("run %d: %d temp files left by the killed writer, %d removed", run, len(leftovers), removed)
		}
		if rest, _ := filepath.Glob(filepath.Join(dir, ".cache.db.new-*")); len(rest) > 0 {
			t.Errorf("run %d: temp files still there: %v", run, rest)
		}
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("run %d: removing temp files took the live snapshot: %v", run, err)
		}
	}
	t.Logf("after kill -9: old contents %d times, new %d times", seen["old"], seen["new"])
	if seen["old"] == 0 || seen["new"] == 0 {
		t.Errorf("kills never landed on both sides of the rename: %v", seen)
	}
}
