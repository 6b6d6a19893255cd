package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/scimbridge/scimbridge/syncd/cache"
	"github.com/scimbridge/scimbridge/syncd/commit"
	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/metrics"
	"github.com/scimbridge/scimbridge/syncd/pipeline"
	"github.com/scimbridge/scimbridge/syncd/snapshot"
	"github.com/scimbridge/scimbridge/tests/scimserver"
)

// Issue 18: thousands of random changes (users, groups, memberships,
// keys, renames, deletions, disables, hostile values) reach the snapshot
// through the incremental read (the daemon's own Poll against the test
// SCIM server), and the result equals a full read and build of the same
// source: the same rows, and the same NSS answers through the C reader.
// Every few rounds the comparison runs; the hourly reconcile then finds
// nothing to fix.
func TestIncrementalEqualsFullRead(t *testing.T) {
	e := newEnv(t, 300, 12, `sort_by = ""
page_size = 100`)
	ctx := context.Background()
	// Large groups: more than 1,000 bytes of member names, kept in
	// pieces (schema version 3), which the changes below grow, shrink,
	// rename members of and delete.
	snap := e.srv.Snapshot()
	for gi, g := range snap.Groups[:3] {
		var ids []string
		for _, u := range snap.Users[gi*40 : gi*40+150] {
			ids = append(ids, u.ID)
		}
		if err := e.srv.SetMembers(g.ID, ids); err != nil {
			t.Fatal(err)
		}
	}
	d := e.daemon(t)
	d.Poll(ctx) // the first full read
	if piecedGroups(t, e.cache) == 0 {
		t.Fatal("no group of the directory has a pieced member list")
	}
	if _, err := snapshot.VerifyFile(e.cache); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(18, 2026))
	deadline := time.Now().Add(3 * time.Minute)
	changes, rounds, piecedPolls, piecedCompared := 0, 0, 0, 0
	for rounds = 0; changes < 2500 && time.Now().Before(deadline); rounds++ {
		for k := 0; k < 30; k++ {
			randomChange(t, e.srv, rng, rounds*100+k)
			changes++
		}
		d.LastRemovalCheck = time.Time{} // deletions checked at every poll
		// The full build starts from the same live snapshot as the
		// poll (the removal guard and the holders of duplicate ids
		// look at it).
		base := ""
		// The first rounds still have the large groups (later ones
		// lose them to the random deletions): compared too.
		// The round after a full read (below) too: the incremental state
		// it leaves is compared.
		if rounds%20 == 19 || rounds < 2 || rounds%10 == 5 || rounds%10 == 0 {
			base = copyFile(t, e.cache)
		}
		d.Poll(ctx)
		if piecedGroups(t, e.cache) > 0 {
			piecedPolls++
			if base != "" {
				piecedCompared++
			}
		}
		if base != "" {
			sameAsFullRead(t, e, base)
		}
		// A deletion seen by the removal check, then a disable read in
		// full; and (five rounds on) the disable read in full first,
		// then the deletion applied incrementally.
		switch rounds % 10 {
		case 4:
			deleteAndPoll(t, e, d, rng)
			disableReadInFull(t, e, d, rng)
		case 9:
			disableReadInFull(t, e, d, rng)
			deleteAndPoll(t, e, d, rng)
		}
	}
	// The stored format of long member lists (schema version 3: pieces in
	// the index, NULL in groups.members) is what the rounds compared.
	t.Logf("%d of %d polls left a group with a pieced member list, %d of them compared with a full read", piecedPolls, rounds, piecedCompared)
	if piecedCompared == 0 {
		t.Error("no poll compared with a full read had a pieced member list")
	}
	applied := counter(t, d.Metrics.Registry, "scimbridge_changed_polls_total", "applied")
	full := counter(t, d.Metrics.Registry, "scimbridge_changed_polls_total", "full")
	t.Logf("%d changes in %d polls: %v applied incrementally, %v by full reads", changes, rounds, applied, full)
	if changes < 1000 {
		t.Fatalf("only %d changes in the time bound", changes)
	}
	if applied < float64(rounds)*9/10 {
		t.Errorf("only %v of %d polls applied the change incrementally (%v full reads)", applied, rounds, full)
	}
	// The reconcile: a full read compared with the incremental state.
	d.LastFull = time.Now().Add(-2 * d.Cfg.FullReconcileInterval)
	d.Poll(ctx)
	if n := counter(t, d.Metrics.Registry, "scimbridge_reconcile_differences_total", ""); n != 0 {
		t.Errorf("the reconcile found %v differences from the incrementally kept snapshot", n)
	}
}

