package snapshot

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestBenchUpdate is tests/bench/snapwrite_bench.sh's measurement, not a
// test (SNAPSHOT_BENCH=users,... to run it): for each kind of change, the
// pages and bytes a node fetches and the time from the Update call to the
// renamed file, p50/p95 over SNAPSHOT_BENCH_REPS forward changes, side by
// side with a whole Write of the same contents. Prints a markdown table.
func TestBenchUpdate(t *testing.T) {
	spec := os.Getenv("SNAPSHOT_BENCH")
	if spec == "" {
		t.Skip("set SNAPSHOT_BENCH=2000,20000,100000 (tests/bench/snapwrite_bench.sh)")
	}
	reps := 5
	if v, err := strconv.Atoi(os.Getenv("SNAPSHOT_BENCH_REPS")); err == nil && v > 0 {
		reps = v
	}
	var out strings.Builder
	fmt.Fprintf(&out, "| users | change | pages | KiB | Update CPU p50 | Update p50 | Update p95 | CPU p50, index laid out whole (before) | whole Write |\n|---|---|---|---|---|---|---|---|---|\n")
	var breakdown []string
	for _, f := range strings.Split(spec, ",") {
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("SNAPSHOT_BENCH %q: %v", spec, err)
		}
		base := generated(n, n/10)
		dir := t.TempDir()
		path := filepath.Join(dir, "cache.db")
		t0 := time.Now()
		if _, err := Write(path, base); err != nil {
			t.Fatal(err)
		}
		whole := time.Since(t0)
		for _, kind := range changeKinds() {
			var times, cpus, wholeCPU []time.Duration
			phases := map[string]time.Duration{}
			var order []string
			pages := 0
			for range reps {
				before := filepath.Join(dir, "before.db")
				os.Remove(before)
				if err := os.Link(path, before); err != nil {
					t.Fatal(err)
				}
				next := clone(base)
				kind.apply(next)
				t0, c0 := time.Now(), cpuTime()
				_, info, err := UpdateWith(path, base, next, UpdateOptions{})
				times = append(times, time.Since(t0))
				cpus = append(cpus, cpuTime()-c0)
				if err != nil || !info.Incremental {
					t.Fatalf("%d users, %s: %v (%s)", n, kind.name, err, info.Fallback)
				}
				for _, p := range info.Phases {
					if _, ok := phases[p.Name]; !ok {
						order = append(order, p.Name)
					}
					phases[p.Name] += p.Took / time.Duration(reps)
				}
				pages, _ = pagesDiffering(t, before, path, false)
				// Back to base for the next repetition (not timed).
				if _, info, err := UpdateWith(path, next, base, UpdateOptions{}); err != nil || !info.Incremental {
					t.Fatalf("%d users, undo %s: %v (%s)", n, kind.name, err, info.Fallback)
				}
				// The same change with the index laid out whole (the
				// path before patch.go), then back again.
				c0 = cpuTime()
				if _, info, err := UpdateWith(path, base, next, UpdateOptions{WholeIndex: true}); err != nil || !info.Incremental {
					t.Fatalf("%d users, %s (whole index): %v (%s)", n, kind.name, err, info.Fallback)
				}
				wholeCPU = append(wholeCPU, cpuTime()-c0)
				if _, info, err := UpdateWith(path, next, base, UpdateOptions{}); err != nil || !info.Incremental {
					t.Fatalf("%d users, undo %s: %v (%s)", n, kind.name, err, info.Fallback)
				}
			}
			slices.Sort(times)
			slices.Sort(cpus)
			slices.Sort(wholeCPU)
			p95 := times[min(len(times)-1, (len(times)*95+99)/100-1)]
			fmt.Fprintf(&out, "| %d | %s | %d | %d | %.0f ms | %.0f ms | %.0f ms | %.0f ms | %.0f ms |\n", n, kind.name, pages, pages*4,
				ms(cpus[len(cpus)/2]), ms(times[len(times)/2]), ms(p95), ms(wholeCPU[len(wholeCPU)/2]), ms(whole))
			if kind.name == "add member" {
				// The full path's pages for the same change, by table.
				wa, wb := filepath.Join(dir, "whole-a.db"), filepath.Join(dir, "whole-b.db")
				next := clone(base)
				kind.apply(next)
				for p, c := range map[string]*Contents{wa: base, wb: next} {
					if _, err := Write(p, c); err != nil {
						t.Fatal(err)
					}
				}
				n2, by := pagesByTable(t, wa, wb)
				breakdown = append(breakdown, fmt.Sprintf("- %d users, add member by a whole Write instead: %d pages differ (%v)", n, n2, by))
				os.Remove(wa)
				os.Remove(wb)
			}
			if kind.name == "disable" {
				var b strings.Builder
				for _, name := range order {
					fmt.Fprintf(&b, " %s %.0f ms;", name, ms(phases[name]))
				}
				breakdown = append(breakdown, fmt.Sprintf("- %d users, disable, mean per phase:%s", n, b.String()))
			}
		}
	}
	fmt.Print(out.String())
	fmt.Println()
	for _, b := range breakdown {
		fmt.Println(b)
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// cpuTime is this process's user + system CPU so far: on a loaded
// machine the wall time of an update is mostly waiting for a core.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
