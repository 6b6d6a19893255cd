package main

import (
	"context"
	"runtime/debug"
	"testing"

	"github.com/scimbridge/scimbridge/syncd/pipeline"
	"github.com/scimbridge/scimbridge/tests/scimserver"
)

// A commit of the daemon or the receiver (kept live contents) whose
// directory grew fourfold since the live snapshot runs under a soft
// memory limit scaled by that growth (pipeline.FitGrowth), not under the
// one fitted to the smaller directory; a commit that did not grow keeps
// the limit it had.
func TestCommitLimitFollowsGrowth(t *testing.T) {
	floor := pipeline.MemoryLimitFloor
	defer func() { pipeline.MemoryLimitFloor = floor }()
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	e := newEnv(t, 50, 5, "")
	var keep pipeline.LiveKeep
	ctx := context.Background()
	first, err := e.syncer(t).Once(ctx, pipeline.Opts{Live: &keep})
	if err != nil || !first.Wrote {
		t.Fatalf("first commit: %v", err)
	}
	was := len(keep.Contents.Users)
	pipeline.MemoryLimitFloor = 200 << 20
	const lim = 300 << 20
	debug.SetMemoryLimit(lim)
	if err := e.srv.Load(scimserver.Generate(200, 5, 3)); err != nil {
		t.Fatal(err)
	}
	out, err := e.syncer(t).Once(ctx, pipeline.Opts{Live: &keep, Force: true})
	if err != nil || !out.Wrote {
		t.Fatalf("grown commit: %v", err)
	}
	now := 200 // read from the source (validation may reject some)
	want := float64(lim-(64<<20))*float64(now)/float64(was) + 64<<20
	if got := float64(debug.SetMemoryLimit(-1)); got < want*0.99 || got > want*1.01 {
		t.Errorf("%d -> %d users: limit %.0f MB, want %.0f MB", was, now, got/(1<<20), want/(1<<20))
	}
	debug.SetMemoryLimit(lim)
	if _, err := e.syncer(t).Once(ctx, pipeline.Opts{Live: &keep, Force: true}); err != nil {
		t.Fatal(err)
	}
	if got := debug.SetMemoryLimit(-1); got != lim {
		t.Errorf("no growth: limit %d MB, want 300 MB", got>>20)
	}
}
