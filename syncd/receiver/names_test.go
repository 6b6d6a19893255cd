package receiver

import (
	"fmt"
	"strings"
	"testing"
)

// Group names as IdPs write them: mappable names are stored (and reach the
// snapshot under the mapped name, see validate), unmappable ones are a 400
// naming the group_names key, and two names mapping to one Linux name
// are a 409 for the second, so the IdP shows the failure.
func TestGroupNamesAtPush(t *testing.T) {
	e := newEnv(t, Options{}, "")
	for _, n := range []string{"Sales Team EU", "équipe", "Research Computing Platform Engineering"} {
		e.must(201, "POST", "/Groups", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:Group"],"displayName":"`+n+`"}`)
	}
	st, m := e.do("POST", "/Groups", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:Group"],"displayName":"\u212aluster"}`)
	if st != 400 || !strings.Contains(m["detail"].(string), "group_names") {
		t.Errorf("unmappable name: %d %v", st, m)
	}
	st, m = e.do("POST", "/Groups", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:Group"],"displayName":"sales_team_eu"}`)
	if st != 409 || !strings.Contains(m["detail"].(string), `"sales_team_eu"`) {
		t.Errorf("colliding Linux name: %d %v", st, m)
	}
	e.s.opts.GroupNames.Space, e.s.opts.GroupNames.NonASCII, e.s.opts.GroupNames.TooLong = "", "refuse", "refuse"
	st, m = e.do("POST", "/Groups", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:Group"],"displayName":"Ops Team"}`)
	if st != 400 || !strings.Contains(m["detail"].(string), "group_names.space") {
		t.Errorf("space with space = \"\": %d %v", st, m)
	}
}

// With user_names.domains empty, a deleted alice@a.example's uid is not
// given to a later alice@b.example (another person, same derived login
// name); the same userName pushed again gets it back, and with both
// domains listed (one organisation) the second one takes it over.
func TestDerivedNameDoesNotInheritUID(t *testing.T) {
	e := newEnv(t, Options{}, "")
	id := e.must(201, "POST", "/Users", fmt.Sprintf(`{%s,"userName":"alice@a.example"}`, userSchemas))["id"].(string)
	uid := *e.user("alice").UID
	e.must(204, "DELETE", "/Users/"+id, nil)
	st, m := e.do("POST", "/Users", fmt.Sprintf(`{%s,"userName":"alice@b.example"}`, userSchemas))
	if d := fmt.Sprint(m["detail"]); st != 409 || !strings.Contains(d, "user_names.domains") || !strings.Contains(d, fmt.Sprint(uid)) {
		t.Errorf("alice@b.example after alice@a.example was deleted: %d %v", st, m)
	}
	e.must(201, "POST", "/Users", fmt.Sprintf(`{%s,"userName":"Alice@A.example"}`, userSchemas))
	if u := e.user("alice"); u == nil || *u.UID != uid {
		t.Errorf("the same userName again: %+v, want uid %d back", u, uid)
	}

	one := newEnv(t, Options{UserNameDomains: []string{"a.example", "b.example"}}, "")
	id = one.must(201, "POST", "/Users", fmt.Sprintf(`{%s,"userName":"alice@a.example"}`, userSchemas))["id"].(string)
	uid = *one.user("alice").UID
	one.must(204, "DELETE", "/Users/"+id, nil)
	one.must(201, "POST", "/Users", fmt.Sprintf(`{%s,"userName":"alice@b.example"}`, userSchemas))
	if u := one.user("alice"); u == nil || *u.UID != uid {
		t.Errorf("listed domains: %+v, want uid %d", u, uid)
	}
}
