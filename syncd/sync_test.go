package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/scimbridge/scimbridge/syncd/commit"
	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/pipeline"
	"github.com/scimbridge/scimbridge/syncd/snapshot"
	"github.com/scimbridge/scimbridge/tests/scimserver"
)

type env struct {
	dir, cfgPath, cache, status string
	srv                         *scimserver.Server
}

func newEnv(t *testing.T, users, groups int, extra string) *env {
	t.Helper()
	e := &env{dir: t.TempDir()}
	e.srv = scimserver.New(scimserver.Options{Token: "tok-123"})
	if err := e.srv.Load(scimserver.Generate(users, groups, 3)); err != nil {
		t.Fatal(err)
	}
	url, stop := e.srv.Start()
	t.Cleanup(stop)
	write := func(name, body string) string {
		p := filepath.Join(e.dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tok := write("token", "tok-123\n")
	pw := write("passwd", "root:x:0:0:root:/root:/bin/bash\n")
	gr := write("group", "root:x:0:\n")
	e.cache = filepath.Join(e.dir, "cache.db")
	e.status = filepath.Join(e.dir, "status.json")
	e.cfgPath = write("syncd.toml", fmt.Sprintf(`
base_url = %q
token_file = %q
preset = "posix"
cache_path = %q
status_path = %q
local_passwd = %q
local_group = %q
uid_min = 1000
max_retries = 0
allowed_shells = ["/bin/bash", "/bin/zsh", "/bin/sh"]
%s
`, url, tok, e.cache, e.status, pw, gr, extra))
	return e
}

func (e *env) syncer(t *testing.T) *pipeline.Syncer {
	t.Helper()
	return e.syncerLogging(t, quiet())
}

// syncerLogging is syncer logging to log.
func (e *env) syncerLogging(t *testing.T, log logrus.FieldLogger) *pipeline.Syncer {
	t.Helper()
	cfg, err := config.Load(e.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	c, err := newClient(cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	return pipeline.NewSyncer(cfg, c, log, nil)
}

func (e *env) meta(t *testing.T) snapshot.Meta {
	t.Helper()
	_, m, err := snapshot.Load(e.cache)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func (e *env) statusFile(t *testing.T) *commit.Status {
	t.Helper()
	st, err := commit.ReadStatus(e.status)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestSyncCommitThenFailureKeepsLive(t *testing.T) {
	e := newEnv(t, 300, 20, "")
	ctx := context.Background()
	out, err := e.syncer(t).Once(ctx, pipeline.Opts{})
	if err != nil {
		t.Fatal(err)
	}
	m := e.meta(t)
	if out.Result != commit.Committed || m.Serial != 1 || m.Users != len(out.Valid.Contents.Users) || m.Users < 280 {
		t.Fatalf("result %s, meta %+v", out.Result, m)
	}
	before, _ := os.ReadFile(e.cache)

	// Change at the server, then break paging mid-way: no commit.
	e.srv.SetActive(e.srv.Snapshot().Users[0].ID, false)
	e.srv.SetFaults(scimserver.Faults{FailListRequest: 2, FailStatus: 500})
	_, err = e.syncer(t).Once(ctx, pipeline.Opts{})
	if err == nil || !strings.Contains(err.Error(), "HTTP 500") {
		t.Fatalf("sync with a 500 mid-paging: err = %v", err)
	}
	after, _ := os.ReadFile(e.cache)
	if !bytes.Equal(before, after) || e.meta(t).Serial != 1 {
		t.Fatal("the live snapshot changed after a failed fetch")
	}
	st := e.statusFile(t)
	if st.LastResult != commit.Failed || !strings.Contains(st.LastError, "HTTP 500") || st.LastSuccess.IsZero() || st.ConsecutiveFailures != 1 {
		t.Errorf("status after failure = %+v", st)
	}
	fi, _ := os.Stat(e.status)
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("status file mode %v, want 0644", fi.Mode().Perm())
	}
	if b, _ := os.ReadFile(e.status); bytes.Contains(b, []byte("tok-123")) {
		t.Error("the status file contains the token")
	}

	// Fault cleared: the change is committed, nothing else.
	e.srv.SetFaults(scimserver.Faults{})
	out, err = e.syncer(t).Once(ctx, pipeline.Opts{})
	if err != nil || out.Result != commit.Committed || e.meta(t).Serial != 2 {
		t.Fatalf("result %v err %v serial %d", out.Result, err, e.meta(t).Serial)
	}
	if len(out.Diff.ChangedUsers) != 1 || out.Diff.ChangedUsers[0].Fields[0].Name != "active" || len(out.Diff.AddedUsers)+len(out.Diff.RemovedUsers) != 0 {
		t.Errorf("diff = %+v", out.Diff)
	}
	// And again: unchanged, no new serial.
	out, err = e.syncer(t).Once(ctx, pipeline.Opts{})
	if err != nil || out.Result != commit.Unchanged || e.meta(t).Serial != 2 {
		t.Fatalf("second sync: result %v err %v", out.Result, err)
	}
}

// The removal guard holds back deletions (as disabled records) and
// nothing else: a disable and a removal from a group reach the snapshot
// on the poll that sees them, while deletions are held and after.
func TestRemovalGuard(t *testing.T) {
	e := newEnv(t, 200, 10, "max_removal_share = 0.1")
	ctx := context.Background()
	if _, err := e.syncer(t).Once(ctx, pipeline.Opts{}); err != nil {
		t.Fatal(err)
	}
	live0, _, _ := snapshot.Load(e.cache)
	users := e.srv.Snapshot().Users
	for _, u := range users[:30] { // 15%
		e.srv.DeleteUser(u.ID)
	}
	disabled := users[40].UserName
	e.srv.SetActive(disabled, false)
	var group, leaver string
	for _, g := range live0.Groups {
		if len(g.Members) > 0 && !slices.ContainsFunc(users[:30], func(u scimserver.User) bool { return u.UserName == g.Members[0] }) {
			group, leaver = g.Name, g.Members[0]
			break
		}
	}
	if err := e.srv.RemoveMembers(group, leaver); err != nil {
		t.Fatal(err)
	}
	gone := 0 // deleted users that were published (the generator's bad records never were)
	for _, u := range users[:30] {
		if slices.ContainsFunc(live0.Users, func(l snapshot.User) bool { return l.SCIMID == u.ID }) {
			gone++
		}
	}
	var buf bytes.Buffer
	out, err := e.syncer(t).Once(ctx, pipeline.Opts{Out: &buf})
	if err != nil || out.Result != commit.HeldBack || out.Held == nil || len(out.Held.Users) != gone || gone < 25 {
		t.Fatalf("result %v held %+v err %v, want %d deletions held", out.Result, out.Held, err, gone)
	}
	st := e.statusFile(t)
	if e.meta(t).Serial != 2 || st.LastResult != commit.HeldBack || st.HeldUsers != gone || !strings.Contains(st.Held, "max_removal_share") {
		t.Fatalf("serial %d status %+v", e.meta(t).Serial, st)
	}
	c, _, _ := snapshot.Load(e.cache)
	byName := map[string]snapshot.User{}
	for _, u := range c.Users {
		byName[u.Name] = u
	}
	if u, ok := byName[users[0].UserName]; !ok || u.Active {
		t.Errorf("held user %s: %+v (present %v), want kept and disabled", users[0].UserName, u, ok)
	}
	if byName[disabled].Active {
		t.Errorf("the disable of %s was held back with the deletions", disabled)
	}
	for _, g := range c.Groups {
		if g.Name == group && slices.Contains(g.Members, leaver) {
			t.Errorf("the removal of %s from %s was held back", leaver, group)
		}
		for _, m := range g.Members {
			if !byName[m].Active && m != disabled && byName[m].Name != "" && slices.ContainsFunc(users[:30], func(u scimserver.User) bool { return u.UserName == m }) {
				t.Errorf("held user %s is still in group %s", m, g.Name)
			}
		}
	}
	if n := strings.Count(buf.String(), ": active true -> false"); n < gone+1 {
		t.Errorf("the diff shows %d disables, want %d:\n%s", n, gone+1, buf.String())
	}

	// Next poll, deletions still held: a new disable goes straight in.
	disabled2 := users[41].UserName
	e.srv.SetActive(disabled2, false)
	out, err = e.syncer(t).Once(ctx, pipeline.Opts{})
	if err != nil || e.meta(t).Serial != 3 {
		t.Fatalf("next poll: result %v err %v serial %d", out.Result, err, e.meta(t).Serial)
	}
	c, _, _ = snapshot.Load(e.cache)
	for _, u := range c.Users {
		if u.Name == disabled2 && u.Active {
			t.Errorf("the disable of %s did not reach the snapshot while deletions are held", disabled2)
		}
	}
	// Unchanged poll: nothing written, still reported as held.
	if out, err = e.syncer(t).Once(ctx, pipeline.Opts{}); err != nil || e.meta(t).Serial != 3 || out.Result != commit.HeldBack {
		t.Fatalf("unchanged poll: result %v err %v serial %d", out.Result, err, e.meta(t).Serial)
	}
	if _, err := e.syncer(t).Once(ctx, pipeline.Opts{Force: true}); err != nil || e.meta(t).Serial != 4 {
		t.Fatalf("forced: err %v serial %d", err, e.meta(t).Serial)
	}
	if m := e.meta(t); m.Users != len(live0.Users)-gone {
		t.Errorf("after --force %d users, want %d", m.Users, len(live0.Users)-gone)
	}
}

func TestEmptyDirectoryRefused(t *testing.T) {
	e := newEnv(t, 20, 2, "")
	ctx := context.Background()
	if _, err := e.syncer(t).Once(ctx, pipeline.Opts{}); err != nil {
		t.Fatal(err)
	}
	for _, u := range e.srv.Snapshot().Users {
		e.srv.DeleteUser(u.ID)
	}
	_, err := e.syncer(t).Once(ctx, pipeline.Opts{})
	if err == nil || !strings.Contains(err.Error(), "no valid users") || e.meta(t).Serial != 1 {
		t.Fatalf("err = %v serial %d", err, e.meta(t).Serial)
	}
}

// syncLive syncs once and loads the live snapshot.
func (e *env) syncLive(t *testing.T) *snapshot.Contents {
	t.Helper()
	if _, err := e.syncer(t).Once(context.Background(), pipeline.Opts{}); err != nil {
		t.Fatal(err)
	}
	live, _, err := snapshot.Load(e.cache)
	if err != nil {
		t.Fatal(err)
	}
	return live
}

func TestAssociationsCarriedAndHooksRun(t *testing.T) {
	e := newEnv(t, 50, 5, "")
	ctx := context.Background()
	live := e.syncLive(t)
	keep, gone := live.Users[0].Name, live.Users[1].Name
	live.Associations = []snapshot.Association{
		{User: keep, Account: "physics", QOS: []string{"normal"}, IsDefault: true},
		{User: gone, Account: "physics"},
	}
	if _, err := snapshot.Write(e.cache, live); err != nil {
		t.Fatal(err)
	}
	var hooked []string
	old := pipeline.AfterCommit
	pipeline.AfterCommit = append(pipeline.AfterCommit, func(ctx context.Context, cfg *config.Config, cachePath string) error {
		hooked = append(hooked, cachePath)
		return fmt.Errorf("slurmdbd unreachable")
	})
	defer func() { pipeline.AfterCommit = old }()

	e.srv.DeleteUser(live.Users[1].SCIMID)
	if _, err := e.syncer(t).Once(ctx, pipeline.Opts{}); err != nil {
		t.Fatal(err)
	}
	now, _, err := snapshot.Load(e.cache)
	if err != nil {
		t.Fatal(err)
	}
	if len(now.Associations) != 1 || now.Associations[0].User != keep || !now.Associations[0].IsDefault {
		t.Errorf("associations = %+v, want only %s's", now.Associations, keep)
	}
	if len(hooked) != 1 || hooked[0] != e.cache {
		t.Errorf("hook calls = %v", hooked)
	}
	if st := e.statusFile(t); st.LastResult != commit.Committed || !strings.Contains(st.AfterCommitError, "slurmdbd unreachable") {
		t.Errorf("status = %+v", st)
	}
}

func TestDryRunWritesNothing(t *testing.T) {
	e := newEnv(t, 30, 3, "")
	var buf bytes.Buffer
	out, err := e.syncer(t).Once(context.Background(), pipeline.Opts{DryRun: true, Out: &buf})
	if err != nil || out.Result != commit.DryRun {
		t.Fatal(out, err)
	}
	if _, err := os.Stat(e.cache); !os.IsNotExist(err) {
		t.Error("dry run wrote a snapshot")
	}
	if _, err := os.Stat(e.status); !os.IsNotExist(err) {
		t.Error("dry run wrote a status file")
	}
	if !strings.Contains(buf.String(), "+ user ") || !strings.Contains(buf.String(), "users: ") {
		t.Errorf("dry run output:\n%s", buf.String())
	}
}

func TestCLI(t *testing.T) {
	e := newEnv(t, 10, 2, "")
	var out, errb bytes.Buffer
	if rc := runMain([]string{"--version"}, &out, &errb); rc != 0 || !strings.HasPrefix(out.String(), "syncd ") {
		t.Errorf("--version: rc %d out %q", rc, out.String())
	}
	if rc := runMain([]string{"nosuch"}, &out, &errb); rc != 2 {
		t.Errorf("unknown command rc %d", rc)
	}
	if rc := runMain([]string{"--config", e.cfgPath, "sync"}, &out, &errb); rc != 2 {
		t.Errorf("sync without --once rc %d", rc)
	}
	os.Chmod(e.cfgPath, 0o644)
	errb.Reset()
	if rc := runMain([]string{"sync", "--once", "--config", e.cfgPath}, &out, &errb); rc != 1 || !strings.Contains(errb.String(), "mode 0644") {
		t.Errorf("world-readable config: rc %d stderr %q", rc, errb.String())
	}
}

func quiet() *logrus.Logger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}
