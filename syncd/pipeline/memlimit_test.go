package pipeline

import (
	"runtime/debug"
	"testing"
)

// A commit whose directory doubled gets a soft limit for the doubled
// directory: the last fit's limit, less its slack, twice over. Without
// growth, a quarter's, or with the admin's GOMEMLIMIT (no floor), it
// stays.
func TestFitGrowth(t *testing.T) {
	floor := MemoryLimitFloor
	defer func() { MemoryLimitFloor = floor }()
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	MemoryLimitFloor = 200 << 20
	debug.SetMemoryLimit(300 << 20)
	was, now := 49000.0, 100000.0
	if got, want := FitGrowth(int(was), int(now)), int64(float64(300<<20-memoryLimitSlack)*now/was)+memoryLimitSlack; got != want || debug.SetMemoryLimit(-1) != want {
		t.Errorf("49,000 -> 100,000 records: limit %d MB, want %d MB", got>>20, want>>20)
	}
	debug.SetMemoryLimit(300 << 20)
	if got := FitGrowth(100000, 100000); got != 300<<20 || debug.SetMemoryLimit(-1) != 300<<20 {
		t.Errorf("no growth: limit %d MB, want 300 MB", got>>20)
	}
	if got := FitGrowth(100000, 125000); got != 300<<20 || debug.SetMemoryLimit(-1) != 300<<20 {
		t.Errorf("a quarter more (within the limit's headroom): limit %d MB, want 300 MB", got>>20)
	}
	if got := FitGrowth(100000, 60000); got != 300<<20 {
		t.Errorf("a smaller directory: limit %d MB, want 300 MB", got>>20)
	}
	MemoryLimitFloor = 0
	if got := FitGrowth(1000, 100000); got != 300<<20 || debug.SetMemoryLimit(-1) != 300<<20 {
		t.Errorf("GOMEMLIMIT set by the admin: limit %d MB, want it untouched", got>>20)
	}
}
