package validate

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/snapshot"
	"github.com/scimbridge/scimbridge/syncd/source"
)

// hostile draws records from small pools, so that names (also after
// user_names and group_names mapping), uids, gids and homes collide,
// homes nest, names are reserved or local, primary gids are unpublished,
// private or a rejected group's, keys are good and bad, active is sent
// or not.
type hostile struct {
	rng  *rand.Rand
	next int
	dup  bool // the last change repeated an id: the next one removes it
}

var (
	hUserNames = []string{"alice", "Alice", "ALICE", "alice@example.com", "alice@other.example", "bob", "Bob", "carol",
		"root", "slurm", "labadmin", "sudo", "bad name!", "", "dave", "eve", "frank", "grace", "heidi", "ivan",
		"x" + strings.Repeat("y", 40), "Ærø", "mallory", "trent", "peggy", "victor", "walter", "zoe"}
	hHomes = []string{"", "", "", "/home/alice", "/home/alice/sub", "/home/bob", "/home", "/etc", "/srv/x",
		"/home/shared", "/home/shared/a", "/home/shared/a/b", "/home/../etc", "/var/lib/daemon0/x", "/home/carol"}
	hGroupNames = []string{"staff", "Staff", "sales team", "sales-team", "sales_team", "root", "wheel", "physics",
		"Physics", "slurm-users", "", "hpc", "labadmin", "users", "bad:name", "chem", "bio"}
)

func (h *hostile) id64(pool []int64) *int64 {
	if h.rng.IntN(12) == 0 {
		return nil
	}
	v := pool[h.rng.IntN(len(pool))]
	return &v
}

var (
	hUIDs = []int64{10001, 10002, 10003, 10004, 10005, 10006, 10007, 10008, 10009, 10010, 10011, 10012,
		20001, 20002, 0, 5, 65534, 10999, 64030, 70000}
	hGIDs = []int64{20000, 20001, 20002, 20003, 20004, 20005, 20006, 10001, 10002, 10003, 10004, 100, 0, 65535, 10998, 70000}
)

func (h *hostile) user(id string) source.User {
	r := h.rng
	u := source.User{ID: id, UserName: hUserNames[r.IntN(len(hUserNames))], UID: h.id64(hUIDs), GID: h.id64(hGIDs),
		Home: hHomes[r.IntN(len(hHomes))], Shell: []string{"", "/bin/bash", "/bin/zsh", "/bin/sh", "/bin/ba sh"}[r.IntN(5)]}
	if r.IntN(3) > 0 {
		u.UserName = fmt.Sprintf("%s%d", u.UserName, r.IntN(25))
	}
	switch r.IntN(4) {
	case 0:
	case 1:
		u.Active = new(bool)
	default:
		t := true
		u.Active = &t
	}
	switch r.IntN(6) {
	case 0:
		u.SSHKeys = []string{ed1}
	case 1:
		u.SSHKeys = []string{ed2, "ssh-rsa broken"}
	case 2:
		u.SSHKeys = []string{`command="x" ` + ed1}
	}
	if r.IntN(10) == 0 {
		u.GECOS = "bad\ngecos"
	}
	if r.IntN(25) == 0 {
		u.Malformed = map[string]string{[]string{source.FieldUID, source.FieldGID, source.FieldHome, source.FieldActive, source.FieldSSHKeys}[r.IntN(5)]: "not a number"}
	}
	return u
}

func (h *hostile) group(id string, users []source.User) source.Group {
	r := h.rng
	g := source.Group{ID: id, DisplayName: hGroupNames[r.IntN(len(hGroupNames))], GID: h.id64(hGIDs)}
	for range r.IntN(8) {
		if len(users) > 0 && r.IntN(8) > 0 {
			g.MemberIDs = append(g.MemberIDs, users[r.IntN(len(users))].ID)
		} else {
			g.MemberIDs = append(g.MemberIDs, fmt.Sprintf("ghost%d", r.IntN(5)))
		}
	}
	if r.IntN(20) == 0 {
		g.Malformed = map[string]string{source.FieldMembers: "not a list"}
	}
	return g
}

func (h *hostile) id(prefix string) string {
	h.next++
	// Ids sort in no particular order against their age.
	return fmt.Sprintf("%s%03d-%d", prefix, h.rng.IntN(1000), h.next)
}

