package commit

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scimbridge/scimbridge/syncd/snapshot"
)

func users(names ...string) []snapshot.User {
	var us []snapshot.User
	for i, n := range names {
		us = append(us, snapshot.User{Name: n, UID: uint32(20000 + i), GID: 20000, Home: "/home/" + n, Shell: "/bin/bash", Active: true})
	}
	return us
}

func TestDiff(t *testing.T) {
	live := &snapshot.Contents{
		Users:  users("ann", "ben", "cat"),
		Groups: []snapshot.Group{{Name: "phys", GID: 30000, Members: []string{"ann", "ben"}}, {Name: "old", GID: 30001}},
	}
	next := &snapshot.Contents{
		Users:  users("ann", "ben", "dan"),
		Groups: []snapshot.Group{{Name: "phys", GID: 30000, Members: []string{"ben", "dan"}}, {Name: "new", GID: 30002}},
	}
	next.Users[1].Shell = "/bin/zsh"
	next.Users[1].Active = false
	next.Users[1].SSHKeys = []string{"ssh-ed25519 AAAA"}
	next.Users[2].UID = 20002
	d := Compute(live, next)
	var b bytes.Buffer
	d.Print(&b)
	want := `+ user dan uid=20002 gid=20000 home=/home/dan shell=/bin/bash keys=0
~ user ben: shell /bin/bash -> /bin/zsh; active true -> false; ssh_keys 0 keys -> 1 key
- user cat uid=20002
+ group new gid=30002 members=0
~ group phys: members +dan -ann
- group old gid=30001
`
	if b.String() != want {
		t.Errorf("diff:\n%s\nwant:\n%s", b.String(), want)
	}
	if d.Empty() || !Compute(live, live).Empty() {
		t.Error("Empty is wrong")
	}
}

// A storage limit from the identity provider changed alone is a change:
// it must be committed (and shown), not skipped as an unchanged record.
func TestDiffQuotaAlone(t *testing.T) {
	live := &snapshot.Contents{
		Users:  users("ann", "ben"),
		Groups: []snapshot.Group{{Name: "phys", GID: 30000, Members: []string{"ann"}, Quota: 40 << 30}},
	}
	next := &snapshot.Contents{
		Users:  users("ann", "ben"),
		Groups: []snapshot.Group{{Name: "phys", GID: 30000, Members: []string{"ann"}, Quota: 30 << 30}},
	}
	next.Users[0].Quota = 12 << 30
	d := Compute(live, next)
	var b bytes.Buffer
	d.Print(&b)
	want := `~ user ann: quota none -> 12G
~ group phys: quota 40G -> 30G
`
	if d.Empty() || b.String() != want {
		t.Errorf("diff (empty %v):\n%s\nwant:\n%s", d.Empty(), b.String(), want)
	}
}

func TestPolicy(t *testing.T) {
	if err := (Policy{}).Check(nil, &snapshot.Contents{Users: users("a")}, Compute(nil, &snapshot.Contents{Users: users("a")})); err != nil {
		t.Errorf("first snapshot refused: %v", err)
	}
	if err := (Policy{}).Check(nil, &snapshot.Contents{}, &Diff{}); err == nil || !strings.Contains(err.Error(), "no valid users") {
		t.Errorf("empty first snapshot: %v", err)
	}
	live := &snapshot.Contents{Users: users("a", "b")}
	if err := (Policy{}).Check(live, &snapshot.Contents{}, &Diff{}); err == nil {
		t.Error("empty directory over a live snapshot accepted")
	}
	if err := (Policy{Force: true}).Check(live, &snapshot.Contents{}, &Diff{}); err != nil {
		t.Errorf("forced empty: %v", err)
	}
}

