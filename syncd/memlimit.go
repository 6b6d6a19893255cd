package main

import (
	"os"
	"runtime/debug"

	"github.com/scimbridge/scimbridge/syncd/pipeline"
)

// defaultMemoryLimit is the soft heap limit syncd starts with unless
// GOMEMLIMIT says otherwise. A full sync of 100,000 users keeps about
// 140 MB live; left to GOGC alone the heap doubles that before
// collecting. The limit is soft: a larger directory makes the collector
// work harder, never fails an allocation.
//
// It is a floor, not a ceiling, for the polling daemon: between polls it
// holds the source's directory (about 160 MB at 100,000 users) and the
// live snapshot's contents, and a poll builds as much again, so a fixed
// 200 MB limit made the collector run back to back on every poll (most
// of 70 s of CPU for one change at 100,000 users). After each poll the
// daemon sets the limit to 2.5 times the heap it still holds
// (pipeline.FitMemoryLimit): the limit follows the directory's size.
const defaultMemoryLimit = 200 << 20

// writeMemoryLimit is the soft limit of `sync --once` once the directory
// is read (pipeline.WriteMemoryLimit; into a live cache until the rows
// are found to differ): into an empty cache the
// validation, the explain record and the whole write keep at most
// 112 MB live at 100,000 users (gctrace, Dec 2), and 150 MiB holds the
// process's peak RSS under 200 MB where 200 MiB let the heap's pages
// reach 237 MB (pipeline/doc.go has the measurements).
const writeMemoryLimit = 150 << 20

func setMemoryLimit() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(defaultMemoryLimit)
		pipeline.MemoryLimitFloor = defaultMemoryLimit
		pipeline.WriteMemoryLimit = writeMemoryLimit
	}
}
