package mirror

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scimbridge/scimbridge/syncd/commit"
	"github.com/scimbridge/scimbridge/syncd/snapshot"
)

// TestBenchDeltaInstall is tests/bench/snapwrite_bench.sh's node row, not
// a test (MIRROR_BENCH_USERS=100000 to run it): a node process installs
// a one-change page delta, with its kept page hashes (page_root check,
// no enumeration) and without them (the whole-file hash and enumeration
// every install made before); CPU and peak RSS of the node's process, and
// of a poll that finds nothing new (the process's own floor).
func TestBenchDeltaInstall(t *testing.T) {
	users, _ := strconv.Atoi(os.Getenv("MIRROR_BENCH_USERS"))
	if users <= 0 {
		t.Skip("set MIRROR_BENCH_USERS (tests/bench/snapwrite_bench.sh)")
	}
	r := newRig(t, "auto")
	r.pub.Deltas = 2
	c0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	cur := contents(users, "")
	r.commit(cur, c0)
	n := r.node(&dirTransport{dir: r.dir})
	mustPoll(t, n, commit.Committed)
	fi, _ := os.Stat(n.Live)
	fmt.Printf("| mode | node CPU ms | node peak RSS MB | bytes fetched |\n|---|---|---|---|\n")
	for i, mode := range []string{"delta, page hashes kept", "delta, whole-file check (before)", "nothing new (floor)"} {
		if i < 2 {
			next := contents(users, fmt.Sprintf("user%04d", 100+i))
			if _, err := snapshot.Update(r.headCache, cur, next); err != nil {
				t.Fatal(err)
			}
			if _, err := r.pub.Publish(context.Background(), r.headCache, c0.Add(time.Duration(i+1)*time.Minute)); err != nil {
				t.Fatal(err)
			}
			cur = next
		}
		if i == 1 {
			os.Remove(n.pagesPath())
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestBenchDeltaInstallChild$")
		cmd.Env = append(os.Environ(), "MIRROR_BENCH_CHILD="+r.dir+"|"+n.Live+"|"+n.StatusPath+"|"+
			hex.EncodeToString(r.key.Public().(ed25519.PublicKey)))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", mode, err, out)
		}
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		// Peak RSS as the child saw it (VmHWM): rusage's maxrss of a
		// child forked with CLONE_VM starts from the parent's.
		var bytes, hwm int64
		if i := strings.Index(string(out), "BENCH "); i >= 0 {
			fmt.Sscanf(string(out[i:]), "BENCH %d %d", &bytes, &hwm)
		}
		fmt.Printf("| %s | %.0f | %.0f | %d |\n", mode, float64(cpu)/1e6, float64(hwm)/1024, bytes)
	}
	fmt.Printf("\n%d users, snapshot %.0f MB.\n", users, float64(fi.Size())/1e6)
}

// TestBenchDeltaInstallChild is the node process of TestBenchDeltaInstall.
func TestBenchDeltaInstallChild(t *testing.T) {
	spec := os.Getenv("MIRROR_BENCH_CHILD")
	if spec == "" {
		t.Skip("only run by TestBenchDeltaInstall")
	}
	var f [4]string
	for i, j := 0, 0; i < 4; i++ {
		k := j
		for k < len(spec) && spec[k] != '|' {
			k++
		}
		f[i], j = spec[j:k], k+1
	}
	pub, _ := hex.DecodeString(f[3])
	n := &Node{T: &dirTransport{dir: f[0]}, Key: ed25519.PublicKey(pub), Live: f[1], StatusPath: f[2], MaxSize: 1 << 30,
		Log: newRig(t, "auto").node(nil).Log}
	res := n.Poll(context.Background())
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	var hwm int64
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		if i := strings.Index(string(b), "VmHWM:"); i >= 0 {
			fmt.Sscanf(string(b[i+len("VmHWM:"):]), "%d", &hwm)
		}
	}
	fmt.Printf("BENCH %d %d\n", res.Bytes, hwm)
}
