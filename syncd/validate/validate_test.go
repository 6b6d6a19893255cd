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

const (
	ed1 = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl alice@laptop"
	ed2 = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAILmkjRR6mvCfuqOwqU1IyQzZyPvpF5HvPkJ4s4Jq0K7N"
)

func i64(n int64) *int64 { return &n }
func bp(b bool) *bool    { return &b }

func baseOpts() Options {
	return Options{
		UIDMin: 10000, UIDMax: 60000, GIDMin: 10000, GIDMax: 60000,
		DefaultShell: "/bin/bash", AllowedShells: []string{"/bin/bash", "/bin/zsh"},
		// The tests' users share gid 20000 without a group publishing it.
		SharedPrimaryGIDs: []int64{20000},
		Local: &Local{
			UserNames: map[string]bool{"root": true, "slurm": true, "labadmin": true}, UIDs: map[int64]bool{0: true, 64030: true, 10999: true},
			GroupNames: map[string]bool{"root": true, "users": true}, GIDs: map[int64]bool{0: true, 100: true, 10998: true},
		},
	}
}

func good(id, name string, uid int64) source.User {
	return source.User{ID: id, UserName: name, UID: i64(uid), GID: i64(20000), Home: "/home/" + strings.ToLower(name), Shell: "/bin/bash"}
}