// deleteAndPoll deletes a user at the server and polls with the removal
// check due: the user is gone from the snapshot.
func deleteAndPoll(t *testing.T, e *env, d *pipeline.Daemon, rng *rand.Rand) {
	t.Helper()
	users := e.srv.Snapshot().Users
	u := users[rng.IntN(len(users))]
	if err := e.srv.DeleteUser(u.ID); err != nil {
		t.Fatal(err)
	}
	d.LastRemovalCheck = time.Time{}
	d.Poll(context.Background())
	got, ok := e.user(t, u.ID)
	if !ok {
		return
	}
	// Or held by the removal guard (the random changes can reject a
	// tenth of the users at once): kept, but disabled, without keys.
	if d.Last == nil || d.Last.Held == nil || !slices.Contains(d.Last.Held.Users, got.Name) || got.Active || len(got.SSHKeys) > 0 {
		t.Fatalf("user %s (%s) deleted at the server is in the snapshot (active %v, %d keys) after a poll that checked removals, not held by the guard: %+v", u.UserName, u.ID, got.Active, len(got.SSHKeys), d.Last)
	}
}

// disableReadInFull disables a user the snapshot holds as active and
// polls with a full read: it commits, and the user is inactive.
func disableReadInFull(t *testing.T, e *env, d *pipeline.Daemon, rng *rand.Rand) {
	t.Helper()
	live, _, err := snapshot.Load(e.cache)
	if err != nil {
		t.Fatal(err)
	}
	var active []snapshot.User
	for _, u := range live.Users {
		if u.Active {
			active = append(active, u)
		}
	}
	if len(active) == 0 {
		t.Fatal("no active user left in the snapshot")
	}
	u := active[rng.IntN(len(active))]
	if err := e.srv.SetActive(u.SCIMID, false); err != nil {
		t.Fatal(err)
	}
	d.Wait()
	d.LastFull = time.Time{}
	d.Poll(context.Background())
	// Held: committed, with deletions the guard still holds back.
	if d.Last == nil || (d.Last.Result != commit.Committed && d.Last.Result != commit.HeldBack) {
		t.Fatalf("disabling %s read in full: %+v, want %s (or %s)", u.Name, d.Last, commit.Committed, commit.HeldBack)
	}
	if got, ok := e.user(t, u.SCIMID); !ok || got.Active {
		t.Fatalf("disabling %s read in full: in the snapshot %v, active %v", u.Name, ok, got.Active)
	}
}

