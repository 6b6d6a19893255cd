package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
)

// startProfiles, when SYNCD_PPROF names a directory, writes a CPU
// profile of the whole process to DIR/cpu.pprof and, at exit, the
// allocations (DIR/allocs.pprof) and the heap (DIR/heap.pprof). It is how
// the full sync's costs were measured (issue 18: `syncd sync --once` at
// 100,000 users under pprof), kept so the next measurement is the same
// command. The returned stop writes the files; without SYNCD_PPROF both
// do nothing.
func startProfiles() (stop func()) {
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
