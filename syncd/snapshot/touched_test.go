package snapshot

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/scimbridge/scimbridge/syncd/internal/fieldcheck"
)

// reversed is c with its lists in reverse id order: TouchedOf refuses
// it, so a diff of it walks every record (the whole path).
func reversed(c *Contents) *Contents {
	n := clone(c)
	slices.Reverse(n.Users)
	slices.Reverse(n.Groups)
	return n
}

// diffText is what a rowDiff decides, in an order that does not depend
// on the order of the lists it read.
func diffText(d *rowDiff) string {
	var out []string
	users := func(what string, l []User) {
		for _, u := range l {
			out = append(out, fmt.Sprintf("%s %s %d %v %d", what, u.Name, u.UID, u.SSHKeys, len(d.nextGIDs[u.Name])))
		}
	}
	users("del", d.delUsers)
	users("add", d.addUsers)
	users("mod", d.modUsers)
	users("keys", d.keysOf)
	users("ug", d.ugOf)
	groups := func(what string, l []Group) {
		for _, g := range l {
			out = append(out, fmt.Sprintf("%s %s %d %v", what, g.Name, g.GID, sortedMembers(g.Members)))
		}
	}
	groups("delg", d.delGroups)
	groups("addg", d.addGroups)
	groups("modg", d.modGroups)
	for _, m := range d.memDel {
		out = append(out, fmt.Sprint("memdel ", m))
	}
	for _, m := range d.memAdd {
		out = append(out, fmt.Sprint("memadd ", m))
	}
	for _, q := range d.quotas {
		out = append(out, fmt.Sprint("quota ", q))
	}
	for _, a := range append(slices.Clone(d.assocDel), d.assocAdd...) {
		out = append(out, fmt.Sprint("assoc ", a))
	}
	for n := range d.userNames {
		out = append(out, "user "+n+" "+fmt.Sprint(d.nextGIDs[n], d.prevGIDs[n]))
	}
	for n := range d.groupNames {
		out = append(out, "group "+n)
	}
	for n := range d.uids {
		out = append(out, fmt.Sprint("uid ", n))
	}
	for n := range d.gids {
		out = append(out, fmt.Sprint("gid ", n))
	}
	for n := range d.assocUsers {
		out = append(out, "assocuser "+n)
	}
	slices.Sort(out)
	return strings.Join(out, "\n")
}

// The diff of the touched records is the diff of the whole directories,
// over 3,000 random changes (renames, re-keyed uids and gids, members
// added and removed, deletions, keys, quotas, associations), one to four
// at a time; the digest it derives is the whole contents' digest.
func TestTouchedDiffEqualsWholeDiff(t *testing.T) {
	r := rand.New(rand.NewPCG(18, 5))
	cur := generated(300, 40)
	byID(cur)
	seq, changes := 0, 0
	for round := 0; changes < 3000; round++ {
		next := clone(cur)
		for range 1 + r.IntN(4) {
			randomChange(r, next, &seq)
			changes++
			if r.IntN(8) == 0 {
				u := &next.Users[r.IntN(len(next.Users))]
				u.Quota = uint64(r.IntN(3)) << 30
			}
			if r.IntN(8) == 0 {
				g := &next.Groups[r.IntN(len(next.Groups))]
				g.Quota = uint64(r.IntN(3)) << 40
			}
		}
		byID(next)
		if _, ok := TouchedOf(cur, next); !ok {
			t.Fatalf("round %d: TouchedOf refuses contents in id order", round)
		}
		contentsHash(cur) // remembered, as the writer's last commit leaves it
		fast := diffContents(cur, next)
		fastHash := fast.nextHash(cur, next)
		rp, rn := reversed(cur), reversed(next)
		if _, ok := TouchedOf(rp, rn); ok {
			t.Fatal("TouchedOf accepts lists in reverse id order")
		}
		whole := diffContents(rp, rn)
		if g, w := diffText(fast), diffText(whole); g != w {
			t.Fatalf("round %d: the touched records' diff differs from the whole diff:\n got %s\nwant %s", round, g, w)
		}
		if want := contentsHash(next); fastHash != want {
			t.Fatalf("round %d: digest from the touched diff %.12s, of the contents %.12s", round, fastHash, want)
		}
		cur = next
	}
}