// The guard holds back deletions as disabled records; it never holds
// back a disable, a change, or a removal from a group.
func TestHold(t *testing.T) {
	all := users("a", "b", "c", "d", "e", "f", "g", "h", "i", "j")
	all[0].SSHKeys = []string{"ssh-ed25519 AAAA"}
	live := &snapshot.Contents{Users: all, Groups: []snapshot.Group{
		{Name: "team", GID: 30000, Members: []string{"a", "b", "c"}}, {Name: "old", GID: 30001, Members: []string{"a"}},
	}}
	p := Policy{MaxRemovalShare: 0.1}

	// One of ten deleted: within the share, deleted.
	next := &snapshot.Contents{Users: users("a", "b", "c", "d", "e", "f", "g", "h", "i"), Groups: live.Groups}
	if h := p.Hold(live, next, Compute(live, next)); h != nil || len(next.Users) != 9 {
		t.Errorf("one of ten: held %+v", h)
	}

	// Two deleted (a and b), c disabled, c removed from team, old group
	// deleted: the user deletions held, the rest applied.
	next = &snapshot.Contents{Users: users("c", "d", "e", "f", "g", "h", "i", "j"), Groups: []snapshot.Group{
		{Name: "team", GID: 30000, Members: []string{}},
	}}
	for i := range next.Users {
		next.Users[i].UID += 2 // users() numbers from 20000 in order
	}
	next.Users[0].Active = false
	h := p.Hold(live, next, Compute(live, next))
	if h == nil || strings.Join(h.Users, ",") != "a,b" || len(h.Groups) != 0 {
		t.Fatalf("held = %+v", h)
	}
	byName := map[string]snapshot.User{}
	for _, u := range next.Users {
		byName[u.Name] = u
	}
	if a := byName["a"]; a.Active || len(a.SSHKeys) != 0 || a.UID != 20000 || a.Home != "/home/a" {
		t.Errorf("held a = %+v, want kept disabled without keys", a)
	}
	if byName["c"].Active {
		t.Error("the disable of c was held back")
	}
	for _, g := range next.Groups {
		if len(g.Members) != 0 {
			t.Errorf("group %s keeps members %v: removals from groups must apply", g.Name, g.Members)
		}
	}
	var b bytes.Buffer
	Compute(live, next).Print(&b)
	want := `~ user a: active true -> false; ssh_keys 1 key -> 0 keys
~ user b: active true -> false
~ user c: active true -> false
~ group team: members -a -b -c
- group old gid=30001
`
	if b.String() != want {
		t.Errorf("diff after hold:\n%s\nwant:\n%s", b.String(), want)
	}

	// A held record that collides with a new one is not held.
	next = &snapshot.Contents{Users: append(users("x"), live.Users[2:]...), Groups: live.Groups} // x has a's uid 20000
	h = p.Hold(live, next, Compute(live, next))
	if h == nil || strings.Join(h.Users, ",") != "b" {
		t.Errorf("collision: held %+v", h)
	}

	// --force holds nothing.
	next = &snapshot.Contents{Users: users("c")}
	if h := (Policy{MaxRemovalShare: 0.1, Force: true}).Hold(live, next, Compute(live, next)); h != nil || len(next.Users) != 1 {
		t.Errorf("forced: held %+v", h)
	}
}

func TestStatusRoundTrip(t *testing.T) {
	p := filepath.Join(t.TempDir(), "sub", "status.json")
	in := &Status{Version: "v1", LastAttempt: time.Now().UTC().Truncate(time.Second), LastResult: Failed, LastError: "boom",
		RejectedReason: map[string]int{"bad-name": 2}}
	if err := WriteStatus(p, in); err != nil {
		t.Fatal(err)
	}
	out, err := ReadStatus(p)
	if err != nil || out.LastError != "boom" || !out.LastAttempt.Equal(in.LastAttempt) || out.RejectedReason["bad-name"] != 2 {
		t.Fatalf("round trip: %+v, %v", out, err)
	}
}