// change is the next directory: one random change applied the way the
// readers apply one (records replaced by new values, never changed in
// place; new records appended; a full read may list in another order).
func (h *hostile) change(d *source.Directory) (*source.Directory, string) {
	r := h.rng
	n := &source.Directory{Users: slices.Clone(d.Users), Groups: slices.Clone(d.Groups)}
	pickU := func() int { return r.IntN(len(n.Users)) }
	if h.dup {
		h.dup = false
		n.Users = n.Users[:len(n.Users)-1]
		return n, "the repeated id removed"
	}
	switch k := r.IntN(20); {
	case k < 6 && len(n.Users) > 0: // one attribute of a user
		i := pickU()
		u := n.Users[i]
		fresh := h.user(u.ID)
		switch r.IntN(7) {
		case 0:
			u.UserName = fresh.UserName
		case 1:
			u.UID = fresh.UID
		case 2:
			u.GID = fresh.GID
		case 3:
			u.Home = fresh.Home
		case 4:
			u.Active = fresh.Active
		case 5:
			u.SSHKeys = fresh.SSHKeys
		default:
			u = fresh
		}
		n.Users[i] = u
		return n, "user " + u.ID + " changed"
	case k < 8 && len(n.Users) > 0: // a rename onto another user's name
		i, j := pickU(), pickU()
		u := n.Users[i]
		u.UserName = strings.ToUpper(n.Users[j].UserName)
		n.Users[i] = u
		return n, "user " + u.ID + " renamed onto " + n.Users[j].ID
	case k < 9 && len(n.Users) > 0: // the same uid or home as another
		i, j := pickU(), pickU()
		u := n.Users[i]
		if r.IntN(2) == 0 {
			u.UID = n.Users[j].UID
		} else {
			u.Home = n.Users[j].Home + []string{"", "/in"}[r.IntN(2)]
		}
		n.Users[i] = u
		return n, "user " + u.ID + " took a value of " + n.Users[j].ID
	case k < 11:
		u := h.user(h.id("u"))
		n.Users = append(n.Users, u)
		return n, "user " + u.ID + " added"
	case k < 13 && len(n.Users) > 0:
		i := pickU()
		id := n.Users[i].ID
		n.Users = slices.Delete(n.Users, i, i+1)
		return n, "user " + id + " deleted"
	case k < 14 && len(n.Groups) > 0: // members
		i := r.IntN(len(n.Groups))
		g := n.Groups[i]
		g.MemberIDs = slices.Clone(g.MemberIDs)
		if len(g.MemberIDs) > 0 && r.IntN(2) == 0 {
			g.MemberIDs = slices.Delete(g.MemberIDs, 0, 1)
		} else if len(n.Users) > 0 {
			g.MemberIDs = append(g.MemberIDs, n.Users[pickU()].ID)
		}
		n.Groups[i] = g
		return n, "group " + g.ID + " members"
	case k < 15 && len(n.Groups) > 0:
		i := r.IntN(len(n.Groups))
		g := h.group(n.Groups[i].ID, n.Users)
		if r.IntN(2) == 0 {
			g.MemberIDs = n.Groups[i].MemberIDs
		}
		n.Groups[i] = g
		return n, "group " + g.ID + " changed"
	case k < 16:
		g := h.group(h.id("g"), n.Users)
		n.Groups = append(n.Groups, g)
		return n, "group " + g.ID + " added"
	case k < 17 && len(n.Groups) > 0:
		i := r.IntN(len(n.Groups))
		id := n.Groups[i].ID
		n.Groups = slices.Delete(n.Groups, i, i+1)
		return n, "group " + id + " deleted"
	case k < 18 && len(n.Users) > 1: // a full read listing in another order
		r.Shuffle(len(n.Users), func(i, j int) { n.Users[i], n.Users[j] = n.Users[j], n.Users[i] })
		r.Shuffle(len(n.Groups), func(i, j int) { n.Groups[i], n.Groups[j] = n.Groups[j], n.Groups[i] })
		return n, "users and groups listed in another order"
	case k < 19 && len(n.Users) > 0: // disable or enable
		i := pickU()
		u := n.Users[i]
		b := u.Active == nil || *u.Active
		b = !b
		u.Active = &b
		n.Users[i] = u
		return n, "user " + u.ID + " disabled or enabled"
	default:
		if r.IntN(30) == 0 && len(n.Users) > 0 { // a repeated SCIM id
			n.Users = append(n.Users, h.user(n.Users[pickU()].ID))
			h.dup = true
			return n, "a user's id repeated"
		}
		return n, "nothing"
	}
}

