package commit

import (
	"bytes"
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/scimbridge/scimbridge/syncd/snapshot"
)

// Compute reads only the records snapshot.TouchedOf finds when both
// directories are in id order (as validation makes them): over 2,000
// random changes its report is the report of the whole comparison.
func TestComputeOfTouchedEqualsWhole(t *testing.T) {
	r := rand.New(rand.NewPCG(18, 7))
	cur := &snapshot.Contents{}
	for i := range 200 {
		name := fmt.Sprintf("u%d", i)
		cur.Users = append(cur.Users, snapshot.User{Name: name, UID: uint32(10000 + i), GID: 500, Home: "/home/" + name,
			Shell: "/bin/bash", Active: true, SCIMID: "id" + name})
	}
	for i := range 20 {
		g := snapshot.Group{Name: fmt.Sprintf("g%d", i), GID: uint32(20000 + i), SCIMID: fmt.Sprint("gid", i)}
		for _, u := range cur.Users {
			if r.IntN(5) == 0 {
				g.Members = append(g.Members, u.Name)
			}
		}
		cur.Groups = append(cur.Groups, g)
	}
	byID := func(c *snapshot.Contents) {
		slices.SortFunc(c.Users, func(a, b snapshot.User) int { return cmp.Compare(a.UID, b.UID) })
		slices.SortFunc(c.Groups, func(a, b snapshot.Group) int { return cmp.Compare(a.GID, b.GID) })
	}
	copyOf := func(c *snapshot.Contents, reverse bool) *snapshot.Contents {
		n := &snapshot.Contents{Users: slices.Clone(c.Users), Groups: slices.Clone(c.Groups)}
		for i := range n.Users {
			n.Users[i].SSHKeys = slices.Clone(n.Users[i].SSHKeys)
		}
		for i := range n.Groups {
			n.Groups[i].Members = slices.Clone(n.Groups[i].Members)
		}
		if reverse {
			slices.Reverse(n.Users)
			slices.Reverse(n.Groups)
		}
		return n
	}
	for seq := 0; seq < 2000; seq++ {
		next := copyOf(cur, false)
		u := &next.Users[r.IntN(len(next.Users))]
		g := &next.Groups[r.IntN(len(next.Groups))]
		switch r.IntN(10) {
		case 0:
			u.Active = !u.Active
		case 1:
			u.Name = fmt.Sprintf("ren%d", seq) // members keep the old name: a dangling member is still a diff
		case 2:
			u.UID = uint32(90000 + seq)
		case 3:
			next.Users = append(next.Users, snapshot.User{Name: fmt.Sprintf("new%d", seq), UID: uint32(50000 + seq), GID: 500})
		case 4:
			i := r.IntN(len(next.Users))
			next.Users = slices.Delete(next.Users, i, i+1)
		case 5:
			g.Members = append(g.Members, u.Name)
		case 6:
			if len(g.Members) > 0 {
				g.Members = g.Members[1:]
			}
		case 7:
			u.SSHKeys = append(u.SSHKeys, fmt.Sprint("ssh-ed25519 k", seq))
		case 8:
			g.Name, g.Quota = fmt.Sprintf("gren%d", seq), uint64(seq)
		default:
			u.Quota = uint64(r.IntN(3)) << 30
		}
		byID(next)
		if _, ok := snapshot.TouchedOf(cur, next); !ok {
			t.Fatalf("change %d: TouchedOf refuses contents in id order", seq)
		}
		var got, want bytes.Buffer
		Compute(cur, next).Print(&got)
		Compute(copyOf(cur, true), copyOf(next, true)).Print(&want)
		if got.String() != want.String() {
			t.Fatalf("change %d: the touched records' diff\n%s\ndiffers from the whole diff\n%s", seq, got.String(), want.String())
		}
		cur = next
	}
	// No snapshot yet: every user is added.
	if d := Compute(nil, cur); len(d.AddedUsers) != len(cur.Users) || len(d.AddedGroups) != len(cur.Groups) {
		t.Errorf("against no snapshot: %s", d.Summary())
	}
}