// SameUser and SameGroup compare every field: a field added to User or
// Group must be added to them (else TouchedOf would call two records
// the same that differ in it).
func TestSameCoversEveryField(t *testing.T) {
	fieldcheck.EveryField(t, SameUser)
	fieldcheck.EveryField(t, SameGroup)
}

// gidsOf for a few names (searching sorted member lists) answers as the
// walk over every membership does, sorted lists or not.
func TestGIDsOfFewEqualsEveryMembership(t *testing.T) {
	r := rand.New(rand.NewPCG(18, 11))
	c := generated(500, 60)
	for round := range 200 {
		if round%2 == 1 { // unsorted lists too
			g := &c.Groups[r.IntN(len(c.Groups))]
			r.Shuffle(len(g.Members), func(i, j int) { g.Members[i], g.Members[j] = g.Members[j], g.Members[i] })
		} else {
			for i := range c.Groups {
				slices.Sort(c.Groups[i].Members)
			}
		}
		names := map[string]bool{"nobody-at-all": true}
		for range 1 + r.IntN(fewNames-1) {
			names[c.Users[r.IntN(len(c.Users))].Name] = true
		}
		all := c.gidsOf(nil)
		got := c.gidsOf(names)
		for n := range names {
			if !slices.Equal(got[n], all[n]) {
				t.Fatalf("round %d: gids of %s: %v, every membership says %v", round, n, got[n], all[n])
			}
		}
		if len(got) > len(names) {
			t.Fatalf("round %d: %d names asked, %d answered", round, len(names), len(got))
		}
	}
}

// BenchmarkGIDsOf: the groups of one user at 100,000 users / 10,000
// groups, by searching the sorted member lists (few) and by hashing
// every membership (every, as for more than fewNames names), as a
// one-change poll's diff asks for them.
func BenchmarkGIDsOf(b *testing.B) {
	c := generated(100000, 10000)
	for i := range c.Groups {
		slices.Sort(c.Groups[i].Members)
	}
	name := c.Users[len(c.Users)/3].Name
	b.Run("few", func(b *testing.B) {
		for range b.N {
			if len(c.gidsOf(map[string]bool{name: true})[name]) == 0 {
				b.Fatal("no groups")
			}
		}
	})
	// Past fewNames: the walk that hashes every membership (what one
	// name cost before).
	many := map[string]bool{name: true}
	for i := 0; len(many) <= fewNames; i++ {
		many[c.Users[i].Name] = true
	}
	b.Run("every", func(b *testing.B) {
		for range b.N {
			if len(c.gidsOf(many)[name]) == 0 {
				b.Fatal("no groups")
			}
		}
	})
}

// gidsOfPair answers what gidsOf answers for each directory, whether
// member lists are shared, changed, unsorted, or groups added and gone.
func TestGIDsOfPairIsGIDsOf(t *testing.T) {
	r := rand.New(rand.NewPCG(18, 41))
	prev := generated(400, 40)
	for round := range 200 {
		next := &Contents{Users: prev.Users, Groups: slices.Clone(prev.Groups)}
		for range 1 + r.IntN(3) {
			g := &next.Groups[r.IntN(len(next.Groups))]
			switch r.IntN(4) {
			case 0:
				g.Members = append(slices.Clone(g.Members), prev.Users[r.IntN(len(prev.Users))].Name)
				slices.Sort(g.Members)
			case 1:
				g.Members = append(slices.Clone(g.Members), "zz-unsorted", "aa-unsorted")
			case 2:
				k := r.IntN(len(next.Groups))
				next.Groups = slices.Delete(next.Groups, k, k+1)
			default:
				next.Groups = append(next.Groups, Group{Name: fmt.Sprint("new", round), GID: uint32(900000 + round),
					Members: []string{prev.Users[r.IntN(len(prev.Users))].Name}})
			}
		}
		names := map[string]bool{"zz-unsorted": true}
		for range 1 + r.IntN(fewNames-1) {
			names[prev.Users[r.IntN(len(prev.Users))].Name] = true
		}
		pm, nm := gidsOfPair(prev, next, names)
		if wp, wn := prev.gidsOf(names), next.gidsOf(names); !reflect.DeepEqual(pm, wp) || !reflect.DeepEqual(nm, wn) {
			t.Fatalf("round %d: gidsOfPair %v / %v, gidsOf %v / %v", round, pm, nm, wp, wn)
		}
		prev = next
	}
}
