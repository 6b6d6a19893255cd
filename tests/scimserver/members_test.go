package scimserver

import (
	"slices"
	"strings"
	"testing"
)

// Options.UserGroups: each user carries the RFC 7643 section 4.1.2
// "groups" attribute, direct memberships and, through a nested group,
// indirect ones; a membership change shows at once.
func TestUserGroupsAttribute(t *testing.T) {
	s, base := start(t, Options{UserGroups: true})
	// physics (bob, erin, heidi) becomes a member of ml-team.
	if err := s.SetMembers("ml-team", []string{"alice", "carol", "erin", "judy", "physics"}); err != nil {
		t.Fatal(err)
	}
	groupsOf := func(user string, attrs ...string) map[string]string {
		t.Helper()
		r := get(t, base+"/Users"+q(append([]string{"filter", `userName eq "` + user + `"`}, attrs...)...)).wantStatus(t, 200)
		rs := r.resources()
		if len(rs) != 1 {
			t.Fatalf("user %s: %d resources", user, len(rs))
		}
		out := map[string]string{}
		gs, _ := rs[0]["groups"].([]any)
		for _, g := range gs {
			m := g.(map[string]any)
			out[m["display"].(string)] = m["type"].(string)
			if !strings.HasSuffix(m["$ref"].(string), "/Groups/"+m["value"].(string)) {
				t.Errorf("user %s: group %v: $ref does not name the value", user, m)
			}
		}
		return out
	}
	got := groupsOf("bob")
	if len(got) != 3 || got["slurm-users"] != "direct" || got["physics"] != "direct" || got["ml-team"] != "indirect" {
		t.Errorf("bob's groups = %v; want slurm-users and physics direct, ml-team indirect", got)
	}
	// Named in attributes=, it is returned (returned: default).
	if got := groupsOf("alice", "attributes", "groups"); len(got) != 3 || got["slurm-sudo"] != "direct" {
		t.Errorf("alice's groups with attributes=groups = %v", got)
	}
	if err := s.SetMembers("slurm-sudo", []string{"bob"}); err != nil {
		t.Fatal(err)
	}
	if got := groupsOf("alice"); len(got) != 2 || got["slurm-sudo"] != "" {
		t.Errorf("alice's groups after leaving slurm-sudo = %v", got)
	}
	if got := groupsOf("bob"); got["slurm-sudo"] != "direct" {
		t.Errorf("bob's groups after joining slurm-sudo = %v", got)
	}
	// Without the option there is no groups attribute.
	_, base2 := start(t, Options{})
	r := get(t, base2+"/Users").wantStatus(t, 200)
	if _, has := r.resources()[0]["groups"]; has {
		t.Errorf("groups rendered without Options.UserGroups")
	}
}

// GroupMembersNever: no group response has members, and members cannot
// be filtered on.
func TestGroupMembersNever(t *testing.T) {
	s, base := start(t, Options{})
	s.SetFaults(Faults{GroupMembersNever: true})
	r := get(t, base+"/Groups").wantStatus(t, 200)
	for _, g := range r.resources() {
		if _, has := g["members"]; has {
			t.Errorf("listing: group %v has members", g["displayName"])
		}
	}
	id := r.resources()[0]["id"].(string)
	g := get(t, base+"/Groups/"+id).wantStatus(t, 200)
	if _, has := g.body["members"]; has {
		t.Errorf("GET /Groups/%s has members", id)
	}
	get(t, base+"/Groups"+q("filter", `members.value eq "x"`)).wantError(t, 400, "invalidFilter")
	get(t, base+"/Groups"+q("filter", `members[value eq "x"]`)).wantError(t, 400, "invalidFilter")
}

// MembersRefOnly: members carry $ref and display, no value and no type.
func TestMembersRefOnly(t *testing.T) {
	s, base := start(t, Options{})
	s.SetFaults(Faults{MembersRefOnly: true})
	for _, u := range []string{base + "/Groups", base + "/Groups" + q("attributes", "members")} {
		r := get(t, u).wantStatus(t, 200)
		n := 0
		for _, g := range r.resources() {
			for _, m := range g["members"].([]any) {
				mm := m.(map[string]any)
				keys := slices.Sorted(func(yield func(string) bool) {
					for k := range mm {
						if !yield(k) {
							return
						}
					}
				})
				if strings.Join(keys, ",") != "$ref,display" || !strings.Contains(mm["$ref"].(string), "/Users/") {
					t.Fatalf("%s: member %v", u, mm)
				}
				n++
			}
		}
		if n == 0 {
			t.Fatalf("%s: no members at all", u)
		}
	}
	// The cached full rendering is untouched.
	s.SetFaults(Faults{})
	r := get(t, base+"/Groups").wantStatus(t, 200)
	m := r.resources()[0]["members"].([]any)[0].(map[string]any)
	if m["value"] == nil || m["type"] != "User" {
		t.Errorf("after the fault: member %v", m)
	}
}

func TestOmitPaginationConfig(t *testing.T) {
	s, base := start(t, Options{Cursor: true})
	if get(t, base+"/ServiceProviderConfig").wantStatus(t, 200).body["pagination"] == nil {
		t.Fatal("no pagination without the fault")
	}
	s.SetFaults(Faults{OmitPaginationConfig: true})
	if p := get(t, base+"/ServiceProviderConfig").wantStatus(t, 200).body["pagination"]; p != nil {
		t.Errorf("pagination = %v under OmitPaginationConfig", p)
	}
}

func TestFilterNoMatch(t *testing.T) {
	s, base := start(t, Options{})
	u := get(t, base+"/Users"+q("filter", `userName eq "alice"`)).wantStatus(t, 200).resources()[0]["id"].(string)
	if r := get(t, base+"/Groups"+q("filter", `members.value eq "`+u+`"`)).wantStatus(t, 200); len(r.resources()) == 0 {
		t.Fatal("alice in no group without the fault")
	}
	s.SetFaults(Faults{FilterNoMatch: "members"})
	for _, f := range []string{`members.value eq "` + u + `"`, `members[value eq "` + u + `"]`, `Members.Value eq "` + u + `"`} {
		if r := get(t, base+"/Groups"+q("filter", f)).wantStatus(t, 200); len(r.resources()) != 0 || r.num("totalResults") != 0 {
			t.Errorf("%s: %s", f, r.raw)
		}
	}
	if r := get(t, base+"/Groups"+q("filter", `displayName eq "physics"`)).wantStatus(t, 200); len(r.resources()) != 1 {
		t.Errorf("other filters broken: %s", r.raw)
	}
	s.SetFaults(Faults{FilterNoMatch: "META"})
	if r := get(t, base+"/Users"+q("filter", `meta.lastModified gt "2000-01-01T00:00:00Z"`)).wantStatus(t, 200); len(r.resources()) != 0 {
		t.Errorf("meta filter under FilterNoMatch META: %s", r.raw)
	}
}
