package receiver

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
)

// Issue 18: the receiver's incremental hand-off returns, after any mix
// of pushes and local changes (new users, renames, disables, keys,
// memberships, deletions), exactly what a whole read of the store
// returns, and decodes only what changed.
func TestUpdateEqualsFetch(t *testing.T) {
	e := newEnv(t, Options{}, "")
	ctx := context.Background()
	src := NewSource(e.s, "test")
	rng := rand.New(rand.NewPCG(18, 20))
	var names []string
	// More than readChunk users: the first Update reads them in chunks,
	// the last one padded.
	for i := 0; i < readChunk+44; i++ {
		n := fmt.Sprintf("user%d", i)
		if _, err := e.s.AddUser(ctx, "t", LocalUser{Name: n, DisplayName: "U " + n}); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	if _, changed, err := src.Update(ctx); err != nil || !changed {
		t.Fatalf("first Update: changed %v, %v", changed, err)
	}
	if _, changed, err := src.Update(ctx); err != nil || changed {
		t.Fatalf("Update with nothing new: changed %v, %v", changed, err)
	}
	for round := 0; round < 60; round++ {
		for k := 0; k < 8; k++ {
			n := names[rng.IntN(len(names))]
			var err error
			switch rng.IntN(8) {
			case 0:
				m := fmt.Sprintf("new%d_%d", round, k)
				if _, err = e.s.AddUser(ctx, "t", LocalUser{Name: m}); err == nil {
					names = append(names, m)
				}
			case 1:
				err = e.s.SetActive(ctx, "t", n, rng.IntN(2) == 0)
			case 2:
				err = e.s.SetKeys(ctx, "t", n, []string{fmt.Sprintf("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI%032d k", rng.IntN(1000))})
			case 3:
				err = e.s.AddMember(ctx, "t", fmt.Sprintf("team%d", rng.IntN(5)), n)
			case 4:
				err = e.s.RemoveMember(ctx, "t", fmt.Sprintf("team%d", rng.IntN(5)), n)
			case 5:
				if len(names) > 20 {
					err = e.s.RemoveUser(ctx, "t", n)
				}
			case 6:
				e.do("POST", "/Users", fmt.Sprintf(`{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":"push%d_%d@okta.local","active":true,"displayName":"P %d"}`, round, k, k))
			default:
				err = e.s.SetKeys(ctx, "t", n, nil)
			}
			_ = err // refused changes (a removed user, a member already gone) are part of the mix
		}
		got, _, err := src.Update(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want, err := src.Fetch(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			for i := range min(len(got.Users), len(want.Users)) {
				if !reflect.DeepEqual(got.Users[i], want.Users[i]) {
					t.Fatalf("round %d: user #%d: Update %+v, Fetch %+v", round, i, got.Users[i], want.Users[i])
				}
			}
			t.Fatalf("round %d: Update %d users %d groups, Fetch %d users %d groups", round, len(got.Users), len(got.Groups), len(want.Users), len(want.Groups))
		}
	}
}
