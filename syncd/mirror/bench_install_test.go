package mirror

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
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
// every install made before); then polls that find nothing new, with the
// live file's hash kept in the state file (what a `syncd mirror --once`
// timer pays) and without it (before). Two pairs of columns: the whole
// node process (a child test binary: start, the poll, exit; rusage of the
// child, its VmHWM), and the poll alone inside it (RUSAGE_SELF before and
// after Node.Poll; VmHWM reset through clear_refs just before, so the peak
// is the poll's, runtime and binary included, and the growth over the RSS
// before). A node's `syncd run` daemon pays only the poll's columns. The
// second delta goes through the spare (spare.go): with the default
// history the previous live file's entry became a reverse delta
// (snapshot/reverse.go), with MIRROR_BENCH_HISTORY=0 there is none (the
// history off in both processes); before reverse deltas, the default
// history kept the previous file and the row was the copy again.
func TestBenchDeltaInstall(t *testing.T) {
	users, _ := strconv.Atoi(os.Getenv("MIRROR_BENCH_USERS"))
	if users <= 0 {
		t.Skip("set MIRROR_BENCH_USERS (tests/bench/snapwrite_bench.sh)")
	}
	if os.Getenv("MIRROR_BENCH_HISTORY") == "0" {
		// No history entry links the previous live file: the spare
		// (spare.go) may be rewritten.
		noHistory(t)
	}
	r := newRig(t, "auto")
	r.pub.Deltas = 2
	c0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	cur := contents(users, "")
	r.commit(cur, c0)
	n := r.node(&dirTransport{dir: r.dir})
	mustPoll(t, n, commit.Committed)
	fi, _ := os.Stat(n.Live)
	fmt.Printf("| mode | process CPU ms | process peak RSS MB | poll CPU ms | poll peak RSS MB | poll RSS growth MB | bytes fetched | spare |\n|---|---|---|---|---|---|---|---|\n")
	for i, mode := range []string{"delta, page hashes kept, copy of the live file", "delta, page hashes kept, spare when usable", "delta, whole-file check (before)", "nothing new, live hash kept", "nothing new, live file hashed (before)"} {
		if i < 3 {
			next := contents(users, fmt.Sprintf("user%04d", 100+i))
			if _, err := snapshot.Update(r.headCache, cur, next); err != nil {
				t.Fatal(err)
			}
			if _, err := r.pub.Publish(context.Background(), r.headCache, c0.Add(time.Duration(i+1)*time.Minute)); err != nil {
				t.Fatal(err)
			}
			cur = next
		}
		if i == 0 || i == 2 {
			n.dropSpare() // the copy, as before
		}
		if i == 1 {
			time.Sleep(spareGrace)
		}
		if i == 2 {
			os.Remove(n.pagesPath())
		}
		if i == 4 {
			forgetLiveHash(t, n)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestBenchDeltaInstallChild$")
		if out := os.Getenv("MIRROR_BENCH_PERF"); out != "" {
			// A profile of each node process, kernel included (the copy
			// and fsync of the result are system time): perf record.
			cmd = exec.Command("perf", "record", "-q", "-F", "20000", "-g", "-o", fmt.Sprintf("%s.%d", out, i), "--",
				os.Args[0], "-test.run=^TestBenchDeltaInstallChild$")
		}
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
		var bytes, hwmStart, hwmPoll, rssBefore, pollCPU int64
		var outcome string
		var spared bool
		if i := strings.Index(string(out), "BENCH "); i >= 0 {
			fmt.Sscanf(string(out[i:]), "BENCH %d %d %d %d %d %s %t", &bytes, &hwmStart, &hwmPoll, &rssBefore, &pollCPU, &outcome, &spared)
		}
		if want := map[bool]string{true: commit.Committed, false: commit.Unchanged}[i < 3]; outcome != want {
			t.Fatalf("%s: the node's poll was %q, not %q\n%s", mode, outcome, want, out)
		}
		mb := func(kb int64) float64 { return float64(kb) / 1024 }
		fmt.Printf("| %s | %.0f | %.0f | %.1f | %.0f | %.1f | %d | %v |\n", mode, float64(cpu)/1e6, mb(max(hwmStart, hwmPoll)),
			float64(pollCPU)/1e6, mb(hwmPoll), mb(hwmPoll-rssBefore), bytes, spared)
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
	if os.Getenv("MIRROR_BENCH_HISTORY") == "0" {
		snapshot.HistoryKeep = 0
	}
	hwmStart := procStatus("VmHWM:")
	// "5" resets VmHWM to the current RSS (proc(5), clear_refs).
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Fatalf("reset the peak RSS: %v", err)
	}
	rssBefore := procStatus("VmRSS:")
	cpuBefore := selfCPU()
	res := n.Poll(context.Background())
	pollCPU := selfCPU() - cpuBefore
	hwmPoll := procStatus("VmHWM:")
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	fmt.Printf("BENCH %d %d %d %d %d %s %t\n", res.Bytes, hwmStart, hwmPoll, rssBefore, pollCPU.Nanoseconds(), res.Outcome, res.Spare)
}

// procStatus is a kB field of /proc/self/status.
func procStatus(field string) int64 {
	var kb int64
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		if i := strings.Index(string(b), field); i >= 0 {
			fmt.Sscanf(string(b[i+len(field):]), "%d", &kb)
		}
	}
	return kb
}

// selfCPU is this process's user and system CPU so far (all threads).
func selfCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// forgetLiveHash drops the live file's hash from n's state file: the next
// process hashes the live file, as every poll of a new process did before.
func forgetLiveHash(t *testing.T, n *Node) {
	a := n.accepted()
	if a == nil || a.Live == nil {
		t.Fatal("the state file keeps no hash of the live file")
	}
	a.Live = nil
	b, _ := json.Marshal(a)
	if err := os.WriteFile(n.statePath(), b, 0o644); err != nil {
		t.Fatal(err)
	}
}
