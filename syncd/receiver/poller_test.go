package receiver

import (
	"context"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/scimbridge/scimbridge/syncd/source/scim"
)

// TestPollerReadsBack: syncd's own SCIM client, an independent consumer,
// reads the receiver: the same directory the receiver's Source gives, and
// its cheap change check (meta.lastModified gt, totalResults) sees a
// PATCH and a DELETE and nothing when nothing changed.
func TestPollerReadsBack(t *testing.T) {
	e := newEnv(t, Options{}, "")
	var ids []string
	for _, n := range []string{"ann", "ben", "cat"} {
		ids = append(ids, e.must(201, "POST", "/Users", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":"`+n+`","displayName":"`+n+`"}`)["id"].(string))
	}
	e.must(201, "POST", "/Groups", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:Group"],"displayName":"hpc-x","members":[{"value":"`+ids[0]+`"},{"value":"`+ids[2]+`"}]}`)
	log := logrus.New()
	log.SetOutput(io.Discard)
	c, err := scim.New(scim.Options{BaseURL: e.url, Token: testToken, PageSize: 2, MaxRetries: 0, Log: log,
		Attrs: scim.Attrs{UserName: "userName", Active: "active", GroupName: "displayName",
			UID: PosixUserURN + ":uidNumber", GID: PosixUserURN + ":gidNumber", SSHKeys: PosixUserURN + ":sshPublicKeys",
			GECOS: PosixUserURN + ":gecos", GroupGID: PosixGroupURN + ":gidNumber"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	got, err := c.Fetch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := e.dir()
	if len(got.Users) != 3 || len(got.Groups) != 1 {
		t.Fatalf("poller read %d users, %d groups", len(got.Users), len(got.Groups))
	}
	for i, u := range got.Users {
		w := want.Users[i]
		if u.ID != w.ID || *u.UID != *w.UID || *u.GID != *w.GID || u.GECOS != w.GECOS || *u.Active != *w.Active {
			t.Errorf("user %d: poller %+v, receiver %+v", i, u, w)
		}
	}
	if !slices.Equal(got.Groups[0].MemberIDs, want.Groups[0].MemberIDs) || *got.Groups[0].GID != *want.Groups[0].GID {
		t.Errorf("group: poller %+v, receiver %+v", got.Groups[0], want.Groups[0])
	}
	if ch, err := c.Changed(ctx); err != nil || ch {
		t.Fatalf("nothing changed: Changed = %v, %v", ch, err)
	}
	time.Sleep(1100 * time.Millisecond) // meta.lastModified is served to the second
	e.must(200, "PATCH", "/Users/"+ids[1], patch(op("replace", "active", false)))
	if ch, err := c.Changed(ctx); err != nil || !ch {
		t.Fatalf("after a PATCH: Changed = %v, %v", ch, err)
	}
	if _, err := c.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	if ch, err := c.Changed(ctx); err != nil || ch {
		t.Fatalf("after re-reading: Changed = %v, %v", ch, err)
	}
	e.must(204, "DELETE", "/Users/"+ids[2], nil)
	if ch, err := c.Changed(ctx); err != nil || !ch {
		t.Fatalf("after a DELETE: Changed = %v, %v", ch, err)
	}
}
