package receiver

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
)

const (
	userSchemas = `"schemas":["urn:ietf:params:scim:schemas:core:2.0:User","urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"]`
	mgrPath     = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:manager"
)

func (e *env) mkUser(name string) string {
	e.t.Helper()
	m := e.must(201, "POST", "/Users", fmt.Sprintf(`{%s,"userName":%q,"active":true,"emails":[{"type":"work","primary":true,"value":"%s@contoso.com"}]}`, userSchemas, name, name))
	return m["id"].(string)
}

// Entra sends the enterprise manager as a plain string, often in the same
// PATCH as a disable; the PATCH is applied whole.
func TestEntraManagerAndDisable(t *testing.T) {
	e := newEnv(t, Options{}, "")
	boss, id := e.mkUser("boss"), e.mkUser("alice")
	e.must(200, "PATCH", "/Users/"+id, patch(op("Add", mgrPath, boss), op("Replace", "active", "False")))
	if u := e.user("alice"); u == nil || u.Active == nil || *u.Active {
		t.Fatalf("the disable in the manager PATCH was lost: %+v", u)
	}
	got := e.must(200, "GET", "/Users/"+id, nil)
	ent, _ := got["urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"].(map[string]any)
	if m, _ := ent["manager"].(map[string]any); m["value"] != boss {
		t.Errorf("manager = %v", ent)
	}
	// In a POST body too, and with the key in another case or spelt with
	// a JSON escape (the gate decodes only bodies that may hold the word:
	// these must be found).
	for i, key := range []string{"manager", "MANAGER", `m\u0061nager`} {
		name := fmt.Sprintf("bob%d", i)
		e.must(201, "POST", "/Users", fmt.Sprintf(`{%s,"userName":%q,"urn:ietf:params:scim:schemas:extension:enterprise:2.0:User":{"%s":%q}}`, userSchemas, name, key, boss))
		got := e.must(200, "GET", "/Users?filter="+url.QueryEscape(fmt.Sprintf(`userName eq %q`, name)), nil)
		res, _ := got["Resources"].([]any)
		u, _ := res[0].(map[string]any)
		ent, _ := u["urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"].(map[string]any)
		if m, _ := ent["manager"].(map[string]any); m["value"] != boss {
			t.Errorf("POST with key %s: manager = %v", key, ent)
		}
	}
	// Entra's filters.
	for f, want := range map[string]float64{
		`emails[type eq "work"].value eq "alice@contoso.com"`:     1,
		`emails[type eq "work"].value eq "nobody@contoso.com"`:    0,
		fmt.Sprintf(`id eq %q and manager eq %q`, id, boss):       1,
		fmt.Sprintf(`id eq %q and manager eq "someone-else"`, id): 0,
	} {
		m := e.must(200, "GET", "/Users?filter="+url.QueryEscape(f), nil)
		if m["totalResults"] != want {
			t.Errorf("filter %s: %v, want %v results", f, m["totalResults"], want)
		}
	}
}

// A PATCH with an op the receiver refuses is refused whole, but a disable
// in it is applied all the same: a refused op never hides a disable.
func TestRefusedPatchKeepsDisable(t *testing.T) {
	e := newEnv(t, Options{}, "")
	id := e.mkUser("carol")
	st, m := e.do("PATCH", "/Users/"+id, patch(op("replace", "userName", "\u212Aarol"), op("replace", "active", false)))
	if st != 400 {
		t.Fatalf("bad userName: %d %v", st, m)
	}
	if u := e.user("carol"); u == nil || u.Active == nil || *u.Active {
		t.Fatalf("the disable in a refused PATCH was lost: %+v", u)
	}
	if !strings.Contains(fmt.Sprint(m["detail"]), "disable") {
		t.Errorf("the 400 does not say the disable was applied: %v", m)
	}
	// Nothing else of the refused PATCH was applied.
	if got := e.must(200, "GET", "/Users/"+id, nil); got["userName"] != "carol" {
		t.Errorf("userName = %v", got["userName"])
	}
}

