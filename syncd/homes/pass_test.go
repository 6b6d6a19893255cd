package homes

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
	"golang.org/x/sys/unix"

	"github.com/scimbridge/scimbridge/syncd/snapshot"
)

// These tests run as root in temp dirs (chown needs root); nothing
// outside t.TempDir() is touched.

type lab struct {
	t       *testing.T
	dir     string
	home    string
	project string
	cfg     Config
	log     *logrus.Logger
	hook    *test.Hook
	now     time.Time
}

func newLab(t *testing.T) *lab {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("needs root (chown)")
	}
	d := t.TempDir()
	l := &lab{t: t, dir: d, home: filepath.Join(d, "home"), project: filepath.Join(d, "project"),
		now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	for _, p := range []string{l.home, l.project, filepath.Join(d, "skel", ".config")} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(d, "skel", ".bashrc"), []byte("# skel\n"), 0o644)
	os.WriteFile(filepath.Join(d, "skel", ".config", "x"), []byte("x"), 0o600)
	os.Symlink(".bashrc", filepath.Join(d, "skel", ".profile"))
	l.cfg = Config{Enabled: true, Skel: filepath.Join(d, "skel"), Projects: Projects{Root: l.project, Groups: []string{"ml"}}}
	l.cfg = l.cfg.WithDefaults([]string{l.home}, filepath.Join(d, "cache.db"))
	if err := l.cfg.Check(nil); err != nil {
		t.Fatal(err)
	}
	l.log, l.hook = test.NewNullLogger()
	return l
}

func (l *lab) pass(c *snapshot.Contents, dry bool) *Result {
	l.t.Helper()
	res, err := Pass(context.Background(), l.cfg, c, Options{DryRun: dry, Log: l.log, Now: func() time.Time { return l.now }})
	if err != nil {
		l.t.Fatal(err)
	}
	return res
}

func user(name string, uid uint32, home string, active bool) snapshot.User {
	return snapshot.User{Name: name, UID: uid, GID: uid, Home: home, Active: active, Shell: "/bin/bash"}
}

func stat(t *testing.T, p string) unix.Stat_t {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	return st
}

func kinds(r *Result) map[string]int {
	m := map[string]int{}
	for _, a := range r.Actions {
		m[a.Kind]++
	}
	return m
}

func TestHomesCreatedOnceWithSkel(t *testing.T) {
	l := newLab(t)
	alice := filepath.Join(l.home, "alice")
	c := &snapshot.Contents{
		Users:  []snapshot.User{user("alice", 20001, alice, true), user("dora", 20004, filepath.Join(l.home, "dora"), false)},
		Groups: []snapshot.Group{{Name: "ml", GID: 30001, Members: []string{"alice"}}},
	}
	plan := l.pass(c, true)
	if _, err := os.Stat(alice); err == nil || kinds(plan)["create-home"] != 1 {
		t.Fatalf("a plan must change nothing and say what it would make: %v", plan.Actions)
	}
	res := l.pass(c, false)
	st := stat(t, alice)
	if st.Uid != 20001 || st.Gid != 20001 || st.Mode&0o7777 != 0o700 {
		t.Fatalf("home %s: %d:%d %04o, want 20001:20001 0700", alice, st.Uid, st.Gid, st.Mode&0o7777)
	}
	for _, f := range []string{".bashrc", ".config", ".config/x", ".profile"} {
		if s := stat(t, filepath.Join(alice, f)); s.Uid != 20001 {
			t.Errorf("skel %s owned by %d", f, s.Uid)
		}
	}
	if s := stat(t, filepath.Join(alice, ".profile")); s.Mode&unix.S_IFMT != unix.S_IFLNK {
		t.Errorf(".profile should stay a symlink")
	}
	if _, err := os.Stat(filepath.Join(l.home, "dora")); err == nil {
		t.Errorf("a disabled user got a home")
	}
	p := stat(t, filepath.Join(l.project, "ml"))
	if p.Uid != 0 || p.Gid != 30001 || p.Mode&0o7777 != 0o2770 {
		t.Errorf("project ml: %d:%d %04o, want 0:30001 2770", p.Uid, p.Gid, p.Mode&0o7777)
	}
	if res.Changed() != 2 {
		t.Errorf("first pass: %v", res.Actions)
	}
	if again := l.pass(c, false); again.Changed() != 0 || len(again.Actions) != 0 {
		t.Errorf("second pass changed something: %v", again.Actions)
	}
	// The user changes their home's mode: their choice, left alone.
	os.Chmod(alice, 0o750)
	l.pass(c, false)
	if stat(t, alice).Mode&0o777 != 0o750 {
		t.Errorf("an existing home's mode was changed")
	}
	// A project's mode drifts: put back.
	os.Chmod(filepath.Join(l.project, "ml"), 0o777)
	if r := l.pass(c, false); kinds(r)["fix-project"] != 1 || stat(t, filepath.Join(l.project, "ml")).Mode&0o7777 != 0o2770 {
		t.Errorf("project mode not fixed: %v", r.Actions)
	}
}

