package pipeline

import (
	"math"
	"runtime"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"sync"
)

// MemoryLimitFloor, when above zero, is the smallest soft memory limit
// the daemon sets; after each poll it raises the limit to fit what it now
// holds (FitMemoryLimit). Package main sets it to its default limit
// unless GOMEMLIMIT is set (then the admin's limit stands untouched).
var MemoryLimitFloor int64

// memoryLimitFactor and memoryLimitSlack size the limit from the heap
// still live after a poll (the directory the daemon keeps for the next
// change, the live snapshot's contents, the last explain verdicts).
// A poll that sees one change builds a second copy of about as much
// (the patched directory's records, the validated contents, the index
// of the write) before the old one can go: its live heap peaks near
// twice what is held. A limit under that peak makes the collector run
// back to back (at 100,000 users with the old fixed 200 MB limit, most
// of a 70 s CPU poll was the collector); 2.5 times the held heap leaves
// the peak a quarter of headroom, the slack covers small directories.
const (
	memoryLimitFactor = 2.5
	memoryLimitSlack  = 64 << 20
)

// FitMemoryLimit sets the soft memory limit to fit the heap the process
// holds now (never below MemoryLimitFloor) and returns it; it does
// nothing and returns 0 when MemoryLimitFloor is 0.
func FitMemoryLimit() int64 {
	if MemoryLimitFloor <= 0 {
		return 0
	}
	s := []rtmetrics.Sample{{Name: "/gc/heap/live:bytes"}}
	rtmetrics.Read(s)
	lim := MemoryLimitFloor
	if s[0].Value.Kind() == rtmetrics.KindUint64 {
		held := float64(s[0].Value.Uint64())
		lim = max(lim, int64(math.Min(held*memoryLimitFactor+memoryLimitSlack, math.MaxInt64/2)))
	}
	debug.SetMemoryLimit(lim)
	return lim
}

// FitGrowth raises the soft memory limit for an attempt whose directory
// (was users live, now read) grew: the limit FitMemoryLimit set after
// the last attempt, less its slack, times now/was. FitMemoryLimit sizes
// the limit from the heap held after an attempt, for a next one of the
// same size; a receiver's load grows the directory between bursts (49,000
// to 100,000 users in its last one), and its burst then built twice the
// directory under a limit made for half of it: the collector ran back to
// back, the live heap at the limit (gctrace of the 100,000-user receiver
// bench, Dec 2: 22 collections in 7 s of a whole write, 254 MB live for
// a 255 MB goal). The held heap grows with the directory, so the limit
// does: the same headroom as FitMemoryLimit's for the new size. It does
// nothing without MemoryLimitFloor (the admin's GOMEMLIMIT) or for a
// growth of at most a quarter, within that headroom (and a source's
// records that validation rejects, counted in now, not in was);
// the caller's FitMemoryLimit after the attempt sets it again. It
// returns the limit.
func FitGrowth(was, now int) int64 {
	cur := debug.SetMemoryLimit(-1)
	if MemoryLimitFloor <= 0 || was <= 0 || 4*now <= 5*was || cur >= math.MaxInt64/4 {
		return cur
	}
	lim := int64(math.Min(float64(max(0, cur-memoryLimitSlack))*float64(now)/float64(was)+memoryLimitSlack, math.MaxInt64/4))
	if lim > cur {
		debug.SetMemoryLimit(lim)
		return lim
	}
	return cur
}

// WriteMemoryLimit, when above zero, is the soft memory limit that
// `sync --once` (a full read, no kept state) sets once the directory is
// read, put back when the attempt returns; never above the limit already
// set, and never below writeLimitFactor times the heap live after the
// read, so that a larger directory keeps the limit it had. Into an empty
// cache it holds through the whole write (issue 18: at 100,000 users
// the heap live after the read is 63 MB and peaks at 112 MB while the
// explain record is encoded); into a live cache through the validation
// and the row-by-row comparison with the live snapshot (peak 128 MB
// live at 100,000 users), and is put back before the live snapshot is
// loaded whole when they differ (pipeline/doc.go, recmem12).
var WriteMemoryLimit int64

// writeLimitFactor: the heap live after the read times this is the
// lowest limit lowerForWrite sets (the validation, the record and the
// write peak at 1.8 times it at 100,000 users).
const writeLimitFactor = 2.5

// lowerForWrite sets the write's limit (WriteMemoryLimit) and returns
// what puts the old one back (the first call does; later ones nothing). It collects once to know the heap live
// after the read (about 20 ms of CPU at 100,000 users).
func lowerForWrite() func() {
	if WriteMemoryLimit <= 0 {
		return func() {}
	}
	old := debug.SetMemoryLimit(-1)
	runtime.GC()
	s := []rtmetrics.Sample{{Name: "/gc/heap/live:bytes"}}
	rtmetrics.Read(s)
	lim := WriteMemoryLimit
	if s[0].Value.Kind() == rtmetrics.KindUint64 {
		lim = max(lim, int64(math.Min(float64(s[0].Value.Uint64())*writeLimitFactor, math.MaxInt64/2)))
	}
	if lim >= old {
		return func() {}
	}
	debug.SetMemoryLimit(lim)
	return sync.OnceFunc(func() { debug.SetMemoryLimit(old) })
}
