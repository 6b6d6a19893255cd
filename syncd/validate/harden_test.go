package validate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/snapshot"
	"github.com/scimbridge/scimbridge/syncd/source"
)

// reasonsByID maps source ids to their rejection (user and group records).
func reasonsByID(res *Result) map[string]Rejection {
	m := map[string]Rejection{}
	for _, r := range res.Rejections {
		if r.Kind == KindUser || r.Kind == KindGroup {
			m[r.ID] = r
		}
	}
	return m
}

func TestHomes(t *testing.T) {
	o := baseOpts()
	o.Local.Homes = map[string]string{"/home/labadmin": "labadmin", "/var/lib/slurm": "slurm", "/home": "syslogish"}
	o.HomeRoots = []string{"/home", "/scratch/home"}
	for _, tc := range []struct{ home, reason string }{
		{"/home/bob", ""},
		{"/scratch/home/bob", ""},
		{"/home/bob/deeper", ""},
		{"/etc/systemd/system/ssh.service.d", HomeSystemPath},
		{"/etc", HomeSystemPath},
		{"/root", HomeSystemPath},
		{"/var/lib/scimbridge", HomeSystemPath},
		{"/var", HomeSystemPath}, // contains /var/lib
		{"/usr/local/bob", HomeSystemPath},
		{"/home", HomeOutsideRoots},
		{"/scratch/home", HomeOutsideRoots},
		{"/srv/bob", HomeOutsideRoots},
		{"/homework/bob", HomeOutsideRoots},
		{"/home/labadmin", HomeTaken},
		{"/home/labadmin/.ssh", HomeTaken},
		{"/home/alice", DuplicateHome}, // alice's, who sorts first
		{"/home/alice/sub", HomeTaken}, // inside alice's
		{"/home/./bob", BadHome},       // not clean
		{"/home//bob", BadHome},        // not clean
		{"/home/../etc/bob", BadHome},  // ..
		{"/home/bob/", BadHome},        // trailing slash
	} {
		bob := good("id-bob", "bob", 20001)
		bob.Home = tc.home
		res := Directory(&source.Directory{Users: []source.User{good("id-alice", "alice", 20002), bob}}, o)
		r := reasonsByID(res)
		if r["id-bob"].Reason != tc.reason {
			t.Errorf("home %q: reason %q (%s), want %q", tc.home, r["id-bob"].Reason, r["id-bob"].Detail, tc.reason)
		}
		if _, ok := r["id-alice"]; ok {
			t.Errorf("home %q: alice rejected too: %v", tc.home, r["id-alice"])
		}
		if tc.reason != "" && r["id-bob"].Option == "" {
			t.Errorf("home %q: rejection names no option", tc.home)
		}
	}

	// A home from home_template need not be inside home_roots, but is
	// still never a system path.
	o.HomeTemplate = "/mnt/u/%u"
	bob := good("id-bob", "bob", 20001)
	bob.Home = "/etc"
	res := Directory(&source.Directory{Users: []source.User{bob}}, o)
	if len(res.Contents.Users) != 1 || res.Contents.Users[0].Home != "/mnt/u/bob" {
		t.Errorf("template home: %+v %v", res.Contents.Users, res.Rejections)
	}
	o.HomeTemplate = "/%u"
	etc := good("id-etc", "etc", 20003)
	res = Directory(&source.Directory{Users: []source.User{etc}}, o)
	if r := reasonsByID(res)["id-etc"]; r.Reason != HomeSystemPath {
		t.Errorf("user etc with template /%%u: %+v", r)
	}
}

// The one already in the live snapshot keeps its home; a newcomer whose
// home nests with it is the one rejected, whatever the ids.
func TestNestedHomesLiveKeeps(t *testing.T) {
	o := baseOpts()
	o.Live = &snapshot.Contents{Users: []snapshot.User{{Name: "zed", UID: 20009, GID: 20000, Home: "/home/grp/zed", SCIMID: "z"}}}
	zed := good("z", "zed", 20009)
	zed.Home = "/home/grp/zed"
	att := good("a", "att", 20010)
	att.Home = "/home/grp"
	res := Directory(&source.Directory{Users: []source.User{zed, att}}, o)
	r := reasonsByID(res)
	if r["a"].Reason != HomeTaken || r["z"].Reason != "" {
		t.Errorf("nested homes: %v", res.Rejections)
	}
}

func TestReservedAndLocalMembers(t *testing.T) {
	o := baseOpts()
	o.Local.Members = map[string][]string{"ghost": {"sudo"}}
	users := []source.User{good("u1", "ghost", 20001), good("u2", "Docker", 20002), good("u3", "ann", 20003)}
	groups := []source.Group{
		{ID: "g1", DisplayName: "WHEEL", GID: i64(30001), MemberIDs: []string{"u3"}},
		{ID: "g2", DisplayName: "libvirt", GID: i64(30002), MemberIDs: []string{"u3"}},
		{ID: "g3", DisplayName: "physics", GID: i64(30003), MemberIDs: []string{"u3"}},
	}
	res := Directory(&source.Directory{Users: users, Groups: groups}, o)
	r := reasonsByID(res)
	if r["u1"].Reason != LocalGroupMember || !strings.Contains(r["u1"].Detail, "sudo") {
		t.Errorf("ghost: %+v", r["u1"])
	}
	if r["u2"].Reason != ReservedName || r["g1"].Reason != ReservedName || r["g2"].Reason != ReservedName {
		t.Errorf("reserved: %v", res.Rejections)
	}
	if len(res.Contents.Users) != 1 || len(res.Contents.Groups) != 1 || res.Contents.Groups[0].Name != "physics" {
		t.Errorf("the rest did not land: %+v %+v", res.Contents.Users, res.Contents.Groups)
	}
	// An explicit list replaces the default, but root stays reserved.
	o.ReservedNames = []string{"chem*"}
	res = Directory(&source.Directory{Users: []source.User{good("u2", "docker", 20002), good("u4", "Chemist", 20004), good("u5", "root", 20005)}}, o)
	r = reasonsByID(res)
	if r["u2"].Reason != "" || r["u4"].Reason != ReservedName || r["u5"].Reason != ReservedName {
		t.Errorf("custom reserved_names: %v", res.Rejections)
	}
}

