package explain

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
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