// TestIncrementalEqualsDirectory drives thousands of random hostile
// changes through one Incremental and compares every result with
// Directory's on the same directory and live snapshot: the same users,
// groups, rejections (reasons, details, order), counts.
func TestIncrementalEqualsDirectory(t *testing.T) {
	shapes := []struct {
		name string
		opts func(*Options)
	}{
		{"defaults", func(o *Options) {}},
		{"private-groups-all", func(o *Options) { o.PrivateGroups = config.PrivateGroupsAll; o.SharedPrimaryGIDs = nil }},
		{"private-groups-uid", func(o *Options) { o.PrivateGroups = config.PrivateGroupsUID }},
		{"posix-groups", func(o *Options) { o.PosixGroups = []string{"staff", "physics"} }},
		{"home-template-domains", func(o *Options) {
			o.HomeTemplate = "/home/%u"
			o.UserNameDomains = []string{"example.com"}
		}},
	}
	steps := 1500
	if testing.Short() {
		steps = 300
	}
	total, whole := 0, 0
	why := map[string]int{}
	for si, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			h := &hostile{rng: rand.New(rand.NewPCG(18, uint64(si)))}
			o := baseOpts()
			o.UIDMin, o.GIDMin, o.UIDMax, o.GIDMax = 1000, 1000, 100000, 100000
			o.Local.Homes = map[string]string{"/var/lib/daemon0": "daemon0", "/home/labadmin": "labadmin"}
			o.Local.Members = map[string][]string{"mallory3": {"wheel"}}
			sh.opts(&o)
			dir := &source.Directory{}
			for range 60 {
				dir.Users = append(dir.Users, h.user(h.id("u")))
			}
			for range 10 {
				dir.Groups = append(dir.Groups, h.group(h.id("g"), dir.Users))
			}
			var v Incremental
			var lives []*snapshot.Contents
			for step := 0; step < steps; step++ {
				what := "first"
				if step > 0 {
					dir, what = h.change(dir)
				}
				// Now and then the site's rules change (a local account
				// appears), or the source stops sending active: whole.
				switch h.rng.IntN(150) {
				case 0:
					o.Local = &Local{UserNames: maps.Clone(o.Local.UserNames), UIDs: o.Local.UIDs, GroupNames: o.Local.GroupNames,
						GIDs: o.Local.GIDs, Members: o.Local.Members, Homes: o.Local.Homes}
					o.Local.UserNames[fmt.Sprintf("bob%d", h.rng.IntN(25))] = true
					what += ", a local account added"
				case 1:
					dir = &source.Directory{Users: slices.Clone(dir.Users), Groups: dir.Groups}
					for i := range dir.Users {
						dir.Users[i].Active = nil
					}
					what += ", active no longer sent"
				}
				// The live snapshot: usually the last result (as
				// after a commit), sometimes an older one or none.
				oo := o
				switch x := h.rng.IntN(10); {
				case len(lives) == 0 || x == 0:
				case x == 1:
					oo.Live = lives[h.rng.IntN(len(lives))]
				default:
					oo.Live = lives[len(lives)-1]
				}
				got, mode := v.Validate(dir, oo)
				want := Directory(dir, oo)
				total++
				if mode.Whole {
					whole++
					why[mode.Why]++
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("step %d (%s, whole %v %q): the incremental result differs from Directory's:\n%s", step, what, mode.Whole, mode.Why, resultDiff(got, want))
				}
				lives = append(lives, want.Contents)
				if len(lives) > 5 {
					lives = lives[1:]
				}
			}
		})
	}
	t.Logf("%d validations compared, %d of them whole: %v", total, whole, why)
	if whole > total/10 {
		t.Errorf("%d of %d validations were whole: the incremental path is rarely taken", whole, total)
	}
}

func resultDiff(got, want *Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "filtered %d/%d synthesised %d/%d dropped %d/%d\n", got.Filtered, want.Filtered, got.Synthesised, want.Synthesised, got.DroppedMembers, want.DroppedMembers)
	for i := 0; i < max(len(got.Rejections), len(want.Rejections)); i++ {
		var g, w Rejection
		if i < len(got.Rejections) {
			g = got.Rejections[i]
		}
		if i < len(want.Rejections) {
			w = want.Rejections[i]
		}
		if g != w {
			fmt.Fprintf(&b, "rejection %d:\n  got  %v\n  want %v\n", i, g, w)
		}
	}
	for i := 0; i < max(len(got.Contents.Users), len(want.Contents.Users)); i++ {
		var g, w snapshot.User
		if i < len(got.Contents.Users) {
			g = got.Contents.Users[i]
		}
		if i < len(want.Contents.Users) {
			w = want.Contents.Users[i]
		}
		if !reflect.DeepEqual(g, w) {
			fmt.Fprintf(&b, "user %d:\n  got  %+v\n  want %+v\n", i, g, w)
		}
	}
	for i := 0; i < max(len(got.Contents.Groups), len(want.Contents.Groups)); i++ {
		var g, w snapshot.Group
		if i < len(got.Contents.Groups) {
			g = got.Contents.Groups[i]
		}
		if i < len(want.Contents.Groups) {
			w = want.Contents.Groups[i]
		}
		if !reflect.DeepEqual(g, w) {
			fmt.Fprintf(&b, "group %d:\n  got  %+v\n  want %+v\n", i, g, w)
		}
	}
	if b.Len() == 0 {
		fmt.Fprintf(&b, "got %+v\nwant %+v", got.Contents, want.Contents)
	}
	return b.String()
}

