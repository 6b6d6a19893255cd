package commit

import (
	"bytes"
	"path/filepath"
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

func TestPolicy(t *testing.T) {
	live := &snapshot.Contents{Users: users("a", "b", "c", "d", "e", "f", "g", "h", "i", "j")}
	p := Policy{MaxRemovalShare: 0.1}
	for _, tc := range []struct {
		name  string
		next  []snapshot.User
		force bool
		ok    bool
	}{
		{"one of ten removed", users("a", "b", "c", "d", "e", "f", "g", "h", "i"), false, true},
		{"two of ten removed", users("a", "b", "c", "d", "e", "f", "g", "h"), false, false},
		{"two of ten forced", users("a", "b", "c", "d", "e", "f", "g", "h"), true, true},
		{"empty", nil, false, false},
		{"empty forced", nil, true, true},
	} {
		next := &snapshot.Contents{Users: tc.next}
		p.Force = tc.force
		err := p.Check(live, next, Compute(live, next))
		if (err == nil) != tc.ok {
			t.Errorf("%s: err = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
	if err := (Policy{}).Check(nil, &snapshot.Contents{Users: users("a")}, Compute(nil, &snapshot.Contents{Users: users("a")})); err != nil {
		t.Errorf("first snapshot refused: %v", err)
	}
	if err := (Policy{}).Check(nil, &snapshot.Contents{}, &Diff{}); err == nil || !strings.Contains(err.Error(), "no valid users") {
		t.Errorf("empty first snapshot: %v", err)
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

func TestPolicyMemberships(t *testing.T) {
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
		force  bool
		ok     bool
		why    string
	}{
		{"unchanged", live.Groups, false, true, ""},
		{"every group published empty", []snapshot.Group{group("slurm-users", 30000, nil), group("small", 30001, nil)}, false, false, "no group in the directory has a member"},
		{"every group empty, forced", []snapshot.Group{group("slurm-users", 30000, nil), group("small", 30001, nil)}, true, true, ""},
		{"half the members dropped", []snapshot.Group{group("slurm-users", 30000, names[:100]), group("small", 30001, names[:5])}, false, false, "100 of 205 group memberships"},
		{"a small group emptied (5 of 205: churn)", []snapshot.Group{group("slurm-users", 30000, names), group("small", 30001, nil)}, false, true, ""},
		{"15 members leave (under 10%)", []snapshot.Group{group("slurm-users", 30000, names[15:]), group("small", 30001, names[:5])}, false, true, ""},
	} {
		next := &snapshot.Contents{Users: users(names...), Groups: tc.groups}
		p.Force = tc.force
		err := p.Check(live, next, Compute(live, next))
		if (err == nil) != tc.ok {
			t.Errorf("%s: err = %v, want ok=%v", tc.name, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), tc.why) {
			t.Errorf("%s: err = %v, want it to say %q", tc.name, err, tc.why)
		}
	}
	// A directory without memberships at all is not a loss.
	bare := &snapshot.Contents{Users: users(names...)}
	if err := p.Check(bare, bare, Compute(bare, bare)); err != nil {
		t.Errorf("no memberships before or after: %v", err)
	}
}
