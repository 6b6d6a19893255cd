package main

import (
	"context"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/metrics"
	"github.com/scimbridge/scimbridge/syncd/pipeline"
	"github.com/scimbridge/scimbridge/syncd/snapshot"
	"github.com/scimbridge/scimbridge/tests/scimserver"
)

func (e *env) daemon(t *testing.T) *pipeline.Daemon {
	t.Helper()
	cfg, err := config.Load(e.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	d := &pipeline.Daemon{CfgPath: e.cfgPath, Cfg: cfg, Log: quiet(), Metrics: metrics.New()}
	t.Cleanup(d.Wait) // the last explain record, before the temp dir goes
	if d.Client, err = newClient(cfg, d.Log); err != nil {
		t.Fatal(err)
	}
	d.Metrics.WatchSource("test", d.SourceStats)
	return d
}

func (e *env) user(t *testing.T, scimID string) (snapshot.User, bool) {
	t.Helper()
	c, _, err := snapshot.Load(e.cache)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range c.Users {
		if u.SCIMID == scimID {
			return u, true
		}
	}
	return snapshot.User{}, false
}

// Issue 12 acceptance: a record changed in the middle of a full read is
// in the snapshot within two polls; the polls after that are cheap; a
// deletion reaches the snapshot at the first poll whose removal check
// is due. The daemon's own poll function, the real client and the test
// server; the defaults are checked against the acceptance times.
func TestFreshnessChangeDuringReadAndDeletion(t *testing.T) {
	e := newEnv(t, 300, 6, `page_size = 50
sort_by = ""`)
	users := e.srv.Snapshot().Users
	first, last := users[0].ID, users[len(users)-1].ID
	var pages atomic.Int32
	e.srv.SetListHook(func(rt string, q url.Values) {
		if rt == "User" && q.Get("filter") == "" && pages.Add(1) == 3 {
			e.srv.UpdateUser(first, func(u *scimserver.User) { u.POSIX.GECOS = "Changed Mid-Read" })
			time.Sleep(3 * time.Millisecond)
			e.srv.SetActive(last, false)
		}
	})
	d := e.daemon(t)
	ctx := context.Background()
	d.Poll(ctx) // poll 1: the first full read, during which both change
	e.srv.SetListHook(nil)
	if u, _ := e.user(t, first); u.GECOS == "Changed Mid-Read" {
		t.Fatal("test setup: the change landed before its page was read")
	}
	if u, _ := e.user(t, last); u.Active {
		t.Fatal("test setup: the later change is not in the first read")
	}
	serial := e.meta(t).Serial
	d.Poll(ctx) // poll 2: the check sees the first user's change; full read
	if u, _ := e.user(t, first); u.GECOS != "Changed Mid-Read" {
		t.Fatalf("after two polls the mid-read change is not in the snapshot (gecos %q)", u.GECOS)
	}
	if e.meta(t).Serial != serial+1 {
		t.Errorf("serial %d, want %d", e.meta(t).Serial, serial+1)
	}

	// Nothing changes: the next polls make no full read.
	e.srv.ResetCounters()
	d.Poll(ctx)
	d.Poll(ctx)
	if n := e.srv.Requests().UserLists; n > 4 {
		t.Errorf("two polls without change made %d user list requests", n)
	}
	if e.meta(t).Serial != serial+1 {
		t.Errorf("an unchanged poll committed")
	}
	mf, err := d.Metrics.Registry.Gather()
	found := 0
	for _, f := range mf {
		switch f.GetName() {
		case "scimbridge_source_requests_total":
			if f.GetMetric()[0].GetCounter().GetValue() > 0 {
				found++
			}
		case "scimbridge_build_info":
			found++
		case "scimbridge_change_checks_total":
			for _, m := range f.GetMetric() {
				if m.GetLabel()[0].GetValue() == "unchanged" && m.GetCounter().GetValue() == 2 {
					found++
				}
			}
		}
	}
	if err != nil || found != 3 {
		t.Errorf("source requests, build info, 2 unchanged checks: %d of 3 found, %v", found, err)
	}

	// A user in no group is deleted: invisible to lastModified, seen by
	// the removal check when it is due.
	loner := users[100].ID
	for _, g := range e.srv.Snapshot().Groups {
		e.srv.RemoveMembers(g.ID, loner)
	}
	d.Poll(ctx)
	if _, ok := e.user(t, loner); !ok {
		t.Fatal("test setup: the user vanished before its deletion")
	}
	e.srv.DeleteUser(loner)
	d.LastRemovalCheck = time.Now() // not due yet
	d.Poll(ctx)
	if _, ok := e.user(t, loner); !ok {
		t.Fatal("the deletion was read although no removal check was due (the check is not what this test measures)")
	}
	d.LastRemovalCheck = time.Now().Add(-d.Cfg.RemovalCheckInterval)
	d.Poll(ctx)
	if _, ok := e.user(t, loner); ok {
		t.Fatal("the deleted user is still in the snapshot after a poll with the removal check due")
	}
}

// The defaults meet the acceptance times: any change within a poll
// (+ jitter) of happening, a deletion within the removal check interval
// plus a poll; each well under the limits, leaving time for the read.
func TestFreshnessDefaults(t *testing.T) {
	e := newEnv(t, 1, 0, "")
	cfg, err := config.Load(e.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	poll := cfg.PollInterval + cfg.PollJitter
	if cfg.PollInterval > time.Minute || poll > 70*time.Second {
		t.Errorf("default poll %s ± %s: a change could wait longer than 90 s", cfg.PollInterval, cfg.PollJitter)
	}
	if del := cfg.RemovalCheckInterval + poll; del > 4*time.Minute {
		t.Errorf("default removal check %s + poll %s: a deletion could wait %s (limit 5 min with the read)", cfg.RemovalCheckInterval, poll, del)
	}
	if cfg.FullReconcileInterval != time.Hour || cfg.ChangeOverlap < 30*time.Second {
		t.Errorf("full reconcile %s, overlap %s", cfg.FullReconcileInterval, cfg.ChangeOverlap)
	}
}
