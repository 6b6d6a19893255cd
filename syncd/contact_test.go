package main

import (
	"context"
	"testing"
	"time"

	"github.com/scimbridge/scimbridge/syncd/commit"
	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/metrics"
	"github.com/scimbridge/scimbridge/syncd/pipeline"
	"github.com/scimbridge/scimbridge/syncd/snapshot"
	"github.com/scimbridge/scimbridge/tests/scimserver"
)

// Freshness is the time of the last successful contact with the source,
// kept in the live snapshot's mtime: a poll that changes nothing (full
// read or cheap change check) still moves it; a failed poll does not.
func TestFreshnessFollowsSourceContact(t *testing.T) {
	e := newEnv(t, 50, 5, "")
	ctx := context.Background()
	before := time.Now()
	if _, err := e.syncer(t).Once(ctx, pipeline.Opts{}); err != nil {
		t.Fatal(err)
	}
	fresh := func() time.Time {
		t.Helper()
		f, err := snapshot.Freshness(e.cache)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	st := e.statusFile(t)
	if f := fresh(); f.Before(before.Add(-time.Second)) || !f.Equal(st.LastSourceContact) {
		t.Errorf("after the first sync: mtime %v, status contact %v, want the contact time (>= %v)", f, st.LastSourceContact, before)
	}

	// An old mtime (a quiet hour), then a full read that changes nothing.
	old := time.Now().Add(-2 * time.Hour)
	if err := snapshot.Touch(e.cache, old); err != nil {
		t.Fatal(err)
	}
	serial := e.meta(t).Serial
	before = time.Now()
	out, err := e.syncer(t).Once(ctx, pipeline.Opts{})
	if err != nil || out.Result != commit.Unchanged || e.meta(t).Serial != serial {
		t.Fatalf("unchanged sync: %v %v", out.Result, err)
	}
	if f := fresh(); f.Before(before.Add(-time.Second)) {
		t.Errorf("an unchanged full read left the mtime at %v", f)
	}

	// The daemon's cheap change check counts as contact too.
	if err := snapshot.Touch(e.cache, old); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(e.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	d := &pipeline.Daemon{Cfg: cfg, Log: quiet(), Metrics: metrics.New(), LastFull: time.Now()}
	t.Cleanup(d.Wait)
	c, err := newClient(cfg, d.Log)
	if err != nil {
		t.Fatal(err)
	}
	d.Client = c
	if _, err := c.Discover(ctx); err != nil {
		t.Fatal(err)
	}
	before = time.Now()
	d.Poll(ctx)
	if f := fresh(); f.Before(before.Add(-time.Second)) {
		t.Errorf("a no-change poll left the mtime at %v", f)
	}
	if st := e.statusFile(t); st.LastResult != commit.Unchanged || st.LastSourceContact.Before(before.Add(-time.Second)) {
		t.Errorf("status after a cheap poll: %+v", st)
	}

	// Source down: no contact, the mtime ages.
	if err := snapshot.Touch(e.cache, old); err != nil {
		t.Fatal(err)
	}
	e.srv.SetFaults(scimserver.Faults{FailListRequest: 1, FailTimes: 100, FailStatus: 500})
	if _, err := e.syncer(t).Once(ctx, pipeline.Opts{}); err == nil {
		t.Fatal("sync with the source failing succeeded")
	}
	if f := fresh(); !f.Equal(old.Truncate(time.Nanosecond)) && f.Sub(old).Abs() > time.Millisecond {
		t.Errorf("a failed poll moved the mtime to %v (want %v)", f, old)
	}
}
