package main

import (
	"os"
	"runtime/debug"
)

// defaultMemoryLimit is the soft heap limit syncd sets unless GOMEMLIMIT
// says otherwise. A full sync of 100,000 users keeps about 140 MB live;
// left to GOGC alone the heap doubles that before collecting. The limit
// is soft: a larger directory makes the collector work harder, never
// fails an allocation.
const defaultMemoryLimit = 200 << 20

func setMemoryLimit() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(defaultMemoryLimit)
	}
}