// One bad record per row, each next to a good one: the bad one is
// rejected with the named reason and the good one survives.
func TestUserRejections(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(u *source.User)
		reason string
	}{
		{"uppercase folds", func(u *source.User) { u.UserName = "Bob" }, ""},
		{"email name maps to its local part", func(u *source.User) { u.UserName = "bob@example.com" }, ""},
		{"colon in name is mapped", func(u *source.User) { u.UserName = "bo:b" }, ""},
		{"newline in name", func(u *source.User) { u.UserName = "bob\nroot::0:0::/:/bin/sh" }, BadName},
		{"NUL in name", func(u *source.User) { u.UserName = "bob\x00" }, BadName},
		{"leading digit gets a letter", func(u *source.User) { u.UserName = "1bob" }, ""},
		{"leading dash gets a letter", func(u *source.User) { u.UserName = "-bob" }, ""},
		{"33 chars are cut and hashed", func(u *source.User) { u.UserName = strings.Repeat("b", 33) }, ""},
		{"32 chars ok", func(u *source.User) { u.UserName = strings.Repeat("b", 32) }, ""},
		{"dollar at end ok", func(u *source.User) { u.UserName = "bob$" }, ""},
		{"dollar inside is mapped", func(u *source.User) { u.UserName = "b$ob" }, ""},
		{"accented name transliterated", func(u *source.User) { u.UserName = "böb" }, ""},
		{"Kelvin sign refused", func(u *source.User) { u.UserName = "\u212Aob" }, BadName},
		{"full-width refused", func(u *source.User) { u.UserName = "ｂob" }, BadName},
		{"email of root is reserved", func(u *source.User) { u.UserName = "Root@example.com" }, ReservedName},
		{"email of a local account clashes", func(u *source.User) { u.UserName = "labadmin@example.com" }, LocalClash},
		{"empty name", func(u *source.User) { u.UserName = "" }, MissingName},
		{"no uid", func(u *source.User) { u.UID = nil }, MissingUID},
		{"uid 0", func(u *source.User) { u.UID = i64(0) }, UIDZero},
		{"negative uid", func(u *source.User) { u.UID = i64(-1) }, UIDOutOfRange},
		{"uid below floor", func(u *source.User) { u.UID = i64(999) }, BelowMinID},
		{"uid below range", func(u *source.User) { u.UID = i64(5000) }, UIDOutOfRange},
		{"uid above range", func(u *source.User) { u.UID = i64(4294967295) }, UIDOutOfRange},
		{"malformed uid", func(u *source.User) { u.UID = nil; u.Malformed = map[string]string{"uid": `not an integer: "12a"`} }, BadUID},
		{"no gid", func(u *source.User) { u.GID = nil }, MissingGID},
		{"gid 0", func(u *source.User) { u.GID = i64(0) }, GIDZero},
		{"gid below floor", func(u *source.User) { u.GID = i64(5) }, BelowMinID},
		{"gid out of range", func(u *source.User) { u.GID = i64(5000) }, GIDOutOfRange},
		{"gid of local group refused", func(u *source.User) { u.GID = i64(100) }, BelowMinID},
		{"gid of local group in range refused", func(u *source.User) { u.GID = i64(10998) }, PrimaryGIDLocal},
		{"gid no group publishes", func(u *source.User) { u.GID = i64(20099) }, PrimaryGIDUnpublished},
		{"local name", func(u *source.User) { u.UserName = "labadmin" }, LocalClash},
		{"local name case", func(u *source.User) { u.UserName = "LabAdmin" }, LocalClash},
		{"root is reserved", func(u *source.User) { u.UserName = "root" }, ReservedName},
		{"reserved name any case", func(u *source.User) { u.UserName = "SLURM" }, ReservedName},
		{"reserved prefix", func(u *source.User) { u.UserName = "Systemd-Network" }, ReservedName},
		{"local uid", func(u *source.User) { u.UID = i64(10999) }, LocalClash},
		{"relative home", func(u *source.User) { u.Home = "home/bob" }, BadHome},
		{"dotdot home", func(u *source.User) { u.Home = "/home/../etc" }, BadHome},
		{"root home", func(u *source.User) { u.Home = "/" }, BadHome},
		{"colon home", func(u *source.User) { u.Home = "/home/b:ob" }, BadHome},
		{"newline home", func(u *source.User) { u.Home = "/home/bob\n" }, BadHome},
		{"unclean home", func(u *source.User) { u.Home = "/home//bob/" }, BadHome},
		{"empty home defaults", func(u *source.User) { u.Home = "" }, ""},
		{"shell not allowed", func(u *source.User) { u.Shell = "/bin/evil" }, BadShell},
		{"relative shell", func(u *source.User) { u.Shell = "bash" }, BadShell},
		{"empty shell defaults", func(u *source.User) { u.Shell = "" }, ""},
		{"inactive kept", func(u *source.User) { u.Active = bp(false) }, ""},
		{"bad gecos dropped, user kept", func(u *source.User) { u.GECOS = "Bob, Room 4" }, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bad := good("id-bad", "bob", 20001)
			tc.mutate(&bad)
			dir := &source.Directory{Users: []source.User{good("id-ok", "alice", 20002), bad}}
			res := Directory(dir, baseOpts())
			var userRej []Rejection
			for _, r := range res.Rejections {
				if r.Kind == KindUser {
					userRej = append(userRej, r)
				}
			}
			if tc.reason == "" {
				if len(userRej) != 0 || len(res.Contents.Users) != 2 {
					t.Fatalf("want both users kept, got %d users, rejections %v", len(res.Contents.Users), userRej)
				}
				return
			}
			if len(userRej) != 1 || userRej[0].Reason != tc.reason || userRej[0].ID != "id-bad" {
				t.Fatalf("want one %s rejection of id-bad, got %v", tc.reason, userRej)
			}
			if len(res.Contents.Users) != 1 || res.Contents.Users[0].Name != "alice" {
				t.Fatalf("the good user did not survive: %+v", res.Contents.Users)
			}
		})
	}
}

// The same directory validated again (the daemon's next poll) gives the
// same keys and rejections: the second and third rounds take accepted
// keys from the key memo (keys.go), rejected ones are checked again.
func TestKeptUserFields(t *testing.T) {
	for round := 0; round < 3; round++ {
		u := good("id1", "Carol", 20010)
		u.GECOS = "Carol Smith, Room 4"
		u.Active = bp(false)
		u.Shell = ""
		u.SSHKeys = []string{ed1, "garbage", ed1, `command="/bin/sh" ` + ed2, ed2 + "\n" + "ssh-rsa AAAAnope", "\x00unreadable value 42"}
		o := baseOpts()
		o.HomeTemplate = "/mnt/home/%u"
		res := Directory(&source.Directory{Users: []source.User{u}}, o)
		if len(res.Contents.Users) != 1 {
			t.Fatalf("user rejected: %v", res.Rejections)
		}
		got := res.Contents.Users[0]
		if got.Name != "carol" || got.Home != "/mnt/home/carol" || got.Shell != "/bin/bash" || got.Active || got.GECOS != "" {
			t.Errorf("user = %+v", got)
		}
		if len(got.SSHKeys) != 2 || got.SSHKeys[0] != ed1 || got.SSHKeys[1] != ed2 {
			t.Errorf("round %d: keys = %q, want the two good ones once each", round, got.SSHKeys)
		}
		counts := res.Counts()
		if counts[BadSSHKey] != 4 || counts[BadGECOS] != 1 {
			t.Errorf("round %d: counts = %v, want 4 bad-ssh-key (garbage, options, bad rsa line, unreadable) and 1 bad-gecos", round, counts)
		}
	}
}