// authentik's group PATCH carries schemas (and the whole group) in value.
func TestAuthentikGroupPatch(t *testing.T) {
	e := newEnv(t, Options{}, "")
	uid := e.mkUser("dave")
	g := e.must(201, "POST", "/Groups", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:Group"],"displayName":"team-a"}`)
	gid := g["id"].(string)
	e.must(200, "PATCH", "/Groups/"+gid, patch(op("replace", "", map[string]any{
		"schemas": []any{"urn:ietf:params:scim:schemas:core:2.0:Group"}, "displayName": "team-b", "externalId": "ak-1",
		"members": []any{map[string]any{"value": uid}}})))
	if got := e.members("team-b"); !slices.Equal(got, []string{"dave"}) {
		t.Errorf("renamed group members: %v", got)
	}
}

// A pushed gidNumber the ledger holds for a deleted group is refused, as
// uids are; a singular sshPublicKey is kept; itemsPerPage counts what is
// returned.
func TestLedgerGIDsKeysAndPages(t *testing.T) {
	e := newEnv(t, Options{}, "")
	g := e.must(201, "POST", "/Groups", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:Group"],"displayName":"old-team",
		"urn:ietf:params:scim:schemas:extension:posix:2.0:Group":{"gidNumber":21234}}`)
	e.must(204, "DELETE", "/Groups/"+g["id"].(string), nil)
	st, m := e.do("POST", "/Groups", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:Group"],"displayName":"new-team",
		"urn:ietf:params:scim:schemas:extension:posix:2.0:Group":{"gidNumber":21234}}`)
	if st != 409 {
		t.Errorf("gid held by a deleted group: %d %v", st, m)
	}
	// A user pushing it as its primary gid is refused too.
	st, m = e.do("POST", "/Users", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":"erin",
		"urn:ietf:params:scim:schemas:extension:posix:2.0:User":{"gidNumber":21234}}`)
	if st != 409 {
		t.Errorf("primary gid held by a deleted group: %d %v", st, m)
	}
	key := "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGhRKPk7Yq0bCq1Ug0w3nYVtmB8hGrKQqDnJw1u7Oq3c f@x"
	e.must(201, "POST", "/Users", fmt.Sprintf(`{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":"frank",
		"urn:ietf:params:scim:schemas:extension:posix:2.0:User":{"sshPublicKey":%q}}`, key))
	if u := e.user("frank"); u == nil || !slices.Equal(u.SSHKeys, []string{key}) {
		t.Errorf("singular sshPublicKey: %+v", u)
	}
	m = e.must(200, "GET", "/Users?count=50", nil)
	if m["itemsPerPage"] != float64(len(m["Resources"].([]any))) {
		t.Errorf("itemsPerPage %v for %d resources", m["itemsPerPage"], len(m["Resources"].([]any)))
	}
}

// A token sent in the query (?access_token=) authenticates nothing and is
// never stored in the audit log.
func TestAuditLogHasNoQueryToken(t *testing.T) {
	e := newEnv(t, Options{}, "")
	e.token = ""
	if st, _ := e.do("GET", "/Users?access_token="+testToken+"&count=1", nil); st != 401 {
		t.Errorf("query token accepted: %d", st)
	}
	e.token = testToken
	e.must(200, "GET", "/Users?ACCESS_TOKEN="+testToken, nil)
	flushAll()
	rows, err := e.s.Audit(context.Background(), 10)
	if err != nil || len(rows) < 2 {
		t.Fatalf("audit: %v %v", rows, err)
	}
	for _, r := range rows {
		if strings.Contains(fmt.Sprint(r), testToken) {
			t.Errorf("audit row holds the token: %+v", r)
		}
	}
}

// A local `syncd users disable` sticks until `syncd users enable`: the
// IdP's later active:true (PATCH or PUT) and a rename do not lift it.
func TestLocalDisableSticks(t *testing.T) {
	e := newEnv(t, Options{}, "")
	id := e.mkUser("gina")
	ctx := context.Background()
	if err := e.s.SetActive(ctx, "admin", "gina", false); err != nil {
		t.Fatal(err)
	}
	e.must(200, "PATCH", "/Users/"+id, patch(op("replace", "active", true)))
	e.must(200, "PATCH", "/Users/"+id, patch(op("replace", "userName", "gina2")))
	e.must(200, "PUT", "/Users/"+id, fmt.Sprintf(`{%s,"userName":"gina2","active":true}`, userSchemas))
	if u := e.user("gina2"); u == nil || u.Active == nil || *u.Active {
		t.Fatalf("the IdP re-enabled a locally disabled user: %+v", u)
	}
	if err := e.s.SetActive(ctx, "admin", "gina2", true); err != nil {
		t.Fatal(err)
	}
	if u := e.user("gina2"); u == nil || !*u.Active {
		t.Fatalf("local enable did not lift the hold: %+v", u)
	}
	e.must(200, "PATCH", "/Users/"+id, patch(op("replace", "active", false)))
	e.must(200, "PATCH", "/Users/"+id, patch(op("replace", "active", true)))
	if u := e.user("gina2"); !*u.Active {
		t.Error("after the hold is lifted the IdP decides again")
	}
}

// New numbers are bounded per hour (receiver.max_new_ids_per_hour):
// beyond it a create fails (500, which IdPs retry) naming the option; returning names keep
// their numbers.
func TestNewIDQuota(t *testing.T) {
	e := newEnv(t, Options{MaxNewIDsPerHour: 3}, "")
	var ids []string
	for _, n := range []string{"q1", "q2", "q3"} {
		ids = append(ids, e.mkUser(n))
	}
	st, m := e.do("POST", "/Users", fmt.Sprintf(`{%s,"userName":"q4"}`, userSchemas))
	if st != 500 || !strings.Contains(fmt.Sprint(m["detail"]), "max_new_ids_per_hour") {
		t.Fatalf("fourth new uid: %d %v", st, m)
	}
	// A deleted name coming back takes its old number: no new one needed.
	e.must(204, "DELETE", "/Users/"+ids[0], nil)
	e.mkUser("q1")
}
