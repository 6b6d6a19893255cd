package scim

import (
	"context"
	"testing"
	"unsafe"

	"github.com/scimbridge/scimbridge/tests/scimserver"
)

// A full read holds each id once (intern.go): every group member is the
// very string of its user's ID, and that string is a copy, not a view of
// a page buffer that later pages overwrite (the ids still read right
// after the whole listing).
func TestFullReadSharesIDs(t *testing.T) {
	srv, url := testServer(t, scimserver.Options{Flavor: scimserver.FlavorPOSIX}, 450, 40)
	dir, err := newTestClient(t, url, nil).Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	expect(t, srv, dir)
	byID := make(map[string]string, len(dir.Users))
	for _, u := range dir.Users {
		byID[u.ID] = u.ID
	}
	members, shared := 0, 0
	for _, g := range dir.Groups {
		for _, m := range g.MemberIDs {
			id, ok := byID[m]
			if !ok {
				continue
			}
			members++
			if unsafe.StringData(id) == unsafe.StringData(m) {
				shared++
			}
		}
	}
	if members == 0 {
		t.Fatal("no group has a user member: the test reads nothing")
	}
	if shared != members {
		t.Errorf("%d of %d group members share their user's id string", shared, members)
	}
}

// Ids spelled differently in JSON are interned by their text: an escaped
// member id and a numeric one are their users' ids, and a type written in
// another case still makes a user member.
func TestFullReadInternedSpellings(t *testing.T) {
	h := &handWritten{bodies: map[string]string{
		"Users?1": `{"totalResults": 2, "Resources": [
			{"id": "u1", "userName": "a"},
			{"id": 17, "userName": "b"}]}`,
		"Users?3": minimalLists,
		"Groups?1": `{"totalResults": 1, "Resources": [
			{"id": "g1", "displayName": "team", "members": [
				{"value": "u\u0031", "type": "user"}, {"value": 17, "type": "User"}, "u1",
				{"value": "g2", "type": "GROUP"}]}]}`,
		"Groups?2": minimalLists,
	}}
	dir, err := shapeClient(t, serveHandWritten(t, h), quietLog()).Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(dir.Groups) != 1 {
		t.Fatalf("%d groups", len(dir.Groups))
	}
	got := dir.Groups[0].MemberIDs
	if len(got) != 3 || got[0] != "u1" || got[1] != "17" || got[2] != "u1" {
		t.Fatalf("members %q, want [u1 17 u1]", got)
	}
	ids := map[string]string{}
	for _, u := range dir.Users {
		ids[u.ID] = u.ID
	}
	for _, m := range got {
		if unsafe.StringData(ids[m]) != unsafe.StringData(m) {
			t.Errorf("member %q is not its user's id string", m)
		}
	}
}
