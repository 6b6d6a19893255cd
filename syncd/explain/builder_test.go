package explain

import (
	"bytes"
	"cmp"
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

// world is a source directory and what a validation made of it, changed
// one poll at a time the way the pipeline hands them over: every read a
// new directory (held records copied, changed ones replaced where they
// were, new ones appended, gone ones dropped) and new contents.
type world struct {
	r      *rand.Rand
	dir    *source.Directory
	next   int
	pub    map[string]bool // users published (else rejected or filtered)
	uid    map[string]uint32
	rejKey map[string]bool // users with a key rejection (still published)
	gpub   map[string]bool
	round  int
}

func newWorld(r *rand.Rand, users, groups int) *world {
	w := &world{r: r, dir: &source.Directory{}, pub: map[string]bool{}, uid: map[string]uint32{}, rejKey: map[string]bool{}, gpub: map[string]bool{}}
	for range users {
		w.dir.Users = append(w.dir.Users, w.newUser())
	}
	for g := range groups {
		gr := source.Group{ID: fmt.Sprintf("g-%04x-%d", r.Uint32()&0xffff, g), DisplayName: fmt.Sprint("grp", g)}
		for range r.IntN(12) {
			gr.MemberIDs = append(gr.MemberIDs, w.dir.Users[r.IntN(len(w.dir.Users))].ID)
		}
		if r.IntN(5) == 0 {
			gr.MemberIDs = append(gr.MemberIDs, "not-a-user")
		}
		w.gpub[gr.ID] = r.IntN(6) > 0
		w.dir.Groups = append(w.dir.Groups, gr)
	}
	return w
}

func (w *world) newUser() source.User {
	w.next++
	id := fmt.Sprintf("%08x-%d", w.r.Uint32(), w.next)
	v := int64(10000 + w.next)
	u := source.User{ID: id, UserName: fmt.Sprint("u", w.next), UID: &v}
	if w.r.IntN(3) == 0 {
		u.SSHKeys = []string{"ssh-ed25519 AAAA" + id}
	}
	w.pub[id] = w.r.IntN(8) > 0
	w.uid[id] = uint32(v)
	return u
}

// change makes one poll's change and returns its name.
func (w *world) change() string {
	r := w.r
	d := &source.Directory{Users: slices.Clone(w.dir.Users), Groups: slices.Clone(w.dir.Groups)}
	w.dir = d
	i := r.IntN(len(d.Users))
	u := &d.Users[i]
	g := &d.Groups[r.IntN(len(d.Groups))]
	switch r.IntN(13) {
	case 0:
		b := u.Active == nil || !*u.Active
		u.Active = &b
		return "disable/enable"
	case 1:
		u.SSHKeys = append(slices.Clip(u.SSHKeys), fmt.Sprint("ssh-ed25519 K", w.round))
		return "new key"
	case 2:
		d.Users = slices.Delete(d.Users, i, i+1)
		return "delete user"
	case 3:
		d.Users = append(d.Users, w.newUser())
		return "new user"
	case 4:
		u.UserName += "x"
		return "rename"
	case 5:
		g.MemberIDs = append(slices.Clip(g.MemberIDs), u.ID)
		return "add member"
	case 6:
		if len(g.MemberIDs) > 0 {
			g.MemberIDs = slices.Delete(slices.Clone(g.MemberIDs), 0, 1)
		}
		return "remove member"
	case 7:
		w.pub[u.ID] = !w.pub[u.ID] // rejected/filtered, or published again
		return "publication"
	case 8:
		w.rejKey[u.ID] = !w.rejKey[u.ID]
		return "key rejection"
	case 9:
		w.gpub[g.ID] = !w.gpub[g.ID]
		return "group publication"
	case 10:
		// A new read of everything: the same records, new strings.
		for k := range d.Users {
			x := &d.Users[k]
			x.ID = strings.Clone(x.ID)
			x.UserName = strings.Clone(x.UserName)
		}
		return "full read"
	case 11:
		// A record moved to the end (a source's order changing).
		m := d.Users[i]
		d.Users = append(slices.Delete(d.Users, i, i+1), m)
		return "moved"
	default:
		v := int64(w.uid[u.ID] + 500000)
		u.UID = &v
		w.uid[u.ID] = uint32(v)
		return "new uid"
	}
}

// result is a validation's result for the directory: published users in
// uid order, some rejected (a record) or filtered, key rejections on
// published ones, groups published by SCIM id plus a private group with
// none.
func (w *world) result() *validate.Result {
	res := &validate.Result{Contents: &snapshot.Contents{}, DroppedMembers: w.round, Filtered: w.round % 3}
	for _, u := range w.dir.Users {
		switch {
		case w.pub[u.ID]:
			res.Contents.Users = append(res.Contents.Users, snapshot.User{Name: u.UserName, UID: w.uid[u.ID], SCIMID: u.ID})
			if w.rejKey[u.ID] {
				res.Rejections = append(res.Rejections, validate.Rejection{Kind: validate.KindSSHKey, ID: u.ID, Name: u.UserName, Reason: validate.BadSSHKey})
			}
		case w.uid[u.ID]%2 == 0:
			res.Rejections = append(res.Rejections, validate.Rejection{Kind: validate.KindUser, ID: u.ID, Name: u.UserName, Reason: validate.BadUID})
		}
	}
	slices.SortFunc(res.Contents.Users, func(a, b snapshot.User) int { return cmp.Compare(a.UID, b.UID) })
	for k, g := range w.dir.Groups {
		if w.gpub[g.ID] {
			res.Contents.Groups = append(res.Contents.Groups, snapshot.Group{Name: g.DisplayName, GID: uint32(20000 + k), SCIMID: g.ID})
		} else {
			res.Rejections = append(res.Rejections, validate.Rejection{Kind: validate.KindGroup, ID: g.ID, Name: g.DisplayName, Reason: "bad group"})
		}
	}
	res.Contents.Groups = append(res.Contents.Groups, snapshot.Group{Name: "private", GID: 1 << 30})
	res.Rejections = append(res.Rejections, validate.Rejection{Kind: validate.KindConfig, ID: "posix_groups", Reason: validate.PosixGroupInexact})
	return res
}

func stripped(r *Record) Record {
	c := *r
	c.memo, c.WrittenAt = nil, time.Time{}
	return c
}

// TestBuilderEqualsBuild: the record a Builder patches from the last one
// is the record Build makes from nothing, and encodes to the same text,
// over thousands of random changes (users and groups added, deleted,
// renamed, moved, re-keyed, published or rejected, members added and
// removed, new reads of everything).
func TestBuilderEqualsBuild(t *testing.T) {
	r := rand.New(rand.NewPCG(18, 21))
	w := newWorld(r, 400, 40)
	var b Builder
	kinds := map[string]int{}
	for w.round = range 3000 {
		what := "first"
		if w.round > 0 {
			what = w.change()
		}
		res := w.result()
		got := b.Build(int64(w.round), "test", w.dir, res)
		want := Build(int64(w.round), "test", w.dir, res)
		if g, wn := stripped(got), stripped(want); !reflect.DeepEqual(g, wn) {
			for k := range max(len(g.Users), len(wn.Users)) {
				if k >= len(g.Users) || k >= len(wn.Users) || !reflect.DeepEqual(g.Users[k], wn.Users[k]) {
					t.Logf("first user that differs, #%d:\n got %+v\nwant %+v", k, g.Users[min(k, len(g.Users)-1)], wn.Users[min(k, len(wn.Users)-1)])
					break
				}
			}
			t.Fatalf("round %d (%s): the patched record differs from Build's (patched %d, whole %d, last why %q)", w.round, what, b.Patched, b.Whole, b.Why)
		}
		kinds[what]++
		{
			got.WrittenAt = want.WrittenAt // a second may have passed
			z, err := Encode(got)
			if err != nil {
				t.Fatal(err)
			}
			if text, want := gunzip(t, z), encoders(t, want); !bytes.Equal(text, want) {
				k := 0
				for k < min(len(text), len(want)) && text[k] == want[k] {
					k++
				}
				t.Fatalf("round %d (%s): the patched record encodes to other text at %d:\n got %.200q\nwant %.200q", w.round, what, k, text[max(0, k-100):], want[max(0, k-100):])
			}
		}
	}
	if b.Patched < 2500 {
		t.Fatalf("only %d of 3000 records were patched (last whole build: %s)", b.Patched, b.Why)
	}
	t.Logf("patched %d, whole %d; changes %v", b.Patched, b.Whole, kinds)
}
