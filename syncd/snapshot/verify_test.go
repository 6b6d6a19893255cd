package snapshot

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/scimbridge/scimbridge/syncd/cache"
)

// Verify asks every user's activity once (the enumeration) and every
// entry by name and by uid through the index: a file that answers one
// user's activity or one field otherwise than the contents is refused,
// wherever that user is.
func TestVerifyCatchesActivityAndEntries(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	c := bigContents(3000, 20)
	m, err := Write(path, c)
	if err != nil {
		t.Fatal(err)
	}
	if err := Verify(path, c, m); err != nil {
		t.Fatalf("the file as written: %v", err)
	}
	r, err := cache.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, i := range []int{0, 1, 1500, 2999} {
		u := c.Users[i]
		e, err := r.UserEntry(u.Name)
		full, err2 := r.User(u.Name)
		byUID, err3 := r.UserEntryByUID(u.UID)
		if err != nil || err2 != nil || err3 != nil || !sameEntry(e, u) || e.Active || full.Active != u.Active || byUID != e {
			t.Fatalf("user %q: entry %+v %v, user %+v %v, by uid %+v %v", u.Name, e, err, full, err2, byUID, err3)
		}
		for _, change := range []func(*User){
			func(u *User) { u.Active = !u.Active },
			func(u *User) { u.Shell += "x" },
			func(u *User) { u.GECOS = "other" },
		} {
			d := *c
			d.Users = append([]User(nil), c.Users...)
			change(&d.Users[i])
			if err := Verify(path, &d, m); err == nil || !strings.Contains(err.Error(), "differs") && !strings.Contains(err.Error(), "got") {
				t.Fatalf("user %d changed in the contents: Verify says %v", i, err)
			}
		}
	}
}