func TestHostileHomesRefused(t *testing.T) {
	l := newLab(t)
	outside := filepath.Join(l.dir, "etc-like")
	os.MkdirAll(outside, 0o755)
	// mallory plants a symlink where carol's home will be (as if she
	// could write to the root; the walk must not follow it).
	os.Symlink(outside, filepath.Join(l.home, "carol"))
	// A user-writable directory on the way to erin's home.
	os.Mkdir(filepath.Join(l.home, "shared"), 0o777)
	os.Chmod(filepath.Join(l.home, "shared"), 0o777)
	// frank's home exists, owned by someone else.
	os.Mkdir(filepath.Join(l.home, "frank"), 0o700)
	os.Chown(filepath.Join(l.home, "frank"), 20001, 20001)
	c := &snapshot.Contents{Users: []snapshot.User{
		user("alice", 20001, filepath.Join(l.home, "alice"), true),
		user("bob", 20002, filepath.Join(l.home, "alice", "bob"), true),
		user("carol", 20003, filepath.Join(l.home, "carol"), true),
		user("erin", 20005, filepath.Join(l.home, "shared", "erin"), true),
		user("frank", 20006, filepath.Join(l.home, "frank"), true),
		user("gina", 20007, outside+"/gina", true),
		user("hal", 20008, filepath.Join(l.home, "twin"), true),
		user("ivy", 20009, filepath.Join(l.home, "twin"), true),
		user("jo", 20010, l.home+"/x/../jo", true),
	}}
	res := l.pass(c, false)
	refused := map[string]string{}
	for _, a := range res.Actions {
		if a.Kind == "refused" {
			refused[a.Name] = a.Path + ": " + a.Detail
		}
	}
	for name, want := range map[string]string{
		"bob": "inside", "carol": "symlink", "erin": "not writable by others", "frank": "owned by uid 20001 (alice's)",
		"gina": "outside the roots", "hal": "home of hal, ivy", "ivy": "home of hal, ivy", "jo": "clean",
	} {
		if !strings.Contains(refused[name], want) {
			t.Errorf("%s: refusal %q, want it to say %q", name, refused[name], want)
		}
	}
	if len(refused) != 8 {
		t.Errorf("refused %d, want 8: %v", len(refused), refused)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("something was made through the symlink: %v", ents)
	}
	if st := stat(t, filepath.Join(l.home, "frank")); st.Uid != 20001 {
		t.Errorf("another user's home changed owner")
	}
	warned := len(l.hook.AllEntries())
	l.pass(c, false)
	var again int
	for _, e := range l.hook.AllEntries()[warned:] {
		if strings.Contains(e.Message, "refused") {
			again++
		}
	}
	if again != 0 {
		t.Errorf("refusals logged again on the second pass: %d", again)
	}
}

