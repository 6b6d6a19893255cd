package main

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/scimbridge/scimbridge/syncd/pipeline"
	"github.com/scimbridge/scimbridge/syncd/snapshot"
	"github.com/scimbridge/scimbridge/syncd/validate"
	"github.com/scimbridge/scimbridge/tests/scimserver"
)

// perUserGIDs turns the generated directory into the shape of issue 20's
// first independent server: every user's gid is their own uid and no
// SCIM group publishes it; the groups that exist carry names with spaces,
// as Entra and Okta write them.
func perUserGIDs(t *testing.T, srv *scimserver.Server) (posix int) {
	t.Helper()
	for _, u := range srv.Snapshot().Users {
		if u.POSIX == nil || u.POSIX.UIDNumber == nil {
			continue
		}
		posix++
		uid := *u.POSIX.UIDNumber
		if _, err := srv.UpdateUser(u.ID, func(x *scimserver.User) { x.POSIX.GIDNumber = scimserver.Int(uid) }); err != nil {
			t.Fatal(err)
		}
	}
	for i, g := range srv.Snapshot().Groups {
		if i >= 2 {
			srv.UpdateGroup(g.ID, func(x *scimserver.Group) { x.DisplayName = "Project Team " + x.DisplayName })
		}
	}
	return posix
}

// Issue 20: the minimal README config (base_url, token, preset,
// cache_path) publishes every POSIX user of both shapes: per-user gids
// without published groups, and a server that answers attributes= with
// 400; and both at once.
func TestMinimalConfigOnBothShapes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		faults  scimserver.Faults
		perUser bool
	}{
		{"per-user gids", scimserver.Faults{}, true},
		{"attributes rejected", scimserver.Faults{RejectAttributes: true}, false},
		{"both", scimserver.Faults{RejectAttributes: true}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := quirkEnv(t, scimserver.Options{Faults: tc.faults}, 300, 6, "")
			posix := 0
			for _, u := range e.srv.Snapshot().Users {
				if u.POSIX != nil {
					posix++
				}
			}
			if tc.perUser {
				perUserGIDs(t, e.srv)
			}
			out, err := e.syncer(t).Once(context.Background(), pipeline.Opts{})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range out.Valid.Rejections {
				if r.Reason != validate.MissingUID && r.Reason != validate.MissingGID {
					t.Errorf("rejected: %s", r)
				}
			}
			c, _, err := snapshot.Load(e.cache)
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Users) != posix {
				t.Fatalf("snapshot has %d users, the server %d POSIX users", len(c.Users), posix)
			}
			groups := map[uint32]string{}
			for _, g := range c.Groups {
				groups[g.GID] = g.Name
			}
			for _, u := range c.Users {
				if groups[u.GID] == "" {
					t.Errorf("%s: primary gid %d has no group", u.Name, u.GID)
				}
				if tc.perUser && (u.GID != u.UID || groups[u.GID] != u.Name) {
					t.Errorf("%s: uid %d gid %d group %q, want a private group", u.Name, u.UID, u.GID, groups[u.GID])
				}
			}
			if tc.perUser && groups[scimserver.GenGIDBase+2] != "project_team_"+strings.ToLower(e.srv.Snapshot().Groups[2].DisplayName[len("Project Team "):]) {
				t.Errorf("group with spaces: %v", groups)
			}
		})
	}
}

// check-config --online validates the first page: with private groups
// turned off on the per-user shape it reports the dominant rejection and
// the option that fixes it; with the defaults it says ok.
func TestCheckConfigFirstPage(t *testing.T) {
	e := quirkEnv(t, scimserver.Options{}, 100, 3, "private_groups = false")
	perUserGIDs(t, e.srv)
	rc := 0
	out := captureStdout(t, func() {
		rc = runMain([]string{"--config", e.cfgPath, "check-config", "--online"}, io.Discard, io.Discard)
	})
	if rc != 1 || !strings.Contains(out, "error: private_groups") || !strings.Contains(out, "primary-gid-unpublished") {
		t.Errorf("check-config --online, per-user gids, private_groups = false: rc %d\n%s", rc, out)
	}
	e = quirkEnv(t, scimserver.Options{}, 100, 3, "")
	perUserGIDs(t, e.srv)
	out = captureStdout(t, func() {
		rc = runMain([]string{"--config", e.cfgPath, "check-config", "--online"}, io.Discard, io.Discard)
	})
	if rc != 0 || strings.Contains(out, "error") || !strings.Contains(out, ": ok") {
		t.Errorf("check-config --online, per-user gids, defaults: rc %d\n%s", rc, out)
	}
}

// syncd explain --group shows the IdP name and the Linux name, found by
// either; an unmappable group shows why and the option.
func TestExplainGroupNames(t *testing.T) {
	e := quirkEnv(t, scimserver.Options{}, 20, 3, "")
	gs := e.srv.Snapshot().Groups
	e.srv.UpdateGroup(gs[2].ID, func(g *scimserver.Group) { g.DisplayName = "Sales Team EU" })
	if _, err := e.srv.UpsertGroup(scimserver.Group{DisplayName: "\u212aluster", GIDNumber: scimserver.Int(scimserver.GenGIDBase + 50)}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.syncer(t).Once(context.Background(), pipeline.Opts{}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"sales_team_eu", "Sales Team EU"} {
		out := captureStdout(t, func() {
			runMain([]string{"--config", e.cfgPath, "explain", "--group", q}, io.Discard, io.Discard)
		})
		if !strings.Contains(out, `IdP name "Sales Team EU" -> Linux name "sales_team_eu": published`) {
			t.Errorf("explain --group %q:\n%s", q, out)
		}
	}
	out := captureStdout(t, func() {
		runMain([]string{"--config", e.cfgPath, "explain", "--group", "\u212aluster"}, io.Discard, io.Discard)
	})
	if !strings.Contains(out, "no Linux name: rejected") || !strings.Contains(out, "(group_names.rename)") {
		t.Errorf("explain of an unmappable group:\n%s", out)
	}
}
