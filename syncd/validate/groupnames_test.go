package validate

import (
	"strings"
	"testing"

	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/snapshot"
	"github.com/scimbridge/scimbridge/syncd/source"
)

func groupNames(res *Result) map[string]string {
	m := map[string]string{}
	for _, g := range res.Contents.Groups {
		m[g.SCIMID] = g.Name
	}
	return m
}

// Group names as IdPs write them reach the snapshot under a mapped name;
// what cannot be mapped is refused naming the group_names key.
func TestGroupNamesMapped(t *testing.T) {
	users := []source.User{good("u1", "ann", 20001)}
	groups := []source.Group{
		{ID: "g1", DisplayName: "Sales Team EU", GID: i64(30001), MemberIDs: []string{"u1"}},
		{ID: "g2", DisplayName: "Research Computing Platform Engineering", GID: i64(30002), MemberIDs: []string{"u1"}},
		{ID: "g3", DisplayName: "équipe", GID: i64(30003), MemberIDs: []string{"u1"}},
		{ID: "g4", DisplayName: "Domain Users", GID: i64(30004)},
		{ID: "g5", DisplayName: "\u212Aluster", GID: i64(30005)},
	}
	res := Directory(&source.Directory{Users: users, Groups: groups}, baseOpts())
	got := groupNames(res)
	if got["g1"] != "sales_team_eu" || got["g3"] != "equipe" || got["g4"] != "domain_users" || len(got["g2"]) != 32 {
		t.Errorf("mapped names = %v", got)
	}
	r := reasonsByID(res)["g5"]
	if r.Reason != BadName || r.Option != "group_names.rename" || strings.Contains(r.Option, "user_name_domains") {
		t.Errorf("unmappable group: %+v", r)
	}
	// The rename map, by exact name and by id.
	o := baseOpts()
	o.GroupNames.Rename = map[string]string{"Domain Users": "domusers", "g1": "sales"}
	o.GroupNames.NonASCII, o.GroupNames.TooLong, o.GroupNames.Space, o.GroupNames.Other = "transliterate", "hash", "_", "_"
	got = groupNames(Directory(&source.Directory{Users: users, Groups: groups}, o))
	if got["g4"] != "domusers" || got["g1"] != "sales" {
		t.Errorf("renamed = %v", got)
	}
}

// Security: no mapping (folding, space, rename) makes a group a local or
// reserved name, and a look-alike never takes a name or selects users.
func TestGroupNamesCannotReachLocalOrReserved(t *testing.T) {
	o := baseOpts()
	o.Local.GroupNames["labgroup"] = true
	o.GroupNames.Rename = map[string]string{"Admins": "sudo", "Helpdesk": "labgroup", "Ops": "root", "DB": "labadmin"}
	o.GroupNames.NonASCII, o.GroupNames.TooLong, o.GroupNames.Space, o.GroupNames.Other = "transliterate", "hash", "_", "_"
	groups := []source.Group{
		{ID: "g1", DisplayName: "Admins", GID: i64(30001)},
		{ID: "g2", DisplayName: "Helpdesk", GID: i64(30002)},
		{ID: "g3", DisplayName: "Ops", GID: i64(30003)},
		{ID: "g4", DisplayName: "DB", GID: i64(30004)},
		{ID: "g5", DisplayName: "WHEEL", GID: i64(30005)},
		{ID: "g6", DisplayName: "Dócker", GID: i64(30006)},
		{ID: "g7", DisplayName: "LabGroup", GID: i64(30007)},
		{ID: "g8", DisplayName: "Systemd Journal", GID: i64(30008)},
	}
	res := Directory(&source.Directory{Groups: groups}, o)
	if len(res.Contents.Groups) != 1 || res.Contents.Groups[0].Name != "systemd_journal" {
		// systemd_journal is not systemd-journal; the default reserved
		// list matches systemd-*, so make sure nothing else got through.
		for _, g := range res.Contents.Groups {
			if g.Name != "systemd_journal" {
				t.Errorf("group %q (%s) published", g.Name, g.SCIMID)
			}
		}
	}
	r := reasonsByID(res)
	for id, want := range map[string]string{"g1": ReservedName, "g2": LocalClash, "g3": ReservedName, "g4": LocalClash, "g5": ReservedName, "g6": ReservedName, "g7": LocalClash} {
		if r[id].Reason != want {
			t.Errorf("%s: %q (%s), want %q", id, r[id].Reason, r[id].Detail, want)
		}
	}
}