// Of the holders of a duplicate, only the offenders are rejected: the
// one whose SCIM id sorts first keeps it, whatever order they come in,
// unless another holds it in the live snapshot.
func TestDuplicates(t *testing.T) {
	a, b, c := good("a", "ann", 20001), good("b", "ben", 20001), good("c", "Ann", 20003)
	for _, order := range [][]source.User{{a, b, c, good("d", "dan", 20004)}, {good("d", "dan", 20004), c, b, a}} {
		res := Directory(&source.Directory{Users: order}, baseOpts())
		if len(res.Contents.Users) != 2 || res.Contents.Users[0].Name != "ann" || res.Contents.Users[0].SCIMID != "a" || res.Contents.Users[1].Name != "dan" {
			t.Fatalf("users = %+v", res.Contents.Users)
		}
		reasons := map[string]string{}
		for _, r := range res.Rejections {
			reasons[r.ID] = r.Reason
		}
		if reasons["a"] != "" || reasons["b"] != DuplicateUID || reasons["c"] != DuplicateName {
			t.Errorf("reasons = %v", reasons)
		}
	}
	// "c" holds "ann" in the live snapshot: it keeps the name, "a" is the
	// newcomer and is rejected.
	o := baseOpts()
	o.Live = &snapshot.Contents{Users: []snapshot.User{{Name: "ann", UID: 20003, GID: 20000, Home: "/home/ann", SCIMID: "c"}}}
	c.Home = "/home/ann"
	res := Directory(&source.Directory{Users: []source.User{a, c}}, o)
	if len(res.Contents.Users) != 1 || res.Contents.Users[0].SCIMID != "c" || len(res.Rejections) != 1 || res.Rejections[0].ID != "a" ||
		!strings.Contains(res.Rejections[0].Detail, "holds it in the live snapshot") {
		t.Fatalf("live holder: users %+v rejections %v", res.Contents.Users, res.Rejections)
	}
}

func TestGroupsAndMembers(t *testing.T) {
	users := []source.User{good("u1", "ann", 20001), good("u2", "ben", 20002), good("u3", "bad:name", 20003)}
	users[1].GID = i64(30099) // no group has it
	groups := []source.Group{
		{ID: "g1", DisplayName: "Physics", GID: i64(30001), MemberIDs: []string{"u1", "u2", "u3", "unknown", "u1"}},
		{ID: "g2", DisplayName: "slurm users", GID: i64(30002)},
		{ID: "g3", DisplayName: "chem", GID: i64(30003)},
		{ID: "g4", DisplayName: "bio", GID: i64(30003)},
		{ID: "g5", DisplayName: "users", GID: i64(30005)},
		{ID: "g6", DisplayName: "nogid"},
		{ID: "g7", DisplayName: "ann", GID: i64(20000)},
	}
	o := baseOpts()
	o.PrivateGroups = config.PrivateGroupsAll
	res := Directory(&source.Directory{Users: users, Groups: groups}, o)
	byName := map[string][]string{}
	for _, g := range res.Contents.Groups {
		byName[g.Name] = g.Members
	}
	if m, ok := byName["physics"]; !ok || strings.Join(m, ",") != "ann,ben" {
		t.Errorf("physics members = %v (present %v), want ann,ben", m, ok)
	}
	if _, ok := byName["ben"]; !ok {
		t.Errorf("no private group for ben's gid 30099: %v", byName)
	}
	reasons := map[string]string{}
	for _, r := range res.Rejections {
		if r.Kind == KindGroup {
			reasons[r.ID] = r.Reason
		}
	}
	// "slurm users" is published under its mapped name (group_names.space).
	if _, ok := byName["slurm_users"]; !ok {
		t.Errorf("group \"slurm users\" not published as slurm_users: %v", byName)
	}
	want := map[string]string{"g2": "", "g3": "", "g4": DuplicateGID, "g5": ReservedName, "g6": MissingGID}
	for id, r := range want {
		if reasons[id] != r {
			t.Errorf("group %s: reason %q, want %q", id, reasons[id], r)
		}
	}
	if res.DroppedMembers != 2 {
		t.Errorf("dropped members = %d, want 2 (rejected user and unknown id)", res.DroppedMembers)
	}
}