func TestPrimaryGIDs(t *testing.T) {
	o := baseOpts()
	o.SharedPrimaryGIDs = []int64{10998}
	o.Local.GroupByGID = map[int64]string{100: "users", 10998: "hpc"}
	groups := []source.Group{
		{ID: "g1", DisplayName: "team", GID: i64(30001)},
		{ID: "g2", DisplayName: "bad\nname", GID: i64(30002)},
	}
	for _, tc := range []struct {
		gid    int64
		reason string
	}{
		{30001, ""},                    // published
		{10998, ""},                    // shared (and local)
		{42, BelowMinID},               // shadow
		{100, BelowMinID},              // users
		{30002, PrimaryGIDUnpublished}, // its group was rejected
		{30099, PrimaryGIDUnpublished}, // no group
	} {
		u := good("u", "bob", 20001)
		u.GID = i64(tc.gid)
		res := Directory(&source.Directory{Users: []source.User{u}, Groups: groups}, o)
		if got := reasonsByID(res)["u"]; got.Reason != tc.reason {
			t.Errorf("gid %d: %q (%s), want %q", tc.gid, got.Reason, got.Detail, tc.reason)
		}
	}
	o.SharedPrimaryGIDs = nil
	u := good("u", "bob", 20001)
	u.GID = i64(10998)
	if got := reasonsByID(Directory(&source.Directory{Users: []source.User{u}}, o))["u"]; got.Reason != PrimaryGIDLocal || !strings.Contains(got.Detail, "hpc") {
		t.Errorf("local gid in range: %+v", got)
	}
}

// SLURM-USERS created next to slurm-users: only the newcomer is rejected,
// members keep slurm-users; a malformed group rejects only itself.
func TestGroupCaseCollision(t *testing.T) {
	o := baseOpts()
	users := []source.User{good("u1", "ann", 20001), good("u2", "ben", 20002)}
	groups := []source.Group{
		{ID: "g-new", DisplayName: "SLURM-USERS", GID: i64(30009), MemberIDs: []string{"u2"}},
		{ID: "g-old", DisplayName: "slurm-users", GID: i64(30001), MemberIDs: []string{"u1", "u2"}},
		{ID: "g-bad", DisplayName: "broken", GID: i64(30002), Malformed: map[string]string{"members": "not a list"}},
	}
	o.Live = &snapshot.Contents{Groups: []snapshot.Group{{Name: "slurm-users", GID: 30001, SCIMID: "g-old"}}}
	res := Directory(&source.Directory{Users: users, Groups: groups}, o)
	r := reasonsByID(res)
	if r["g-new"].Reason != DuplicateName || r["g-old"].Reason != "" || r["g-bad"].Reason != BadMembers {
		t.Errorf("rejections: %v", res.Rejections)
	}
	if len(res.Contents.Groups) != 1 || strings.Join(res.Contents.Groups[0].Members, ",") != "ann,ben" || len(res.Contents.Users) != 2 {
		t.Errorf("contents: %+v", res.Contents)
	}
}

func TestReadLocalMembersAndHomes(t *testing.T) {
	dir := t.TempDir()
	pw := filepath.Join(dir, "passwd")
	gr := filepath.Join(dir, "group")
	os.WriteFile(pw, []byte("root:x:0:0:root:/root:/bin/bash\nsyslog:x:104:110::/home/syslog:/usr/sbin/nologin\nd:x:2:2::/:/bin/false\n"), 0o644)
	os.WriteFile(gr, []byte("sudo:x:27:Ghost,bob\nadm:x:4:ghost\n"), 0o644)
	l, err := ReadLocal(pw, gr)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(l.Members["ghost"], ",") != "sudo,adm" || l.Homes["/root"] != "root" || l.Homes["/home/syslog"] != "syslog" || l.Homes["/"] != "" || l.GroupByGID[27] != "sudo" {
		t.Errorf("local = %+v", l)
	}
}

// With private_groups, two users with one unpublished gid: the second
// would get the first one's private group as primary group.
func TestPrivateGroupShared(t *testing.T) {
	o := baseOpts()
	o.PrivateGroups = config.PrivateGroupsAll
	bob, eve := good("u-bob", "bob", 20001), good("u-eve", "eve", 20002)
	bob.GID, eve.GID = i64(30099), i64(30099)
	res := Directory(&source.Directory{Users: []source.User{eve, bob}}, o)
	r := reasonsByID(res)
	if r["u-bob"].Reason != "" || r["u-eve"].Reason != DuplicateGID || res.Synthesised != 1 {
		t.Errorf("rejections %v synthesised %d", res.Rejections, res.Synthesised)
	}
	// eve holds it in the live snapshot: bob is the newcomer.
	o.Live = &snapshot.Contents{Users: []snapshot.User{{Name: "eve", UID: 20002, GID: 30099, SCIMID: "u-eve"}}, Groups: []snapshot.Group{{Name: "eve", GID: 30099}}}
	r = reasonsByID(Directory(&source.Directory{Users: []source.User{eve, bob}}, o))
	if r["u-eve"].Reason != "" || r["u-bob"].Reason != DuplicateGID {
		t.Errorf("live holder: %v", r)
	}
}
