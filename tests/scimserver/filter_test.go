package scimserver

import (
	"slices"
	"testing"
	"time"
)

func TestFilters(t *testing.T) {
	s, base := start(t, Options{})
	alice, _ := s.User("alice")
	for _, tc := range []struct {
		filter string
		want   []string
	}{
		{`userName eq "alice"`, []string{"alice"}},
		{`USERNAME EQ "ALICE"`, []string{"alice"}}, // userName is caseExact false
		{`id eq "` + alice.ID + `"`, []string{"alice"}},
		{`userName sw "grace"`, []string{"grace hopper"}},
		{`active eq false`, []string{"carol"}},
		{`userName eq "nobody"`, nil},
		{`active eq true and name.familyName co "o"`, []string{"dave", "erin", "grace hopper", "ivan", "judy", "mallory"}},
		{`userName eq "bob" or userName eq "erin"`, []string{"bob", "erin"}},
		{`not (active eq true)`, []string{"carol"}},
		{`emails[type eq "work" and value sw "ivan"]`, []string{"ivan"}},
		{`emails.value eq "judy@example.org"`, []string{"judy"}},
		{posixURN + `:uidNumber lt 20002`, []string{"alice", "mallory"}},
		{posixURN + `:loginShell eq "/bin/notashell"`, []string{"frank"}},
		{posixURN + ` pr`, []string{"alice", "bob", "carol", "erin", "frank", "grace hopper", "heidi", "ivan", "judy", "mallory"}},
		{`not (` + posixURN + `:uidNumber pr)`, []string{"dave"}},
		{`shoeSize eq "42"`, nil}, // an unknown attribute matches nothing
	} {
		r := get(t, base+"/Users"+q("filter", tc.filter, "count", "100")).wantStatus(t, 200)
		if got := names(r.resources()); !slices.Equal(got, tc.want) {
			t.Errorf("filter %s: got %v, want %v", tc.filter, got, tc.want)
		}
		if r.num("totalResults") != len(tc.want) {
			t.Errorf("filter %s: totalResults %d, want %d", tc.filter, r.num("totalResults"), len(tc.want))
		}
	}
}

func TestGroupMemberFilter(t *testing.T) {
	s, base := start(t, Options{})
	erin, _ := s.User("erin")
	r := get(t, base+"/Groups"+q("filter", `members.value eq "`+erin.ID+`"`, "attributes", "displayName")).wantStatus(t, 200)
	if got := names(r.resources()); !slices.Equal(got, []string{"slurm-users", "ml-team", "physics"}) {
		t.Fatalf("groups with erin: %v", got)
	}
	r = get(t, base+"/Groups"+q("filter", `displayName eq "ml-team" and members[value eq "`+erin.ID+`"]`)).wantStatus(t, 200)
	if got := names(r.resources()); !slices.Equal(got, []string{"ml-team"}) {
		t.Fatalf("value filter on members: %v", got)
	}
}

func TestLastModifiedFilter(t *testing.T) {
	clock := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	s, base := start(t, Options{Now: func() time.Time { return clock }})
	mark := "2026-01-01T12:00:00Z"
	r := get(t, base+"/Users"+q("filter", `meta.lastModified gt "`+mark+`"`)).wantStatus(t, 200)
	if len(r.resources()) != 0 {
		t.Fatalf("nothing changed after %s, got %v", mark, names(r.resources()))
	}
	clock = clock.Add(time.Minute)
	if err := s.SetActive("bob", false); err != nil {
		t.Fatal(err)
	}
	r = get(t, base+"/Users"+q("filter", `meta.lastModified gt "`+mark+`"`)).wantStatus(t, 200)
	if got := names(r.resources()); !slices.Equal(got, []string{"bob"}) {
		t.Fatalf("changed since %s: %v", mark, got)
	}
	// Two changes within one clock tick still advance lastModified.
	bob1, _ := s.User("bob")
	s.SetActive("bob", true)
	bob2, _ := s.User("bob")
	if !bob2.LastModified.After(bob1.LastModified) || bob2.Version != bob1.Version+1 {
		t.Fatalf("lastModified %v -> %v, version %d -> %d", bob1.LastModified, bob2.LastModified, bob1.Version, bob2.Version)
	}
}

func TestBadFilters(t *testing.T) {
	s, base := start(t, Options{})
	for _, f := range []string{`userName eq`, `userName foo "x"`, `userName eq alice`, `(userName eq "x"`, `userName eq "x" and`, `"x"`, `emails[type eq "work"`} {
		get(t, base+"/Users"+q("filter", f)).wantError(t, 400, "invalidFilter")
	}
	s.SetFaults(Faults{FilterEqAndOnly: true, NoExtensionFilter: true})
	get(t, base+"/Users"+q("filter", `userName eq "a" and active eq true`)).wantStatus(t, 200)
	for _, f := range []string{`userName sw "a"`, `userName eq "a" or userName eq "b"`, `not (active eq true)`, posixURN + `:uidNumber eq 20001`} {
		get(t, base+"/Users"+q("filter", f)).wantError(t, 400, "invalidFilter")
	}
}