func TestPosixGroupsFilter(t *testing.T) {
	users := []source.User{good("u1", "ann", 20001), good("u2", "ben", 20002), good("u3", "cat", 20003)}
	groups := []source.Group{
		{ID: "g1", DisplayName: "Slurm-Users", MemberIDs: []string{"u1"}}, // a marker group without gid still selects
		{ID: "g2", DisplayName: "slurm-sudo", GID: i64(30002), MemberIDs: []string{"u2", "u3"}},
	}
	o := baseOpts()
	o.PosixGroups = []string{"Slurm-Users", "slurm-sudo"}
	res := Directory(&source.Directory{Users: users, Groups: groups}, o)
	if len(res.Contents.Users) != 3 || res.Filtered != 0 {
		t.Fatalf("users %d filtered %d", len(res.Contents.Users), res.Filtered)
	}
	// Matching is exact (IdP name or id): a folded or trimmed spelling
	// selects no one, and the startup hint names the look-alike.
	o.PosixGroups = []string{"slurm-users", "slurm-sudo "}
	res = Directory(&source.Directory{Users: users, Groups: groups}, o)
	if len(res.Contents.Users) != 0 || res.Filtered != 3 {
		t.Fatalf("folded posix_groups selected users %+v", res.Contents.Users)
	}
	if h := PosixGroupHints(&source.Directory{Users: users, Groups: groups}, o.PosixGroups); len(h) != 2 || !strings.Contains(h[0].String(), `"Slurm-Users"`) {
		t.Errorf("hints = %q", h)
	}
	if r := res.Rejections; len(r) < 2 || r[0].Kind != KindConfig || r[0].Option != "posix_groups" {
		t.Errorf("no migration hint among the rejections: %v", r)
	}
	o.PosixGroups = []string{"g1"} // by SCIM id
	res = Directory(&source.Directory{Users: users, Groups: groups}, o)
	if len(res.Contents.Users) != 1 || res.Contents.Users[0].Name != "ann" || res.Filtered != 2 {
		t.Fatalf("users %+v filtered %d, want only ann", res.Contents.Users, res.Filtered)
	}
	for _, g := range res.Contents.Groups {
		if g.Name == "slurm-sudo" && len(g.Members) != 0 {
			t.Errorf("slurm-sudo keeps filtered members %v", g.Members)
		}
	}
}

func TestReadLocal(t *testing.T) {
	dir := t.TempDir()
	pw := filepath.Join(dir, "passwd")
	gr := filepath.Join(dir, "group")
	os.WriteFile(pw, []byte("root:x:0:0:root:/root:/bin/bash\n# comment\n+nis\nAlice:x:1000:1000::/home/alice:/bin/sh\n"), 0o644)
	os.WriteFile(gr, []byte("root:x:0:\nusers:x:100:alice,bob\n"), 0o644)
	l, err := ReadLocal(pw, gr)
	if err != nil {
		t.Fatal(err)
	}
	if !l.UserNames["alice"] || !l.UIDs[1000] || !l.GroupNames["users"] || !l.GIDs[100] || l.UserNames["+nis"] {
		t.Errorf("local = %+v", l)
	}
	if _, err := ReadLocal(filepath.Join(dir, "nope"), gr); err == nil {
		t.Error("missing passwd file accepted")
	}
}