func TestMembershipWarnings(t *testing.T) {
	names := make([]string, 200)
	for i := range names {
		names[i] = "u" + string(rune('a'+i/26)) + string(rune('a'+i%26))
	}
	group := func(name string, gid uint32, members []string) snapshot.Group {
		return snapshot.Group{Name: name, GID: gid, Members: members}
	}
	live := &snapshot.Contents{Users: users(names...), Groups: []snapshot.Group{
		group("slurm-users", 30000, names), group("small", 30001, names[:5]),
	}}
	p := Policy{MaxRemovalShare: 0.1}
	for _, tc := range []struct {
		name   string
		groups []snapshot.Group
		why    string
	}{
		{"unchanged", live.Groups, ""},
		{"every group published empty", []snapshot.Group{group("slurm-users", 30000, nil), group("small", 30001, nil)}, "no group in the directory has a member"},
		{"half the members dropped", []snapshot.Group{group("slurm-users", 30000, names[:100]), group("small", 30001, names[:5])}, "removed 100 of 205 group memberships"},
		{"the large group gone", []snapshot.Group{group("small", 30001, names[:5])}, "removed 200 of 205 group memberships"},
		{"a small group emptied (5 of 205: churn)", []snapshot.Group{group("slurm-users", 30000, names), group("small", 30001, nil)}, ""},
	} {
		next := &snapshot.Contents{Users: users(names...), Groups: tc.groups}
		h := p.Hold(live, next, Compute(live, next))
		if tc.why == "" {
			if h != nil {
				t.Errorf("%s: held %+v", tc.name, h)
			}
			continue
		}
		if h == nil || len(h.Users)+len(h.Groups) != 0 || !strings.Contains(h.Summary(), tc.why) {
			t.Errorf("%s: held %+v, want only a warning saying %q", tc.name, h, tc.why)
		}
		if got := countMembers(next); got != countMembers(&snapshot.Contents{Groups: tc.groups}) {
			t.Errorf("%s: memberships changed by the guard", tc.name)
		}
	}
}

// Against no snapshot every record is an addition, listed by name as
// the whole comparison lists them (Compute's shortcut for a first sync).
func TestDiffAgainstNothing(t *testing.T) {
	next := &snapshot.Contents{
		Users:  users("zed", "ann", "mia", "bob"),
		Groups: []snapshot.Group{{Name: "phys", GID: 30000, Members: []string{"ann"}}, {Name: "chem", GID: 30001}},
	}
	for _, live := range []*snapshot.Contents{nil, {}} {
		d := Compute(live, next)
		var got, want bytes.Buffer
		d.Print(&got)
		compute(&snapshot.Contents{}, next).Print(&want)
		if got.String() != want.String() || !strings.HasPrefix(got.String(), "+ user ann ") {
			t.Errorf("against %v:\n%s\nwant:\n%s", live, got.String(), want.String())
		}
		if len(d.AddedUsers) != 4 || len(d.AddedGroups) != 2 || d.AddedGroups[0].Name != "chem" {
			t.Errorf("added %d users, groups %+v", len(d.AddedUsers), d.AddedGroups)
		}
	}
	if next.Users[0].Name != "zed" {
		t.Error("Compute reordered the contents it was given")
	}
	if d := Compute(nil, &snapshot.Contents{}); !d.Empty() || d.AddedUsers != nil {
		t.Errorf("nothing against nothing: %+v", d)
	}
}

// Into an empty cache the diff is every record in name order, records
// of equal names (not validated contents: a hand-made one) in list order,
// the whole record copied.
func TestComputeAgainstNothingIsByName(t *testing.T) {
	next := &snapshot.Contents{
		Users:  []snapshot.User{{Name: "c", UID: 1}, {Name: "a", UID: 2}, {Name: "b", UID: 3, SSHKeys: []string{"k"}}, {Name: "a", UID: 4}},
		Groups: []snapshot.Group{{Name: "z", GID: 9}, {Name: "y", GID: 8, Members: []string{"a"}}},
	}
	d := Compute(nil, next)
	var got []string
	for _, u := range d.AddedUsers {
		got = append(got, fmt.Sprintf("%s/%d/%v", u.Name, u.UID, u.SSHKeys))
	}
	for _, g := range d.AddedGroups {
		got = append(got, fmt.Sprintf("%s/%d/%v", g.Name, g.GID, g.Members))
	}
	want := []string{"a/2/[]", "a/4/[]", "b/3/[k]", "c/1/[]", "y/8/[a]", "z/9/[]"}
	if !slices.Equal(got, want) {
		t.Fatalf("added: %v, want %v", got, want)
	}
	if next.Users[0].Name != "c" || next.Groups[0].Name != "z" {
		t.Fatalf("next changed: %v", next)
	}
}