func TestRemovedUsersKeptThenArchived(t *testing.T) {
	l := newLab(t)
	bob := filepath.Join(l.home, "bob")
	c := &snapshot.Contents{Users: []snapshot.User{user("alice", 20001, filepath.Join(l.home, "alice"), true), user("bob", 20002, bob, true)}}
	l.pass(c, false)
	os.WriteFile(filepath.Join(bob, "data"), []byte("results"), 0o600)
	gone := &snapshot.Contents{Users: c.Users[:1]}
	// keep (the default): never moved.
	l.now = l.now.Add(400 * 24 * time.Hour)
	if r := l.pass(gone, false); kinds(r)["keep-home"] != 1 {
		t.Fatalf("want keep-home: %v", r.Actions)
	}
	if _, err := os.Stat(filepath.Join(bob, "data")); err != nil {
		t.Fatal("a removed user's home was touched under removed = keep")
	}
	// archive after the grace period.
	l.cfg.Removed, l.cfg.RemovedGrace = "archive", "240h"
	l.cfg.Check(nil)
	os.Remove(l.cfg.StateFile)
	l.pass(c, false)
	l.pass(gone, false) // missing since now
	l.now = l.now.Add(239 * time.Hour)
	if r := l.pass(gone, false); kinds(r)["archive-home"] != 0 {
		t.Fatalf("archived before the grace period: %v", r.Actions)
	}
	l.now = l.now.Add(2 * time.Hour)
	plan := l.pass(gone, true)
	if kinds(plan)["archive-home"] != 1 {
		t.Fatalf("plan: %v", plan.Actions)
	}
	r := l.pass(gone, false)
	if kinds(r)["archive-home"] != 1 {
		t.Fatalf("not archived: %v", r.Actions)
	}
	if _, err := os.Stat(bob); err == nil {
		t.Fatal("home still in place")
	}
	matches, _ := filepath.Glob(filepath.Join(l.home, DefaultArchiveDir, "bob-*", "data"))
	if len(matches) != 1 {
		t.Fatalf("archived data not found: %v", matches)
	}
	// A disabled user is still in the snapshot: never archived.
	c2 := &snapshot.Contents{Users: []snapshot.User{user("alice", 20001, filepath.Join(l.home, "alice"), false)}}
	l.now = l.now.Add(1000 * time.Hour)
	if r := l.pass(c2, false); kinds(r)["archive-home"] != 0 {
		t.Fatalf("a disabled user's home was archived: %v", r.Actions)
	}
}

func TestRootsRefusedWhenUnsafe(t *testing.T) {
	l := newLab(t)
	os.Chmod(l.home, 0o777)
	c := &snapshot.Contents{Users: []snapshot.User{user("alice", 20001, filepath.Join(l.home, "alice"), true)}}
	r := l.pass(c, false)
	if r.Errors != 1 || !strings.Contains(r.Actions[0].Detail, "not writable by others") {
		t.Fatalf("a world-writable root must not be used: %v", r.Actions)
	}
	os.Chmod(l.home, 0o755)
	os.Rename(l.home, l.home+".real")
	os.Symlink(l.home+".real", l.home)
	r = l.pass(c, false)
	if r.Errors != 1 || !strings.Contains(r.Actions[0].Detail, "symlink") {
		t.Fatalf("a root reached through a symlink must be refused: %v", r.Actions)
	}
	os.Remove(l.home)
	r = l.pass(c, false)
	if r.Errors != 1 || !strings.Contains(r.Actions[0].Detail, "not mounted") {
		t.Fatalf("a missing root: %v", r.Actions)
	}
	if _, err := os.Stat(l.home); err == nil {
		t.Fatal("a missing root was created")
	}
}

func TestNestedHomeAndInterruptedCreation(t *testing.T) {
	l := newLab(t)
	zed := filepath.Join(l.home, "ml", "zed")
	c := &snapshot.Contents{Users: []snapshot.User{user("zed", 20020, zed, true), user("yan", 20021, filepath.Join(l.home, "yan"), true)}}
	// A pass interrupted between mkdir and chown left yan's home root's.
	os.Mkdir(filepath.Join(l.home, "yan"), 0o700)
	st, _ := LoadState(l.cfg.StateFile)
	st.Creating[filepath.Join(l.home, "yan")] = 20021
	st.Save(l.cfg.StateFile)
	r := l.pass(c, false)
	if k := kinds(r); k["create-home"] != 2 || k["refused"] != 0 {
		t.Fatalf("%v", r.Actions)
	}
	if s := stat(t, filepath.Join(l.home, "ml")); s.Uid != 0 || s.Mode&0o777 != 0o755 {
		t.Errorf("a directory made on the way must be root's 0755: %d %04o", s.Uid, s.Mode&0o777)
	}
	if s := stat(t, zed); s.Uid != 20020 {
		t.Errorf("zed: %d", s.Uid)
	}
	if s := stat(t, filepath.Join(l.home, "yan", ".bashrc")); s.Uid != 20021 {
		t.Errorf("the interrupted home was not completed: %d", s.Uid)
	}
	// Without the ledger's word, a root-owned directory is an admin's: refused.
	os.Mkdir(filepath.Join(l.home, "xia"), 0o755)
	c.Users = append(c.Users, user("xia", 20022, filepath.Join(l.home, "xia"), true))
	if r := l.pass(c, false); kinds(r)["refused"] != 1 || !strings.Contains(r.Actions[0].Detail, "owned by uid 0") {
		t.Fatalf("%v", r.Actions)
	}
}