// Two IdP names mapping to one Linux name: the live holder keeps it, else
// the group whose IdP name is exactly it, else no one; only the
// colliding groups are refused.
func TestGroupNameCollisions(t *testing.T) {
	other := source.Group{ID: "z9", DisplayName: "physics", GID: i64(30009)}
	dir := func(gs ...source.Group) *source.Directory { return &source.Directory{Groups: append(gs, other)} }
	exact := source.Group{ID: "b2", DisplayName: "sales_team", GID: i64(30002)}
	spaced := source.Group{ID: "a1", DisplayName: "Sales Team", GID: i64(30001)}
	upper := source.Group{ID: "c3", DisplayName: "SALES TEAM", GID: i64(30003)}

	res := Directory(dir(spaced, exact), baseOpts())
	if n := groupNames(res); n["b2"] != "sales_team" || n["a1"] != "" || n["z9"] != "physics" {
		t.Errorf("exact name does not win over the mapped one (a sorts first): %v", n)
	}
	res = Directory(dir(spaced, upper), baseOpts())
	r := reasonsByID(res)
	if n := groupNames(res); n["a1"] != "" || n["c3"] != "" || n["z9"] != "physics" || r["a1"].Reason != DuplicateName || r["c3"].Option != "group_names.rename" {
		t.Errorf("two mapped look-alikes: names %v, rejections %v", n, res.Rejections)
	}
	o := baseOpts()
	o.Live = &snapshot.Contents{Groups: []snapshot.Group{{Name: "sales_team", GID: 30003, SCIMID: "c3"}}}
	if n := groupNames(Directory(dir(spaced, upper), o)); n["c3"] != "sales_team" || n["a1"] != "" {
		t.Errorf("live holder does not keep its name: %v", n)
	}
}

// posix_groups is matched on the IdP's exact name or id: a group
// " slurm-users " (or "SLURM-USERS") holding an intruder makes no account,
// whether or not it is itself published.
func TestPosixGroupsLookAlike(t *testing.T) {
	users := []source.User{good("u1", "ann", 20001), good("u2", "mallory", 20002)}
	groups := []source.Group{
		{ID: "g1", DisplayName: "slurm-users", GID: i64(30001), MemberIDs: []string{"u1"}},
		{ID: "g2", DisplayName: " slurm-users ", GID: i64(30002), MemberIDs: []string{"u2"}},
		{ID: "g3", DisplayName: "SLURM-USERS", GID: i64(30003), MemberIDs: []string{"u2"}},
		{ID: "g4", DisplayName: "slurm-users\u200b", GID: i64(30004), MemberIDs: []string{"u2"}},
	}
	o := baseOpts()
	o.PosixGroups = []string{"slurm-users"}
	res := Directory(&source.Directory{Users: users, Groups: groups}, o)
	if len(res.Contents.Users) != 1 || res.Contents.Users[0].Name != "ann" {
		t.Fatalf("users = %+v, want ann only", res.Contents.Users)
	}
	n := groupNames(res)
	if n["g1"] != "slurm-users" || n["g3"] != "" {
		t.Errorf("the exact group must keep slurm-users and the folded one be refused: %v", n)
	}
}

// private_groups = "uid" (the default): a user whose gid is their own uid
// gets a private group when nothing else owns that gid; never a local
// group's gid, one below min_id, nor one a SCIM group holds.
func TestPrivateGroupWhenGIDIsUID(t *testing.T) {
	u := func(id, name string, uid, gid int64) source.User {
		x := good(id, name, uid)
		x.GID = i64(gid)
		return x
	}
	o := baseOpts()
	o.Local.GIDs[20005] = true
	groups := []source.Group{{ID: "g1", DisplayName: "bad\nname", GID: i64(20004)}}
	dir := &source.Directory{Users: []source.User{
		u("u1", "ann", 20001, 20001),
		u("u2", "ben", 20002, 20099),
		u("u4", "dan", 20004, 20004), // a rejected SCIM group holds the gid
		u("u5", "eve", 20005, 20005), // a local group has it
	}, Groups: groups}
	res := Directory(dir, o)
	r := reasonsByID(res)
	if r["u1"].Reason != "" || r["u2"].Reason != PrimaryGIDUnpublished || r["u4"].Reason != PrimaryGIDUnpublished || r["u5"].Reason != PrimaryGIDLocal {
		t.Errorf("rejections: %v", res.Rejections)
	}
	found := false
	for _, g := range res.Contents.Groups {
		if g.Name == "ann" && g.GID == 20001 {
			found = true
		}
	}
	if !found || res.Synthesised != 1 {
		t.Errorf("no private group for ann: %+v (synthesised %d)", res.Contents.Groups, res.Synthesised)
	}
	o.PrivateGroups = config.PrivateGroupsOff
	if r := reasonsByID(Directory(dir, o)); r["u1"].Reason != PrimaryGIDUnpublished {
		t.Errorf("private_groups = false still made a private group: %+v", r["u1"])
	}
}
