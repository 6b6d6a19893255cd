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

// A filter on meta alone (syncd's change check) is answered from each
// resource's meta without rendering it; the answer is the one the full
// renderings give, the resources in it rendered whole.
func TestMetaFilterMatchesFullRendering(t *testing.T) {
	clock := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	s, base := start(t, Options{Now: func() time.Time { return clock }})
	clock = clock.Add(time.Minute)
	s.SetActive("bob", false)
	clock = clock.Add(time.Minute)
	s.SetActive("erin", false)
	for _, path := range []string{"/Users", "/Groups"} {
		rs := s.userSchema()
		if path == "/Groups" {
			rs = s.groupSchema()
		}
		for _, f := range []string{`meta.lastModified gt "2026-01-01T12:00:30Z"`, `meta.lastModified ge "2026-01-01T12:01:00Z"`,
			`meta.lastModified gt "2026-01-01T12:01:30Z" or meta.created lt "2000-01-01T00:00:00Z"`, `not (meta.lastModified gt "2026-01-01T12:00:30Z")`,
			`meta.resourceType eq "User"`} {
			expr, err := parseFilter(rs, f, filterLimits{})
			if err != nil {
				t.Fatal(err)
			}
			if !metaOnly(expr) {
				t.Fatalf("%s: not seen as a filter on meta", f)
			}
			var want, got []uint64
			for _, it := range s.collect(rs, base, expr, true) {
				want = append(want, it.seq)
			}
			for _, it := range s.collectByMeta(rs, base, expr) {
				got = append(got, it.seq)
				if it.m != nil {
					t.Fatalf("%s: an item carries a partial rendering", f)
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%s %s: matched %v from meta, %v from full renderings", path, f, got, want)
			}
		}
	}
	r := get(t, base+"/Users"+q("filter", `meta.lastModified gt "2026-01-01T12:00:30Z"`)).wantStatus(t, 200)
	if got := names(r.resources()); !slices.Equal(got, []string{"bob", "erin"}) || r.resources()[0]["active"] != false {
		t.Fatalf("changed users: %v (%v)", got, r.resources())
	}
	if expr, _ := parseFilter(s.userSchema(), `userName eq "bob" and meta.lastModified gt "2026-01-01T12:00:30Z"`, filterLimits{}); metaOnly(expr) {
		t.Fatal("a filter on userName too was taken for a filter on meta")
	}
}