// piecedGroups counts the groups of the snapshot at path whose member
// list is kept as memberships rows only (groups.members NULL).
func piecedGroups(t *testing.T, path string) int {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM groups WHERE members IS NULL`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// copyFile copies the live snapshot into a temporary directory.
func copyFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "full.db")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// sameAsFullRead builds a snapshot from a full read of the same source
// over base (a copy of the live snapshot the poll started from) and
// compares rows and NSS answers with the live one.
func sameAsFullRead(t *testing.T, e *env, base string) {
	t.Helper()
	cfg, err := config.Load(e.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg.CachePath = base
	cfg.StatusPath = filepath.Join(filepath.Dir(cfg.CachePath), "status.json")
	c, err := newClient(cfg, quiet())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pipeline.NewSyncer(cfg, c, quiet(), nil).Once(context.Background(), pipeline.Opts{}); err != nil {
		t.Fatal(err)
	}
	inc, _, err := snapshot.Load(e.cache)
	if err != nil {
		t.Fatal(err)
	}
	full, _, err := snapshot.Load(cfg.CachePath)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(inc.Users, full.Users) {
		t.Fatalf("users differ: incremental %d, full %d; first difference: %s", len(inc.Users), len(full.Users), firstDiff(inc.Users, full.Users))
	}
	if !reflect.DeepEqual(inc.Groups, full.Groups) {
		t.Fatalf("groups differ: incremental %d, full %d; first difference: %s", len(inc.Groups), len(full.Groups), firstDiff(inc.Groups, full.Groups))
	}
	a, err := cache.Open(e.cache)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := cache.Open(cfg.CachePath)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, u := range full.Users {
		ua, erra := a.User(u.Name)
		ub, errb := b.User(u.Name)
		if ua != ub || (erra == nil) != (errb == nil) {
			t.Fatalf("getpwnam(%s): incremental %+v %v, full %+v %v", u.Name, ua, erra, ub, errb)
		}
		ga, _ := a.UserGroups(u.Name)
		gb, _ := b.UserGroups(u.Name)
		if !slices.Equal(ga, gb) {
			t.Fatalf("initgroups(%s): incremental %v, full %v", u.Name, ga, gb)
		}
		ka, _ := a.Keys(u.Name)
		kb, _ := b.Keys(u.Name)
		if !slices.Equal(ka, kb) {
			t.Fatalf("keys(%s): incremental %v, full %v", u.Name, ka, kb)
		}
	}
	for _, g := range full.Groups {
		ga, erra := a.Group(g.Name)
		gb, errb := b.Group(g.Name)
		if !reflect.DeepEqual(ga, gb) || (erra == nil) != (errb == nil) {
			t.Fatalf("getgrnam(%s): incremental %+v %v, full %+v %v", g.Name, ga, erra, gb, errb)
		}
	}
}

// counter is a counter's value (label: the one label's value, or "").
func counter(t *testing.T, g prometheus.Gatherer, name, label string) float64 {
	t.Helper()
	mf, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range mf {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if label == "" || (len(m.GetLabel()) > 0 && m.GetLabel()[0].GetValue() == label) {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func firstDiff[T any](a, b []T) string {
	for i := 0; i < min(len(a), len(b)); i++ {
		if !reflect.DeepEqual(a[i], b[i]) {
			return fmt.Sprintf("#%d %+v / %+v", i, a[i], b[i])
		}
	}
	return "one is longer"
}

// hostile values a provider might send: each is rejected or dropped by
// validation, the same way on both paths.
var hostileNames = []string{"root", "../etc", "Ünïcode", "a b", "x\x00y", "-rf", "nobody", "bin", "a$b", "VeryLongName_" + string(make([]byte, 40))}

// randomChange makes one random change at the source.
func randomChange(t *testing.T, srv *scimserver.Server, rng *rand.Rand, n int) {
	t.Helper()
	snap := srv.Snapshot()
	users, groups := snap.Users, snap.Groups
	pickUser := func() scimserver.User { return users[rng.IntN(len(users))] }
	pickGroup := func() scimserver.Group { return groups[rng.IntN(len(groups))] }
	id64 := func(v int64) *int64 { return &v }
	switch k := rng.IntN(16); {
	case k == 0 && len(users) > 50: // delete a user
		srv.DeleteUser(pickUser().ID)
	case k == 1: // a new user
		uid := int64(60000 + n)
		srv.UpsertUser(scimserver.User{UserName: fmt.Sprintf("new%d", n), POSIX: &scimserver.POSIX{
			UIDNumber: id64(uid), GIDNumber: pickGroup().GIDNumber, HomeDirectory: fmt.Sprintf("/home/new%d", n), LoginShell: "/bin/bash"}})
	case k == 2: // disable / enable
		srv.SetActive(pickUser().ID, rng.IntN(2) == 0)
	case k == 3: // keys
		u := pickUser()
		keys := []string{}
		if rng.IntN(3) > 0 {
			keys = append(keys, fmt.Sprintf("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI%032d key%d", n, n))
		}
		if rng.IntN(5) == 0 {
			keys = append(keys, "command=\"/bin/sh\" ssh-rsa AAAA hostile")
		}
		srv.SetSSHKeys(u.ID, keys)
	case k == 4: // rename a user (sometimes to a hostile or taken name)
		u := pickUser()
		srv.UpdateUser(u.ID, func(x *scimserver.User) {
			switch rng.IntN(4) {
			case 0:
				x.UserName = hostileNames[rng.IntN(len(hostileNames))]
			case 1:
				x.UserName = pickUser().UserName // a duplicate
			default:
				x.UserName = fmt.Sprintf("renamed%d", n)
			}
		})
	case k == 5: // hostile ids and paths
		u := pickUser()
		srv.UpdateUser(u.ID, func(x *scimserver.User) {
			if x.POSIX == nil {
				x.POSIX = &scimserver.POSIX{}
			}
			switch rng.IntN(5) {
			case 0:
				x.POSIX.UIDNumber = id64(0)
			case 1:
				if o := pickUser(); o.POSIX != nil {
					x.POSIX.UIDNumber = o.POSIX.UIDNumber // a duplicate uid
				}
			case 2:
				x.POSIX.HomeDirectory = "/etc"
			case 3:
				x.POSIX.LoginShell = "/tmp/evil"
			default:
				x.POSIX.GIDNumber = id64(4294967295)
			}
		})
	case k == 6 && len(groups) > 4: // delete a group
		srv.DeleteGroup(pickGroup().ID)
	case k == 7: // a new group, sometimes with a taken gid
		gid := int64(70000 + n)
		if o := pickGroup(); rng.IntN(4) == 0 && o.GIDNumber != nil {
			gid = *o.GIDNumber // a duplicate gid
		}
		srv.UpsertGroup(scimserver.Group{DisplayName: fmt.Sprintf("team%d", n), GIDNumber: &gid, Members: []string{pickUser().ID, pickUser().ID}})
	case k == 8: // rename a group
		srv.UpdateGroup(pickGroup().ID, func(g *scimserver.Group) {
			if rng.IntN(4) == 0 {
				g.DisplayName = hostileNames[rng.IntN(len(hostileNames))]
			} else {
				g.DisplayName = fmt.Sprintf("grp%d", n)
			}
		})
	case k <= 11: // add members
		srv.AddMembers(pickGroup().ID, pickUser().ID)
	case k <= 13: // remove a member
		g := pickGroup()
		if len(g.Members) > 0 {
			srv.RemoveMembers(g.ID, g.Members[rng.IntN(len(g.Members))])
		}
	default: // gecos and shell
		srv.UpdateUser(pickUser().ID, func(x *scimserver.User) {
			if x.POSIX != nil {
				x.POSIX.GECOS = fmt.Sprintf("Person %d", n)
				x.POSIX.LoginShell = []string{"/bin/bash", "/bin/zsh", "/bin/sh"}[rng.IntN(3)]
			}
		})
	}
}

// A reconcile (the daemon's hourly full read, `sync --once --full`)
// that finds the live snapshot different from the source says so at
// error level, counts each difference, and commits the fix.
func TestReconcileReportsAndFixesDifferences(t *testing.T) {
	e := newEnv(t, 30, 3, "")
	ctx := context.Background()
	// Drift: the live snapshot says something the source never did.
	live := e.syncLive(t)
	live.Users[3].GECOS = "Drifted"
	live.Users[4].Active = !live.Users[4].Active
	if _, err := snapshot.Write(e.cache, live); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(e.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	l := logrus.New()
	l.SetOutput(io.Discard)
	h := test.NewLocal(l)
	c, err := newClient(cfg, l)
	if err != nil {
		t.Fatal(err)
	}
	m := metrics.New()
	out, err := pipeline.NewSyncer(cfg, c, l, m).Once(ctx, pipeline.Opts{Reconcile: true})
	if err != nil || out.Result != commit.Committed {
		t.Fatalf("reconcile: %v %v", out, err)
	}
	if n := counter(t, m.Registry, "scimbridge_reconcile_differences_total", ""); n != 2 {
		t.Errorf("scimbridge_reconcile_differences_total = %v, want 2", n)
	}
	said := false
	for _, en := range h.AllEntries() {
		if en.Level == logrus.ErrorLevel && strings.Contains(en.Message, "reconcile") && strings.Contains(fmt.Sprint(en.Data["detail"]), live.Users[3].Name) {
			said = true
		}
	}
	if !said {
		t.Error("no error-level reconcile line naming the drifted user")
	}
	fixed, _, _ := snapshot.Load(e.cache)
	if fixed.Users[3].GECOS == "Drifted" || fixed.Users[4].Active == live.Users[4].Active {
		t.Error("the reconcile did not fix the live snapshot")
	}
	// A second reconcile finds nothing.
	m2 := metrics.New()
	if _, err := pipeline.NewSyncer(cfg, c, l, m2).Once(ctx, pipeline.Opts{Reconcile: true}); err != nil {
		t.Fatal(err)
	}
	if n := counter(t, m2.Registry, "scimbridge_reconcile_differences_total", ""); n != 0 {
		t.Errorf("a reconcile after the fix counted %v differences", n)
	}
}

// Issue 19 item 3: while a rollback pins the live snapshot, every poll of
// the daemon says what the source would change, once per distinct change
// (not only when the source changes again); `syncd resume` makes the
// next poll a full read that commits what the source says, although the
// source has not changed since.
func TestPinnedPollsSayWhatWouldChangeAndResumeReadsAll(t *testing.T) {
	e := newEnv(t, 40, 4, "")
	ctx := context.Background()
	d := e.daemon(t)
	l := logrus.New()
	l.SetOutput(io.Discard)
	l.SetLevel(logrus.DebugLevel)
	h := test.NewLocal(l)
	d.Log = l
	d.Poll(ctx) // full read: serial 1
	victim := e.srv.Snapshot().Users[5]
	e.srv.SetActive(victim.ID, false)
	d.Poll(ctx) // the disable, applied: serial 2
	if u, _ := e.user(t, victim.ID); u.Active {
		t.Fatal("the disable did not reach the snapshot")
	}
	if rc, out := runCLI(t, e, "rollback", "1"); rc != 0 || !strings.Contains(out, "pinned") {
		t.Fatalf("rollback: rc %d %s", rc, out)
	}
	if u, _ := e.user(t, victim.ID); !u.Active {
		t.Fatal("test setup: the rollback did not bring the user back")
	}
	serial := e.meta(t).Serial
	wouldChange := func() (n int, detail string) {
		for _, en := range h.AllEntries() {
			if en.Level == logrus.WarnLevel && strings.HasPrefix(en.Message, "syncd: pinned by a rollback") {
				n++
				detail, _ = en.Data["would_change"].(string)
			}
		}
		h.Reset()
		return n, detail
	}
	// Quiet source: the first poll says it, the next ones do not repeat it.
	d.Poll(ctx)
	if n, detail := wouldChange(); n != 1 || !strings.Contains(detail, victim.UserName) {
		t.Fatalf("first pinned poll: %d would-change lines (detail %q), want 1 naming %s", n, detail, victim.UserName)
	}
	d.Poll(ctx)
	d.Poll(ctx)
	if n, _ := wouldChange(); n != 0 {
		t.Errorf("the same would-change was logged %d more times", n)
	}
	// Another change at the source: said once more.
	other := e.srv.Snapshot().Users[7]
	e.srv.SetActive(other.ID, false)
	d.Poll(ctx)
	if n, detail := wouldChange(); n != 1 || !strings.Contains(detail, other.UserName) {
		t.Errorf("a new change while pinned: %d lines (detail %q), want 1 naming %s", n, detail, other.UserName)
	}
	if e.meta(t).Serial != serial {
		t.Fatal("a pinned poll committed")
	}
	// Resume: the next poll reads everything and commits the source,
	// with nothing changed at the source since the last poll.
	if rc, out := runCLI(t, e, "resume"); rc != 0 || !strings.Contains(out, "unpinned") {
		t.Fatalf("resume: rc %d %s", rc, out)
	}
	e.srv.ResetCounters()
	d.Poll(ctx)
	if d.Last == nil || d.Last.Result != commit.Committed || d.Last.Took.Read == 0 {
		t.Fatalf("the poll after resume: %+v, want a committed full read", d.Last)
	}
	if e.srv.Requests().UserLists == 0 {
		t.Error("the poll after resume listed no users")
	}
	for _, id := range []string{victim.ID, other.ID} {
		if u, _ := e.user(t, id); u.Active {
			t.Errorf("user %s is active after resume; the source disabled them", u.Name)
		}
	}
}

// The commit's log line says how the snapshot was written (whole and
// why, or in place with each phase's wall time) and how long the write
// took: what an admin reads to see where a slow commit went.
func TestCommitLogSaysHowTheSnapshotWasWritten(t *testing.T) {
	e := newEnv(t, 30, 3, "")
	ctx := context.Background()
	l := logrus.New()
	l.SetOutput(io.Discard)
	h := test.NewLocal(l)
	s := e.syncerLogging(t, l)
	written := func() string {
		t.Helper()
		for _, en := range h.AllEntries() {
			if en.Message == "syncd: committed snapshot" {
				if _, ok := en.Data["write_seconds"]; !ok {
					t.Errorf("no write_seconds on the commit's line: %v", en.Data)
				}
				h.Reset()
				return fmt.Sprint(en.Data["write"])
			}
		}
		t.Fatal("no commit line")
		return ""
	}
	if _, err := s.Once(ctx, pipeline.Opts{}); err != nil {
		t.Fatal(err)
	}
	if w := written(); w != "whole (no live snapshot)" {
		t.Errorf("first commit: write = %q", w)
	}
	e.srv.SetActive(e.srv.Snapshot().Users[0].ID, false)
	if _, err := s.Once(ctx, pipeline.Opts{}); err != nil {
		t.Fatal(err)
	}
	if w := written(); !strings.HasPrefix(w, "in place (index patched): ") || !strings.Contains(w, "; apply ") || !strings.Contains(w, "; verify C reader ") {
		t.Errorf("second commit: write = %q", w)
	}
}