// Names are folded to lower case only after they are known to be ASCII:
// strings.ToLower maps the Kelvin sign U+212A to an ASCII "k", so
// "\u212Aate" would otherwise become "kate" and take (or later collide
// with) another person's account name.
func TestNonASCIINamesNotFolded(t *testing.T) {
	users := []source.User{good("u1", "\u212Aate", 20001), good("u2", "alice", 20002)}
	groups := []source.Group{
		{ID: "g1", DisplayName: "\u212Aluster", GID: i64(30001), MemberIDs: []string{"u2"}},
		{ID: "g2", DisplayName: "hpc", GID: i64(30002), MemberIDs: []string{"u2"}},
	}
	res := Directory(&source.Directory{Users: users, Groups: groups}, baseOpts())
	if len(res.Contents.Users) != 1 || res.Contents.Users[0].Name != "alice" {
		t.Fatalf("users = %+v; the Kelvin-sign name must be rejected", res.Contents.Users)
	}
	if len(res.Contents.Groups) != 1 || res.Contents.Groups[0].Name != "hpc" {
		t.Fatalf("groups = %+v; the Kelvin-sign group must be rejected", res.Contents.Groups)
	}
	reasons := map[string]string{}
	for _, r := range res.Rejections {
		reasons[r.ID] = r.Reason + ": " + r.Detail
	}
	for _, id := range []string{"u1", "g1"} {
		if !strings.HasPrefix(reasons[id], BadName+": ") || !strings.Contains(reasons[id], "not ASCII") {
			t.Errorf("%s: rejection %q, want %s naming the non-ASCII character", id, reasons[id], BadName)
		}
	}

	// posix_groups selects by the same folded name: a group spelled
	// with the Kelvin sign does not select its members as "kluster".
	o := baseOpts()
	o.PosixGroups = []string{"kluster"}
	res = Directory(&source.Directory{Users: users, Groups: groups}, o)
	if len(res.Contents.Users) != 0 {
		t.Errorf("posix_groups kluster selected %+v through a group named \\u212Aluster", res.Contents.Users)
	}
}

// Values that do not break the passwd format but would break or spoof
// what reads it: C1 control characters (U+0085 is a line break to some
// readers), Unicode line separators and bidirectional overrides.
func TestUnicodeControlsInFields(t *testing.T) {
	for name, gecos := range map[string]string{
		"C1 NEL":         "Bob\u0085Smith",
		"C1 CSI":         "Bob \u009b31m",
		"line separator": "Bob\u2028Smith",
		"bidi override":  "Bob \u202eSmith",
	} {
		t.Run(name, func(t *testing.T) {
			u := good("u1", "bob", 20001)
			u.GECOS = gecos
			res := Directory(&source.Directory{Users: []source.User{u}}, baseOpts())
			if len(res.Contents.Users) != 1 || res.Contents.Users[0].GECOS != "" || res.Counts()[BadGECOS] != 1 {
				t.Fatalf("gecos %q: users %+v, rejections %v; want the GECOS dropped with %s", gecos, res.Contents.Users, res.Rejections, BadGECOS)
			}
		})
	}
	// Accented names stay: GECOS is free text.
	u := good("u1", "bob", 20001)
	u.GECOS = "Zoë Ångström"
	res := Directory(&source.Directory{Users: []source.User{u}}, baseOpts())
	if len(res.Contents.Users) != 1 || res.Contents.Users[0].GECOS != u.GECOS {
		t.Fatalf("gecos %q not kept: %+v %v", u.GECOS, res.Contents.Users, res.Rejections)
	}
}

// A shell path with whitespace is refused even when any shell is allowed:
// programs that run "$SHELL -c ..." through another shell (editors,
// terminal multiplexers, su -c wrappers) would split it into arguments.
func TestShellWithWhitespace(t *testing.T) {
	for _, sh := range []string{"/bin/bash -c /tmp/x", "/usr/local/bin/my shell", "/bin/bash\t-i"} {
		u := good("u1", "bob", 20001)
		u.Shell = sh
		o := baseOpts()
		o.AllowedShells = nil
		res := Directory(&source.Directory{Users: []source.User{u, good("u2", "alice", 20002)}}, o)
		if len(res.Contents.Users) != 1 || len(res.Rejections) != 1 || res.Rejections[0].Reason != BadShell {
			t.Errorf("shell %q: users %+v rejections %v; want bob rejected with %s", sh, res.Contents.Users, res.Rejections, BadShell)
		}
	}
}

