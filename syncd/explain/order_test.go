package explain

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scimbridge/scimbridge/syncd/snapshot"
	"github.com/scimbridge/scimbridge/syncd/source"
	"github.com/scimbridge/scimbridge/syncd/validate"
)

// The order from the last one (sortedByID) is the order of a sort
// (byID), over 2,000 directories each a few changes from the last: ids
// added, removed, moved within the directory, repeated (a hostile
// source), and the kinds kept apart.
func TestSortedByIDFollowsTheLastOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(18, 9))
	var ids []string
	for i := range 300 {
		ids = append(ids, fmt.Sprintf("%08x", r.Uint32()^uint32(i)))
	}
	others := []string{"b", "a", "c"}
	for round := range 2000 {
		for range 1 + r.IntN(3) {
			switch r.IntN(5) {
			case 0:
				ids = append(ids, fmt.Sprintf("n%d-%x", round, r.Uint32()))
			case 1:
				if len(ids) > 1 {
					i := r.IntN(len(ids))
					ids = slices.Delete(ids, i, i+1)
				}
			case 2:
				i, j := r.IntN(len(ids)), r.IntN(len(ids))
				ids[i], ids[j] = ids[j], ids[i]
			case 3:
				if r.IntN(10) == 0 { // a repeated id, for one round
					ids = append(ids, ids[r.IntN(len(ids))])
				}
			default:
				i := r.IntN(len(ids))
				ids = append(ids[:i:i], append([]string{fmt.Sprintf("m%d", round)}, ids[i:]...)...)
			}
		}
		id := func(i int) string { return ids[i] }
		got := sortedByID('u', idIndex(len(ids), id), len(ids), id)
		if want := byID(len(ids), id); !slices.Equal(got, want) {
			t.Fatalf("round %d: order from the last one %v, sorted %v", round, got[:min(10, len(got))], want[:min(10, len(want))])
		}
		// Another kind between two of these must not disturb them.
		oid := func(i int) string { return others[i] }
		if got := sortedByID('g', idIndex(len(others), oid), len(others), oid); !slices.Equal(got, []int{1, 0, 2}) {
			t.Fatalf("groups' order %v", got)
		}
		// Repeats last one round.
		ids = slices.Compact(slices.Sorted(slices.Values(ids)))
		r.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	}
}

// Build over a series of directories (users added, removed, moved,
// rejected, filtered; groups with members that are not published) gives
// the record a Build with nothing remembered gives: the same records in
// id order, the same verdicts, the same dropped members.
func TestBuildFromTheLastOrderEqualsAFreshBuild(t *testing.T) {
	r := rand.New(rand.NewPCG(18, 13))
	dir := &source.Directory{}
	for i := range 200 {
		dir.Users = append(dir.Users, source.User{ID: fmt.Sprintf("%08x", r.Uint32()^uint32(i)), UserName: fmt.Sprint("u", i)})
	}
	for i := range 10 {
		dir.Groups = append(dir.Groups, source.Group{ID: fmt.Sprintf("g%02d-%x", i, r.Uint32()), DisplayName: fmt.Sprint("g", i)})
	}
	for round := range 300 {
		switch r.IntN(3) {
		case 0:
			dir.Users = append(dir.Users, source.User{ID: fmt.Sprintf("n%d", round), UserName: fmt.Sprint("n", round)})
		case 1:
			i := r.IntN(len(dir.Users))
			dir.Users = slices.Delete(dir.Users, i, i+1)
		default:
			i, j := r.IntN(len(dir.Users)), r.IntN(len(dir.Users))
			dir.Users[i], dir.Users[j] = dir.Users[j], dir.Users[i]
		}
		res := &validate.Result{Contents: &snapshot.Contents{}}
		for i, u := range dir.Users {
			switch i % 7 {
			case 0:
				res.Rejections = append(res.Rejections, validate.Rejection{Kind: validate.KindUser, ID: u.ID, Reason: "x"})
			case 1: // not in posix_groups
			default:
				res.Contents.Users = append(res.Contents.Users, snapshot.User{Name: u.UserName, SCIMID: u.ID})
			}
		}
		for i := range dir.Groups {
			g := &dir.Groups[i]
			g.MemberIDs = g.MemberIDs[:0]
			for range 5 {
				g.MemberIDs = append(g.MemberIDs, dir.Users[r.IntN(len(dir.Users))].ID)
			}
			g.MemberIDs = append(g.MemberIDs, "not-a-user")
			res.Contents.Groups = append(res.Contents.Groups, snapshot.Group{Name: g.DisplayName, SCIMID: g.ID})
		}
		got := Build(1, "test", dir, res)
		lastOrder.Lock()
		lastOrder.ids = nil
		lastOrder.Unlock()
		want := Build(1, "test", dir, res)
		got.WrittenAt, want.WrittenAt = time.Time{}, time.Time{}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("round %d: the record built from the last order differs from a fresh one", round)
		}
		// Dropped: the members that are users of the source but not
		// published, in the group's order.
		pub := map[string]bool{}
		for _, u := range res.Contents.Users {
			pub[u.SCIMID] = true
		}
		for _, g := range got.Groups {
			var dropped []string
			for _, m := range g.Source.MemberIDs {
				if !pub[m] && slices.ContainsFunc(dir.Users, func(u source.User) bool { return u.ID == m }) {
					dropped = append(dropped, m)
				}
			}
			if !slices.Equal(g.Dropped, dropped) {
				t.Fatalf("round %d: group %s dropped %v, want %v", round, g.Source.ID, g.Dropped, dropped)
			}
		}
		if !slices.IsSortedFunc(got.Users, func(a, b UserRecord) int { return strings.Compare(a.Source.ID, b.Source.ID) }) {
			t.Fatalf("round %d: users not in id order", round)
		}
	}
}
