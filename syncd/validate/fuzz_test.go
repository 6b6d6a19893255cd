package validate

import (
	"fmt"
	"path"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/snapshot"
	"github.com/scimbridge/scimbridge/syncd/source"
)

// FuzzDirectory validates small directories made of fuzzed values (three
// users, two groups) as `go test -fuzz=FuzzDirectory`; the seeds run as
// an ordinary test. Whatever comes in, what is published must be safe:
// names POSIX, unreserved and unique; ids at or above the floor, in
// range and unique; primary gids published or shared, never local;
// homes inside the roots and clear of system paths, local homes and each
// other; members published users; every rejection named with its
// option. And the result must not depend on the listing order.
func FuzzDirectory(f *testing.F) {
	f.Add("alice", "Bob", "carol", "/home/alice", "/home/bob", "", int64(20001), int64(20002), int64(20000), int64(30001), "slurm-users", "physics", int64(20000), int64(30001), "/bin/bash", "u1,u2")
	f.Add("SLURM", "root", "ghost", "/etc/systemd/system/ssh.service.d", "/root", "/var/lib/scimbridge", int64(42), int64(0), int64(27), int64(6), "SLURM-USERS", "slurm-users", int64(20000), int64(20000), "/bin/sh", "u3")
	f.Add("ann", "ann", "ANN", "/home/ann", "/home/ann", "/home/ann/x", int64(20001), int64(20001), int64(20000), int64(10998), "docker", "wheel", int64(30001), int64(30002), "/bin/zsh", "u1,u1,u9")
	f.Add("a\u212a", "b\x00", "c:d", "/home/../etc", "/home//x", "/home", int64(65534), int64(4294967295), int64(-1), int64(1<<40), "", "Systemd-Journal", int64(100), int64(65535), "/bin/bash -i", ",")
	f.Fuzz(func(t *testing.T, n1, n2, n3, h1, h2, h3 string, uid1, uid2, gid1, gid2 int64, gn1, gn2 string, gg1, gg2 int64, shell, members string) {
		users := []source.User{
			{ID: "u1", UserName: n1, UID: &uid1, GID: &gid1, Home: h1, Shell: shell},
			{ID: "u2", UserName: n2, UID: &uid2, GID: &gid2, Home: h2, Shell: "/bin/bash"},
			{ID: "u3", UserName: n3, UID: &uid1, GID: &gg1, Home: h3},
		}
		groups := []source.Group{
			{ID: "g1", DisplayName: gn1, GID: &gg1, MemberIDs: strings.Split(members, ",")},
			{ID: "g2", DisplayName: gn2, GID: &gg2, MemberIDs: []string{"u1", "u3"}},
		}
		o := baseOpts()
		o.SharedPrimaryGIDs = []int64{20000}
		o.Local.Members = map[string][]string{"ghost": {"sudo"}}
		o.Local.Homes = map[string]string{"/home/labadmin": "labadmin"}
		o.Live = &snapshot.Contents{Users: []snapshot.User{{Name: "carol", UID: 20003, Home: "/home/carol", SCIMID: "u3"}}}
		res := Directory(&source.Directory{Users: users, Groups: groups}, o)
		checkSafe(t, res, o)
		po := o
		po.PrivateGroups = config.PrivateGroupsAll
		checkSafe(t, Directory(&source.Directory{Users: users, Groups: groups}, po), po)

		// Listing order must not matter.
		slices.Reverse(users)
		slices.Reverse(groups)
		again := Directory(&source.Directory{Users: users, Groups: groups}, o)
		if !reflect.DeepEqual(res.Contents, again.Contents) {
			t.Fatalf("result depends on listing order:\n%+v\n%+v", res.Contents, again.Contents)
		}
	})
}

func checkSafe(t *testing.T, res *Result, o Options) {
	t.Helper()
	o = o.withDefaults()
	names, uids, homes, gids := map[string]bool{}, map[uint32]bool{}, map[string]bool{}, map[uint32]bool{}
	for _, g := range res.Contents.Groups {
		if checkName(g.Name) != "" || config.ReservedMatch(g.Name, o.ReservedNames) != "" || o.Local.GroupNames[g.Name] {
			t.Fatalf("group name %q published", g.Name)
		}
		if int64(g.GID) < o.MinID || int64(g.GID) < o.GIDMin || int64(g.GID) > o.GIDMax || o.Local.GIDs[int64(g.GID)] || gids[g.GID] {
			t.Fatalf("group gid %d published (%+v)", g.GID, res.Contents.Groups)
		}
		gids[g.GID] = true
	}
	for _, u := range res.Contents.Users {
		if checkName(u.Name) != "" || config.ReservedMatch(u.Name, o.ReservedNames) != "" || o.Local.UserNames[u.Name] || len(o.Local.Members[u.Name]) > 0 || names[u.Name] {
			t.Fatalf("user name %q published", u.Name)
		}
		if int64(u.UID) < o.MinID || int64(u.UID) < o.UIDMin || int64(u.UID) > o.UIDMax || o.Local.UIDs[int64(u.UID)] || uids[u.UID] || u.UID == 65534 || u.UID == 65535 {
			t.Fatalf("uid %d published", u.UID)
		}
		if !gids[u.GID] && !slices.Contains(o.SharedPrimaryGIDs, int64(u.GID)) &&
			!(o.PrivateGroups == config.PrivateGroupsAll && slices.ContainsFunc(res.Rejections, func(r Rejection) bool { return r.Reason == PrivateClashes && r.Name == u.Name })) {
			t.Fatalf("primary gid %d published for %s: no group has it and it is not shared", u.GID, u.Name)
		}
		if o.PrivateGroups == config.PrivateGroupsAll && !slices.Contains(o.SharedPrimaryGIDs, int64(u.GID)) {
			for _, g := range res.Contents.Groups {
				if g.GID == u.GID && g.SCIMID == "" && g.Name != u.Name {
					t.Fatalf("user %s has the private group of %s as primary group", u.Name, g.Name)
				}
			}
		}
		if path.Clean(u.Home) != u.Home || config.SystemPathClash(u.Home, o.Protected) != "" || homes[u.Home] {
			t.Fatalf("home %q published", u.Home)
		}
		inRoot := false
		for _, r := range o.HomeRoots {
			inRoot = inRoot || (config.Within(u.Home, r) && u.Home != r)
		}
		if !inRoot && o.HomeTemplate == "" {
			t.Fatalf("home %q outside the roots published", u.Home)
		}
		for lh := range o.Local.Homes {
			if config.Within(u.Home, lh) || config.Within(lh, u.Home) {
				t.Fatalf("home %q overlaps the local home %s", u.Home, lh)
			}
		}
		names[u.Name], uids[u.UID], homes[u.Home] = true, true, true
	}
	for _, u := range res.Contents.Users {
		for h := range homes {
			if h != u.Home && config.Within(h, u.Home) {
				t.Fatalf("homes %q and %q nest", u.Home, h)
			}
		}
	}
	for _, g := range res.Contents.Groups {
		for _, m := range g.Members {
			if !names[m] {
				t.Fatalf("group %s has member %q who is not published", g.Name, m)
			}
		}
	}
	for _, r := range res.Rejections {
		if r.Reason == "" || r.Option == "" {
			t.Fatalf("rejection without a reason or option: %s", fmt.Sprint(r))
		}
	}
}
