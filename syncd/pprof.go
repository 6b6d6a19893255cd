package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/scimbridge/scimbridge/syncd/pipeline"
	"github.com/scimbridge/scimbridge/syncd/snapshot"
)

// startProfiles, when SYNCD_PPROF names a directory, writes a CPU
// profile of the whole process to DIR/cpu.pprof and, at exit, the
// allocations (DIR/allocs.pprof) and the heap (DIR/heap.pprof). It is how
// the full sync's costs were measured (issue 18: `syncd sync --once` at
// 100,000 users under pprof), kept so the next measurement is the same
// command. The returned stop writes the files; without SYNCD_PPROF both
// do nothing. At the whole write's stages (snapshot.Stage) it also writes
// DIR/heap-STAGE.pprof (after a collection: what is live there) and
// appends the process's VmRSS, RssAnon, RssFile and VmHWM, read before
// that collection, to DIR/stages.txt.
func startProfiles() (stop func()) {
	startStageClock()
	dir := os.Getenv("SYNCD_PPROF")
	if dir == "" {
		return func() {}
	}
	f, err := os.Create(filepath.Join(dir, "cpu.pprof"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "syncd: SYNCD_PPROF: %v (set SYNCD_PPROF to a writable directory)\n", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintf(os.Stderr, "syncd: SYNCD_PPROF: %v\n", err)
		f.Close()
		return func() {}
	}
	clock := snapshot.Stage
	snapshot.Stage = func(name string) {
		if clock != nil {
			clock(name)
		}
		profileStage(dir, name)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
		for _, name := range []string{"allocs", "heap"} {
			if out, err := os.Create(filepath.Join(dir, name+".pprof")); err == nil {
				if name == "heap" {
					runtime.GC()
				}
				pprof.Lookup(name).WriteTo(out, 0)
				out.Close()
			}
		}
	}
}

// profileStage records the process's memory at a stage of the write
// (startProfiles).
func profileStage(dir, name string) {
	var mem []string
	if f, err := os.Open("/proc/self/status"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			for _, k := range []string{"VmHWM:", "VmRSS:", "RssAnon:", "RssFile:"} {
				if v, ok := strings.CutPrefix(sc.Text(), k); ok {
					mem = append(mem, k+strings.Join(strings.Fields(v), ""))
				}
			}
		}
		f.Close()
	}
	if f, err := os.OpenFile(filepath.Join(dir, "stages.txt"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644); err == nil {
		fmt.Fprintln(f, name, strings.Join(mem, " "))
		f.Close()
	}
	if out, err := os.Create(filepath.Join(dir, "heap-"+name+".pprof")); err == nil {
		runtime.GC()
		pprof.Lookup("heap").WriteTo(out, 0)
		out.Close()
	}
}

// startStageClock, when SYNCD_STAGES names a file, appends to it at each
// stage of a full sync (snapshot.Stage) the wall time since the process
// started and the process's CPU time, in seconds, with no collection or
// profile taken (SYNCD_PPROF's stages collect, which moves the times):
// how the full sync's wall time was split by phase (issue 18, Dec 3).
func startStageClock() {
	path := os.Getenv("SYNCD_STAGES")
	if path == "" {
		return
	}
	t0 := time.Now()
	snapshot.Stage = func(name string) {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return
		}
		fmt.Fprintf(f, "%s %.3f %.3f\n", name, time.Since(t0).Seconds(), pipeline.ProcessCPU().Seconds())
		f.Close()
	}
}
