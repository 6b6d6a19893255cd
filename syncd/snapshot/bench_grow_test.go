package snapshot

import (
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"
)

// firstUsers is c with its first n users only, groups keeping their
// members among them.
func firstUsers(c *Contents, n int) *Contents {
	p := &Contents{Source: c.Source, Users: append([]User(nil), c.Users[:n]...)}
	in := map[string]bool{}
	for _, u := range p.Users {
		in[u.Name] = true
	}
	for _, g := range c.Groups {
		h := g
		h.Members = nil
		for _, m := range g.Members {
			if in[m] {
				h.Members = append(h.Members, m)
			}
		}
		p.Groups = append(p.Groups, h)
	}
	return p
}

// TestBenchGrownBurst is the receiver's final burst at 100,000 users
// (tail12), not a test (GROW_BENCH=100000,49000 to run it): prev, the
// first users of the generated directory, is written whole as the first
// commit of a load, then the whole directory is committed over it, both
// as the receiver does (KeepIndex). It prints each step's wall and CPU.
func TestBenchGrownBurst(t *testing.T) {
	spec := os.Getenv("GROW_BENCH")
	if spec == "" {
		t.Skip("set GROW_BENCH=100000,49000")
	}
	a, b, _ := strings.Cut(spec, ",")
	n, err1 := strconv.Atoi(a)
	first, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil || first <= 0 || first > n {
		t.Fatalf("GROW_BENCH %q: want USERS,FIRST", spec)
	}
	next := generated(n, n/10)
	prev := firstUsers(next, first)
	path := filepath.Join(t.TempDir(), "cache.db")
	runtime.GC()
	t0, c0 := time.Now(), cpuTime()
	if _, info, err := UpdateWith(path, nil, prev, UpdateOptions{KeepIndex: true}); err != nil {
		t.Fatal(err)
	} else {
		t.Logf("first: %d users %s: %.2f s wall, %.2f s CPU", len(prev.Users), info.Fallback, time.Since(t0).Seconds(), (cpuTime() - c0).Seconds())
	}
	runtime.GC()
	if os.Getenv("GROW_BENCH_LIMIT") != "" {
		// As the receiver after a burst (pipeline.FitMemoryLimit): 2.5
		// times the heap held, plus 64 MiB.
		s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		metrics.Read(s)
		lim := int64(2.5*float64(s[0].Value.Uint64())) + 64<<20
		if v, err := strconv.ParseFloat(os.Getenv("GROW_BENCH_LIMIT"), 64); err == nil && v > 0 {
			lim = int64(float64(lim-64<<20)*v) + 64<<20
		}
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(lim))
		t.Logf("held %d MB, limit %d MB", s[0].Value.Uint64()>>20, lim>>20)
	}
	if f := os.Getenv("GROW_BENCH_PROF"); f != "" {
		out, err := os.Create(f)
		if err != nil {
			t.Fatal(err)
		}
		pprof.StartCPUProfile(out)
		defer pprof.StopCPUProfile()
	}
	t0, c0 = time.Now(), cpuTime()
	_, info, err := UpdateWith(path, prev, next, UpdateOptions{KeepIndex: true})
	if os.Getenv("GROW_BENCH_PROF") != "" {
		pprof.StopCPUProfile()
	}
	if err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(path)
	t.Logf("grown: %d users, in place %v (%s): %.2f s wall, %.2f s CPU, file %d MB", len(next.Users), info.Incremental, info.Fallback,
		time.Since(t0).Seconds(), (cpuTime() - c0).Seconds(), st.Size()>>20)
	if os.Getenv("GROW_BENCH_WHOLE") != "" {
		for _, room := range []int{1, roomFor(prev, next)} {
			p2 := filepath.Join(t.TempDir(), "whole.db")
			c := *next
			c.indexRoom = room
			runtime.GC()
			if f := os.Getenv("GROW_BENCH_PROF"); f != "" {
				out, err := os.Create(f + ".room" + strconv.Itoa(room))
				if err != nil {
					t.Fatal(err)
				}
				pprof.StartCPUProfile(out)
			}
			t0, c0 = time.Now(), cpuTime()
			if _, err := write(p2, &c, time.Time{}, true); err != nil {
				t.Fatal(err)
			}
			pprof.StopCPUProfile()
			st, _ := os.Stat(p2)
			t.Logf("whole, room %d: %.2f s wall, %.2f s CPU, file %d MB", room, time.Since(t0).Seconds(), (cpuTime() - c0).Seconds(), st.Size()>>20)
		}
	}
}