// sameUser and sameGroup compare every attribute of a source record: a
// field added to source.User or source.Group must be added there too, or
// a change of it would keep the last verdict.
func TestSameRecordKnowsEveryField(t *testing.T) {
	if n := reflect.TypeOf(source.User{}).NumField(); n != 12 {
		t.Errorf("source.User has %d fields: compare the new ones in sameUser", n)
	}
	if n := reflect.TypeOf(source.Group{}).NumField(); n != 6 {
		t.Errorf("source.Group has %d fields: compare the new ones in sameGroup", n)
	}
}

// A rename frees a name another user was refused for: the next
// incremental validation accepts that user, as a whole one would, and
// checks one record and settles only the two.
func TestIncrementalRenameFreesName(t *testing.T) {
	o := baseOpts()
	dir := &source.Directory{}
	for i := range 2000 {
		dir.Users = append(dir.Users, good(fmt.Sprintf("id%05d", i), fmt.Sprintf("user%d", i), int64(20000+i)))
	}
	dir.Users = append(dir.Users, good("zz-late", "User7", 30000)) // user7's name, a later id
	var v Incremental
	res, m := v.Validate(dir, o)
	if !m.Whole || len(res.Contents.Users) != 2000 || len(res.Rejections) != 1 || res.Rejections[0].Reason != DuplicateName {
		t.Fatalf("first validation: whole %v, %d users, rejections %v", m.Whole, len(res.Contents.Users), res.Rejections)
	}
	next := &source.Directory{Users: slices.Clone(dir.Users)}
	next.Users[7].UserName = "renamed7"
	next.Users[7].Home = "/home/renamed7"
	o.Live = res.Contents
	got, m := v.Validate(next, o)
	if want := Directory(next, o); !reflect.DeepEqual(got, want) {
		t.Fatalf("differs from Directory:\n%s", resultDiff(got, want))
	}
	if m.Whole || m.Checked != 1 || m.Settled != 2 {
		t.Errorf("whole %v, %d checked, %d settled: want one checked, two settled (the renamed user and the one it freed a name for)", m.Whole, m.Checked, m.Settled)
	}
	if len(got.Rejections) != 0 || len(got.Contents.Users) != 2001 {
		t.Errorf("after the rename: %d users, rejections %v; want every user accepted", len(got.Contents.Users), got.Rejections)
	}
}

// A user whose home nests in another's moves away: the outer home's
// owner, refused for the nesting, is accepted again, though nothing else
// shares a value with it any more.
func TestIncrementalNestingEnds(t *testing.T) {
	o := baseOpts()
	inner := good("a-inner", "inner", 20001)
	inner.Home = "/home/shared/a"
	outer := good("b-outer", "outer", 20002)
	outer.Home = "/home/shared"
	dir := &source.Directory{Users: []source.User{outer, inner, good("c-other", "other", 20003)}}
	var v Incremental
	res, _ := v.Validate(dir, o)
	if len(res.Rejections) != 1 || res.Rejections[0].ID != "b-outer" || res.Rejections[0].Reason != HomeTaken {
		t.Fatalf("first validation: rejections %v; want b-outer refused for the nesting", res.Rejections)
	}
	next := &source.Directory{Users: slices.Clone(dir.Users)}
	next.Users[1].Home = "/home/inner"
	o.Live = res.Contents
	got, m := v.Validate(next, o)
	if want := Directory(next, o); !reflect.DeepEqual(got, want) {
		t.Fatalf("differs from Directory:\n%s", resultDiff(got, want))
	}
	if m.Whole || len(got.Rejections) != 0 {
		t.Errorf("whole %v, rejections %v; want every user accepted incrementally", m.Whole, got.Rejections)
	}
}