// Ids that mean "nobody" or "no id" to the kernel and to NFS are never
// handed to a SCIM user or group, whatever the configured range and
// whether or not /etc/passwd lists them.
func TestReservedIDs(t *testing.T) {
	for id, want := range map[int64][3]string{
		65534:      {ReservedID, ReservedID, ReservedID},
		65535:      {ReservedID, ReservedID, ReservedID},
		4294967295: {UIDOutOfRange, GIDOutOfRange, GIDOutOfRange}, // (uid_t)-1, above the largest id
	} {
		o := baseOpts()
		o.UIDMax, o.GIDMax = 1<<32-1, 1<<32-1
		o.Local = &Local{}
		u := good("u1", "bob", id)
		u2 := good("u2", "carol", 20002)
		u2.GID = i64(id)
		g := source.Group{ID: "g1", DisplayName: "nobodies", GID: i64(id)}
		res := Directory(&source.Directory{Users: []source.User{u, u2, good("u3", "alice", 20003)}, Groups: []source.Group{g}}, o)
		reasons := map[string]string{}
		for _, r := range res.Rejections {
			reasons[r.ID] = r.Reason
		}
		if got := [3]string{reasons["u1"], reasons["u2"], reasons["g1"]}; got != want {
			t.Errorf("id %d: reasons for the user's uid, the user's gid and the group %v; want %v", id, got, want)
		}
		if len(res.Contents.Users) != 1 || res.Contents.Users[0].Name != "alice" {
			t.Errorf("id %d: users %+v, want only alice", id, res.Contents.Users)
		}
	}
}

// Ids wider than uid_t are refused, not truncated to 32 bits, even when
// the options' range is (wrongly) wider: 2^32+20001 would become 20001.
func TestIDsWiderThan32Bits(t *testing.T) {
	o := baseOpts()
	o.UIDMax, o.GIDMax = 1<<40, 1<<40
	u := good("u1", "bob", 1<<32+20001)
	g := source.Group{ID: "g1", DisplayName: "wide", GID: i64(1<<32 + 30001)}
	res := Directory(&source.Directory{Users: []source.User{u, good("u2", "alice", 20001)}, Groups: []source.Group{g}}, o)
	reasons := map[string]string{}
	for _, r := range res.Rejections {
		reasons[r.ID] = r.Reason
	}
	if reasons["u1"] != UIDOutOfRange || reasons["g1"] != GIDOutOfRange {
		t.Errorf("reasons %v; want %s for u1 and %s for g1", reasons, UIDOutOfRange, GIDOutOfRange)
	}
	if len(res.Contents.Users) != 1 || res.Contents.Users[0].Name != "alice" || len(res.Contents.Groups) != 0 {
		t.Errorf("users %+v groups %+v", res.Contents.Users, res.Contents.Groups)
	}
}

// Entra and Okta publish UPNs as userName: listed domains are stripped,
// any other domain is refused, and two people with one local part at two
// domains never share an account.
func TestUserNameDomains(t *testing.T) {
	users := []source.User{
		good("a", "Alice@Corp.Example.com", 20001),
		good("b", "bob@partner.example.org", 20002),
		good("c", "carol", 20003),
		good("d", "dan@corp.example.com", 20004),
		good("e", "dan@lab.example.com", 20005),
	}
	o := baseOpts()
	o.UserNameDomains = []string{"corp.example.com", "lab.example.com"}
	res := Directory(&source.Directory{Users: users, Groups: []source.Group{
		{ID: "g", DisplayName: "team", GID: i64(30000), MemberIDs: []string{"a", "c"}},
	}}, o)
	var names []string
	for _, u := range res.Contents.Users {
		names = append(names, u.Name)
	}
	if strings.Join(names, ",") != "alice,carol,dan" {
		t.Errorf("published %v, want alice,carol,dan", names)
	}
	reasons := map[string]Rejection{}
	for _, r := range res.Rejections {
		reasons[r.ID] = r
	}
	if r := reasons["b"]; r.Reason != BadName || !strings.Contains(r.Detail, `"partner.example.org" is not in user_names.domains`) {
		t.Errorf("bob@partner: %+v", r)
	}
	if reasons["d"].Reason != "" || reasons["e"].Reason != DuplicateName {
		t.Errorf("dan at two domains: %+v %+v, want the second duplicate-name", reasons["d"], reasons["e"])
	}
	if g := res.Contents.Groups; len(g) != 1 || strings.Join(g[0].Members, ",") != "alice,carol" {
		t.Errorf("groups = %+v, want team with alice,carol", g)
	}

	// Without domains listed the local part of any domain is taken.
	res = Directory(&source.Directory{Users: users[:1]}, baseOpts())
	if len(res.Rejections) != 0 || len(res.Contents.Users) != 1 || res.Contents.Users[0].Name != "alice" {
		t.Errorf("no domains configured: %+v %+v", res.Rejections, res.Contents.Users)
	}
}
