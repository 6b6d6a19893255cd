package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/scimbridge/scimbridge/syncd/commit"
	"github.com/scimbridge/scimbridge/tests/scimserver"
)

// Issue 18: BenchmarkChangeToManifest once reported "unchanged" for a full
// read run right after its delete-user case. This drives the benchmark's
// sequence of changes through the daemon's own Poll against the test
// server (incremental polls, a removal check that lists ids, a full read
// after it and before it) and checks, after every poll, that the change
// just made at the server is in the live snapshot.
//
// It found no state kept between polls going out of step: a full read
// after a deletion, and a deletion after a full read, commit the disable
// made just before them. What the benchmark saw is its own change: its
// full-read case acted on disabled[k] with active = k%2 == 1, so its
// second change (k = 1) enabled disabled[1], which the enable case had
// enabled already. The server moves lastModified on that write, the
// content is the same, and "unchanged" is the right answer; the last part
// of this test says so.
func TestFullReadAfterDeletionSeesTheChange(t *testing.T) {
	e := newEnv(t, 2000, 40, `page_size = 500`)
	ctx := context.Background()
	d := e.daemon(t)
	d.Poll(ctx) // the first full read
	if d.Last == nil || d.Last.Result != commit.Committed {
		t.Fatalf("the first full read: %+v", d.Last)
	}
	users := e.srv.Snapshot().Users
	poll := func(what string, full, removals bool) {
		t.Helper()
		d.Wait()
		if full {
			d.LastFull = time.Time{}
		}
		if removals {
			d.LastRemovalCheck = time.Time{}
		}
		d.Poll(ctx)
		if d.Last == nil || d.Last.Result != commit.Committed {
			t.Fatalf("%s: the poll did not commit the change: %+v", what, d.Last)
		}
		if !full && d.LastRead == 0 {
			t.Fatalf("%s: the change was not read incrementally", what)
		}
	}
	active := func(what string, id string, want bool) {
		t.Helper()
		u, ok := e.user(t, id)
		if !ok {
			t.Fatalf("%s: user %s is not in the snapshot", what, id)
		}
		if u.Active != want {
			t.Fatalf("%s: user %s (%s) active = %v in the snapshot, %v at the server", what, u.Name, id, u.Active, want)
		}
	}
	gone := func(what, id string) {
		t.Helper()
		if _, ok := e.user(t, id); ok {
			t.Fatalf("%s: deleted user %s is still in the snapshot", what, id)
		}
	}
	newUser := func(n int) string {
		name := fmt.Sprintf("benchnew%d", n)
		uid, gid := int64(90000+n), *e.srv.Snapshot().Groups[0].GIDNumber
		u, err := e.srv.UpsertUser(scimserver.User{UserName: name, POSIX: &scimserver.POSIX{
			UIDNumber: &uid, GIDNumber: &gid, HomeDirectory: "/home/" + name, LoginShell: "/bin/bash"}})
		if err != nil {
			t.Fatal(err)
		}
		return u.ID
	}
	set := func(id string, on bool) {
		if err := e.srv.SetActive(id, on); err != nil {
			t.Fatal(err)
		}
	}
	for round := range 3 {
		x, y := users[100+round].ID, users[200+round].ID
		// The benchmark's order: incremental disable and enable, a new
		// user, its deletion seen by the removal check, then a disable
		// read in full.
		set(x, false)
		poll("disable", false, false)
		active("disable", x, false)
		set(x, true)
		poll("enable", false, false)
		active("enable", x, true)
		a := newUser(2 * round)
		poll("new-user", false, false)
		active("new-user", a, true)
		mustDelete(t, e.srv, a)
		poll("delete-user", false, true)
		gone("delete-user", a)
		set(y, false)
		poll("full read after the deletion", true, false)
		active("full read after the deletion", y, false)
		// The other order: a full read (the enable), then a deletion,
		// then a disable applied incrementally and one read in full.
		set(y, true)
		poll("full read before the deletion", true, false)
		active("full read before the deletion", y, true)
		b := newUser(2*round + 1)
		poll("new-user", false, false)
		mustDelete(t, e.srv, b)
		poll("delete-user after the full read", false, true)
		gone("delete-user after the full read", b)
		set(x, false)
		poll("disable after the deletion", false, false)
		active("disable after the deletion", x, false)
		// A deletion and a disable in one poll that checks removals,
		// then in one full read.
		c := newUser(100 + round)
		poll("new-user", false, false)
		mustDelete(t, e.srv, c)
		set(x, true)
		poll("deletion and enable", false, true)
		gone("deletion and enable", c)
		active("deletion and enable", x, true)
		c = newUser(200 + round)
		poll("new-user", false, false)
		mustDelete(t, e.srv, c)
		set(y, false)
		poll("deletion and disable read in full", true, false)
		gone("deletion and disable read in full", c)
		active("deletion and disable read in full", y, false)
		set(y, true)
		poll("enable", false, false)
	}
	// What the benchmark's old full-read case did at its second change:
	// enable a user the enable case had enabled already. The server moves
	// lastModified, nothing the snapshot holds changes: unchanged, on the
	// incremental path and on a full read alike.
	z := users[300].ID
	active("before the no-op", z, true)
	for _, full := range []bool{false, true} {
		d.Wait()
		set(z, true)
		if full {
			d.LastFull = time.Time{}
		}
		d.Poll(ctx)
		if d.Last == nil || d.Last.Result != commit.Unchanged {
			t.Fatalf("enabling an enabled user (full read %v): %+v, want %s", full, d.Last, commit.Unchanged)
		}
	}
}

func mustDelete(t *testing.T, srv *scimserver.Server, id string) {
	t.Helper()
	if err := srv.DeleteUser(id); err != nil {
		t.Fatal(err)
	}
}
