package receiver

import (
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
