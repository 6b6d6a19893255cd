package validate

import (
	"strings"
	"testing"

	"github.com/scimbridge/scimbridge/syncd/names"
	"github.com/scimbridge/scimbridge/syncd/snapshot"
	"github.com/scimbridge/scimbridge/syncd/source"
)

func emailUser(id, userName string, uid int64) source.User {
	u := good(id, userName, uid)
	u.Home = "" // from the Linux name, as with most IdPs (no home attribute)
	return u
}

func published(res *Result) map[string]string {
	m := map[string]string{}
	for _, u := range res.Contents.Users {
		m[u.SCIMID] = u.Name
	}
	return m
}

func rejectionOf(res *Result, id string) Rejection {
	for _, r := range res.Rejections {
		if r.ID == id && r.Kind == KindUser {
			return r
		}
	}
	return Rejection{}
}

// Okta/Entra/AWS shapes publish with the default policy; login names that
// were valid before keep their spelling.
func TestUserNamesDefault(t *testing.T) {
	res := Directory(&source.Directory{Users: []source.User{
		emailUser("okta1", "alice@example.com", 20001),
		emailUser("entra1", "Bob.Smith@Contoso.onmicrosoft.com", 20002),
		emailUser("old1", "Carol", 20003),
		emailUser("old2", "host$", 20004),
		emailUser("aws1", "dan+hpc@example.com", 20005),
	}}, baseOpts())
	want := map[string]string{"okta1": "alice", "entra1": "bob.smith", "old1": "carol", "old2": "host$", "aws1": "dan_hpc"}
	got := published(res)
	for id, n := range want {
		if got[id] != n {
			t.Errorf("%s published as %q, want %q (rejections %v)", id, got[id], n, res.Rejections)
		}
	}
	for _, u := range res.Contents.Users {
		if u.SCIMID == "okta1" && u.Home != "/home/alice" {
			t.Errorf("home from the Linux name: %q", u.Home)
		}
	}
}

// Collisions between mapped names: the live holder keeps the name; else
// the user whose own userName it is; else none, and every refusal names
// the other records and the option.
func TestUserNameCollisions(t *testing.T) {
	// Two unlisted domains, no live snapshot: neither wins by id order.
	res := Directory(&source.Directory{Users: []source.User{
		emailUser("a", "alice@a.example", 20001), emailUser("b", "alice@b.example", 20002), emailUser("c", "carol", 20003),
	}}, baseOpts())
	if p := published(res); p["a"] != "" || p["b"] != "" || p["c"] != "carol" {
		t.Errorf("two alices: published %v", p)
	}
	for _, id := range []string{"a", "b"} {
		r := rejectionOf(res, id)
		if r.Reason != DuplicateName || !strings.Contains(r.Detail, `"alice@a.example"`) || !strings.Contains(r.Detail, `"alice@b.example"`) || !strings.Contains(r.Option, "user_names.domains") {
			t.Errorf("%s: %+v", id, r)
		}
	}

	// The user whose userName is the name keeps it.
	res = Directory(&source.Directory{Users: []source.User{
		emailUser("z", "alice", 20001), emailUser("b", "Alice@b.example", 20002),
	}}, baseOpts())
	if p := published(res); p["z"] != "alice" || p["b"] != "" {
		t.Errorf("own name: published %v %v", p, res.Rejections)
	}
	if r := rejectionOf(res, "b"); r.Reason != DuplicateName || !strings.Contains(r.Detail, `"alice" (id "z")`) || !strings.Contains(r.Option, "user_names.rename") {
		t.Errorf("loser: %+v", r)
	}

	// The live holder keeps it, even against the own claimant.
	live := &snapshot.Contents{Users: []snapshot.User{{Name: "alice", UID: 20002, GID: 20000, SCIMID: "b", Home: "/home/alice", Shell: "/bin/bash", Active: true}}}
	o := baseOpts()
	o.Live = live
	res = Directory(&source.Directory{Users: []source.User{
		emailUser("z", "alice", 20001), emailUser("b", "Alice@b.example", 20002),
	}}, o)
	if p := published(res); p["b"] != "alice" || p["z"] != "" {
		t.Errorf("live holder: published %v", p)
	}

	// A rename separates them.
	o = baseOpts()
	o.UserNames = names.DefaultUsers()
	o.UserNames.Rename = map[string]string{"alice@b.example": "alice_b"}
	res = Directory(&source.Directory{Users: []source.User{
		emailUser("a", "alice@a.example", 20001), emailUser("b", "alice@b.example", 20002),
	}}, o)
	if p := published(res); p["a"] != "alice" || p["b"] != "alice_b" {
		t.Errorf("rename: published %v %v", p, res.Rejections)
	}
}

// No mapping reaches a reserved name, a local account or a name listed on
// a local group line: every check runs on the Linux name.
func TestUserNameMappingNeverReachesLocal(t *testing.T) {
	o := baseOpts()
	o.Local.Members = map[string][]string{"wheelie": {"sudo"}}
	o.UserNames = names.DefaultUsers()
	o.UserNames.Rename = map[string]string{"mallory": "root"}
	for _, tc := range []struct{ userName, reason string }{
		{"ROOT@evil.example", ReservedName},
		{"root", ReservedName},
		{"mallory", ReservedName}, // a rename to root
		{"Slurm@example.com", ReservedName},
		{"systemd-network@example.com", ReservedName},
		{"LabAdmin@example.com", LocalClash},
		{"wheelie@example.com", LocalGroupMember},
		{"sudo@example.com", ReservedName},
		{"_apt@example.com", ReservedName},
	} {
		res := Directory(&source.Directory{Users: []source.User{emailUser("x", tc.userName, 20001)}}, o)
		if r := rejectionOf(res, "x"); r.Reason != tc.reason {
			t.Errorf("%q: %+v, want %s (published %v)", tc.userName, r, tc.reason, published(res))
		}
	}
}
