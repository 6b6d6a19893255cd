package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/scimbridge/scimbridge/syncd/commit"
	"github.com/scimbridge/scimbridge/syncd/pipeline"
	"github.com/scimbridge/scimbridge/syncd/snapshot"
	"github.com/scimbridge/scimbridge/tests/scimserver"
)

func runCLI(t *testing.T, e *env, args ...string) (int, string) {
	t.Helper()
	rc := 0
	out := captureStdout(t, func() {
		rc = runMain(append([]string{"--config", e.cfgPath}, args...), io.Discard, io.Discard)
	})
	return rc, out
}

// History of 10, diff between two serials, rollback to a chosen serial
// (verified first), pinned until resume.
func TestHistoryDiffRollback(t *testing.T) {
	e := newEnv(t, 30, 3, "")
	ctx := context.Background()
	users := e.srv.Snapshot().Users
	for i := 0; i < 12; i++ {
		e.srv.UpdateUser(users[0].ID, func(u *scimserver.User) {
			if u.POSIX != nil {
				u.POSIX.GECOS = fmt.Sprintf("Version %d", i+1)
			}
			u.DisplayName = fmt.Sprintf("Version %d", i+1)
		})
		if _, err := e.syncer(t).Once(ctx, pipeline.Opts{}); err != nil {
			t.Fatal(err)
		}
	}
	es, err := snapshot.History(e.cache)
	if err != nil || len(es) != 10 || es[0].Serial != 3 || es[9].Serial != 12 {
		t.Fatalf("history = %v, %v; want serials 3..12", es, err)
	}
	rc, out := runCLI(t, e, "history")
	if rc != 0 || strings.Count(out, "\n") != 10 || !strings.Contains(out, "*    12") || !strings.Contains(out, "users: 0 added, 1 changed") {
		t.Errorf("history: rc %d\n%s", rc, out)
	}
	rc, out = runCLI(t, e, "diff", "5", "7")
	if rc != 0 || !strings.Contains(out, "~ user") || !strings.Contains(out, "users: 0 added, 1 changed, 0 removed") {
		t.Errorf("diff 5 7: rc %d\n%s", rc, out)
	}
	// A kept snapshot that no longer verifies is refused.
	os.WriteFile(snapshot.HistoryPath(e.cache, 4), []byte("not a snapshot"), 0o644)
	if rc, _ := runCLI(t, e, "rollback", "4"); rc != 1 {
		t.Errorf("rollback to a corrupt snapshot: rc %d", rc)
	}
	if e.meta(t).Serial != 12 {
		t.Fatal("a refused rollback changed the live snapshot")
	}
	rc, out = runCLI(t, e, "rollback", "6")
	if rc != 0 || !strings.Contains(out, "rolled back to serial 6: live snapshot is now serial 13") || !strings.Contains(out, "pinned") {
		t.Fatalf("rollback 6: rc %d\n%s", rc, out)
	}
	want, _, _ := snapshot.Load(snapshot.HistoryPath(e.cache, 6))
	got, _, _ := snapshot.Load(e.cache)
	if d := commit.Compute(want, got); !d.Empty() {
		t.Errorf("live after rollback differs from serial 6: %s", d.Summary())
	}
	// The next poll does not undo it.
	out2, err := e.syncer(t).Once(ctx, pipeline.Opts{})
	if err != nil || out2.Result != pipeline.ResultPinned || e.meta(t).Serial != 13 {
		t.Fatalf("sync while pinned: %v %v serial %d", out2.Result, err, e.meta(t).Serial)
	}
	if _, out := runCLI(t, e, "status"); !strings.Contains(out, "pinned:         serial 13 is a rollback to serial 6") {
		t.Errorf("status while pinned:\n%s", out)
	}
	if rc, out := runCLI(t, e, "resume"); rc != 0 || !strings.Contains(out, "unpinned") {
		t.Errorf("resume: rc %d %s", rc, out)
	}
	out2, err = e.syncer(t).Once(ctx, pipeline.Opts{})
	if err != nil || out2.Result != commit.Committed || e.meta(t).Serial != 14 {
		t.Fatalf("sync after resume: %v %v serial %d", out2.Result, err, e.meta(t).Serial)
	}
}
