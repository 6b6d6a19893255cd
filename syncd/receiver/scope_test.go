package receiver

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// lastAudit is the newest audit row naming target (after the batch is
// written).
func (e *env) auditFor(target string) *AuditEntry {
	e.t.Helper()
	flushAll()
	rows, err := e.s.Audit(context.Background(), 50)
	if err != nil {
		e.t.Fatal(err)
	}
	for i := range rows {
		if strings.Contains(rows[i].Target, target) {
			return &rows[i]
		}
	}
	return nil
}

func (e *env) as(token string) *env {
	c := *e
	c.token = token
	return &c
}

func resources(m map[string]any) []string {
	var out []string
	for _, r := range m["Resources"].([]any) {
		out = append(out, fmt.Sprint(r.(map[string]any)["id"]))
	}
	return out
}

// Client B (entra) cannot see, change, delete, disable or group client
// A's (okta) user: 404 as if absent, an audit line says why, and A's user
// is untouched on the cluster.
func TestClientScope(t *testing.T) {
	a := newEnv(t, Options{}, "")
	b := a.as("entra-token")
	annID := a.mkUser("ann")
	gA := a.must(201, "POST", "/Groups", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:Group"],"displayName":"hpc-a","members":[{"value":"`+annID+`"}]}`)["id"].(string)
	bobID := b.mkUser("bob")
	gB := b.must(201, "POST", "/Groups", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:Group"],"displayName":"hpc-b"}`)["id"].(string)

	for _, req := range []struct {
		method, path string
		body         any
	}{
		{"GET", "/Users/" + annID, nil},
		{"PATCH", "/Users/" + annID, patch(op("replace", "active", false))},
		{"PATCH", "/Users/" + annID, patch(op("replace", "userName", "Not A Posix Name!"), op("replace", "active", false))},
		{"PUT", "/Users/" + annID, fmt.Sprintf(`{%s,"userName":"ann","active":false}`, userSchemas)},
		{"DELETE", "/Users/" + annID, nil},
		{"GET", "/Groups/" + gA, nil},
		{"PATCH", "/Groups/" + gA, patch(op("remove", "members", []any{map[string]any{"value": annID}}))},
		{"DELETE", "/Groups/" + gA, nil},
	} {
		if st, m := b.do(req.method, req.path, req.body); st != 404 {
			t.Errorf("B %s %s: %d, want 404: %v", req.method, req.path, st, m)
		}
	}
	// Lists and filters show B only its own.
	if got := resources(b.must(200, "GET", "/Users", nil)); len(got) != 1 || got[0] != bobID {
		t.Errorf("B lists users %v, want only bob %s", got, bobID)
	}
	if got := b.must(200, "GET", "/Users?filter="+urlq(`userName eq "ann"`), nil); fmt.Sprint(got["totalResults"]) != "0" {
		t.Errorf("B finds ann by filter: %v", got)
	}
	if got := b.must(200, "GET", "/Users?filter="+urlq(`userName sw "a"`), nil); fmt.Sprint(got["totalResults"]) != "0" {
		t.Errorf("B finds ann by a scanned filter: %v", got)
	}
	if got := resources(b.must(200, "GET", "/Groups", nil)); len(got) != 1 || got[0] != gB {
		t.Errorf("B lists groups %v, want only %s", got, gB)
	}
	// B cannot put A's user into its own group.
	if st, m := b.do("PATCH", "/Groups/"+gB, patch(op("add", "members", []any{map[string]any{"value": annID}}))); st != 400 {
		t.Errorf("B adds A's user to its group: %d %v", st, m)
	}
	// A still sees everything of its own, unchanged.
	if u := a.user("ann"); u == nil || u.Active == nil || !*u.Active {
		t.Fatalf("ann after B's attempts: %+v", u)
	}
	if m := a.members("hpc-a"); len(m) != 1 {
		t.Errorf("hpc-a members after B's attempts: %v", m)
	}
	a.must(200, "PATCH", "/Users/"+annID, patch(op("replace", "displayName", "Ann A")))
	if got := resources(a.must(200, "GET", "/Users", nil)); len(got) != 1 || got[0] != annID {
		t.Errorf("A lists users %v, want only ann", got)
	}
	row := a.auditFor("users " + annID + " refused")
	if row == nil || row.Client != "entra" || !strings.Contains(row.Target, `scope "okta"`) {
		t.Errorf("no audit line for B's refused write: %+v", row)
	}
}

// Token rotation: two entries of one IdP with one scope both act on what
// either created; another scope still does not.
func TestScopeRotation(t *testing.T) {
	a := newEnv(t, Options{}, "", func(o *ServerOptions) {
		o.Clients[0].Scope = "okta-prod"
		o.Clients = append(o.Clients, Client{Name: "okta-2026", SHA256: hashBytes("okta-new"), Scope: "okta-prod"})
	})
	id := a.mkUser("ann")
	rot := a.as("okta-new")
	rot.must(200, "GET", "/Users/"+id, nil)
	rot.must(200, "PATCH", "/Users/"+id, patch(op("replace", "active", false)))
	newID := rot.mkUser("ben")
	a.must(204, "DELETE", "/Users/"+newID, nil)
	if st, _ := a.as("entra-token").do("GET", "/Users/"+id, nil); st != 404 {
		t.Errorf("another scope reads ann: %d", st)
	}
	if u := a.user("ann"); u == nil || *u.Active {
		t.Errorf("the rotated token's disable was lost: %+v", u)
	}
}

// shared_scope: every client sees and changes everything (before scopes).
func TestSharedScope(t *testing.T) {
	a := newEnv(t, Options{}, "", func(o *ServerOptions) { o.SharedScope = true })
	b := a.as("entra-token")
	id := a.mkUser("ann")
	b.must(200, "GET", "/Users/"+id, nil)
	b.must(200, "PATCH", "/Users/"+id, patch(op("replace", "active", false)))
	if u := a.user("ann"); u == nil || *u.Active {
		t.Errorf("B's disable in shared scope was lost: %+v", u)
	}
	b.must(204, "DELETE", "/Users/"+id, nil)
}

// Rows without a creator (a store from before scopes, `syncd users add`)
// are every scope's until a client writes one: then they are its own.
func TestUnownedRowsClaimed(t *testing.T) {
	a := newEnv(t, Options{}, "")
	b := a.as("entra-token")
	if _, err := a.s.AddUser(context.Background(), "local:root", LocalUser{Name: "old"}); err != nil {
		t.Fatal(err)
	}
	l := b.must(200, "GET", "/Users?filter="+urlq(`userName eq "old"`), nil)
	ids := resources(l)
	if len(ids) != 1 {
		t.Fatalf("an unowned user is not visible to B: %v", l)
	}
	a.must(200, "GET", "/Users/"+ids[0], nil)
	a.must(200, "PATCH", "/Users/"+ids[0], patch(op("replace", "displayName", "Old")))
	if st, _ := b.do("GET", "/Users/"+ids[0], nil); st != 404 {
		t.Errorf("after A's write B still sees the user: %d", st)
	}
}

// The new-number quota is per scope: one token using up its allowance
// does not stop another IdP.
func TestQuotaPerScope(t *testing.T) {
	a := newEnv(t, Options{MaxNewIDsPerHour: 2}, "")
	b := a.as("entra-token")
	a.mkUser("q1")
	a.mkUser("q2")
	st, m := a.do("POST", "/Users", fmt.Sprintf(`{%s,"userName":"q3"}`, userSchemas))
	if st != 500 || !strings.Contains(fmt.Sprint(m["detail"]), `scope "okta"`) {
		t.Fatalf("A's third new uid: %d %v", st, m)
	}
	b.mkUser("r1")
	b.mkUser("r2")
	if st, _ := b.do("POST", "/Users", fmt.Sprintf(`{%s,"userName":"r3"}`, userSchemas)); st != 500 {
		t.Errorf("B's third new uid: %d, want 500", st)
	}
}

// A store made before scopes (no scope column) opens: the column is added
// and its rows have no creator.
func TestScopeColumnMigration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "receiver.db")
	o := Options{UIDMin: 20000, UIDMax: 29999, GIDMin: 20000, GIDMax: 29999}
	s, err := Open(path, o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddUser(context.Background(), "local:root", LocalUser{Name: "old"}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"ALTER TABLE users DROP COLUMN scope", "ALTER TABLE groups DROP COLUMN scope"} {
		if _, err := s.db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	a := newEnv(t, o, path)
	l := a.as("entra-token").must(200, "GET", "/Users?filter="+urlq(`userName eq "old"`), nil)
	if len(resources(l)) != 1 {
		t.Fatalf("the old store's user: %v", l)
	}
}

// A 409 names the record in the way only when the client may see it:
// another scope's id and names never appear in the answer (issue 20).
func TestConflictHidesOtherScope(t *testing.T) {
	a := newEnv(t, Options{}, "")
	b := a.as("entra-token")
	ann := a.must(201, "POST", "/Users", fmt.Sprintf(`{%s,"userName":"ann@a.example","externalId":"ext-ann"}`, userSchemas))
	annID := ann["id"].(string)
	gA := a.must(201, "POST", "/Groups", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:Group"],"displayName":"hpc team"}`)["id"].(string)
	for _, req := range []struct{ path, body string }{
		{"/Users", fmt.Sprintf(`{%s,"userName":"ANN@A.example"}`, userSchemas)},                // userName, ignoring case
		{"/Users", fmt.Sprintf(`{%s,"userName":"ann@b.example"}`, userSchemas)},                // same POSIX name
		{"/Users", fmt.Sprintf(`{%s,"userName":"other","externalId":"ext-ann"}`, userSchemas)}, // externalId
		{"/Groups", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:Group"],"displayName":"HPC Team"}`},
		{"/Groups", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:Group"],"displayName":"hpc_team"}`}, // same Linux name
	} {
		st, m := b.do("POST", req.path, req.body)
		d := fmt.Sprint(m["detail"])
		if st != 409 || strings.Contains(d, annID) || strings.Contains(d, gA) || strings.Contains(d, "ann@a.example") || strings.Contains(d, `"hpc team"`) || !strings.Contains(d, "another client's scope") {
			t.Errorf("B POST %s %s: %d %q, want 409 without A's ids or names", req.path, req.body, st, d)
		}
	}
	// The audit log, root's, names the record the answer left out.
	if row := b.auditFor("conflict with user " + annID); row == nil || row.Status != 409 || row.Client != "entra" {
		t.Errorf("no audit line naming the hidden holder: %+v", row)
	}
	// The client that owns the record is told which it is.
	st, m := a.do("POST", "/Users", fmt.Sprintf(`{%s,"userName":"ann@b.example"}`, userSchemas))
	if st != 409 || !strings.Contains(fmt.Sprint(m["detail"]), annID) {
		t.Errorf("A's own conflict: %d %v, want its user's id", st, m)
	}
}

// shared_scope changes with a SIGHUP (SetSharedScope), no restart: turned
// on, another client acts on the user; turned off again, it is scoped.
func TestSharedScopeReload(t *testing.T) {
	a := newEnv(t, Options{}, "")
	b := a.as("entra-token")
	id := a.mkUser("ann")
	if st, _ := b.do("GET", "/Users/"+id, nil); st != 404 {
		t.Fatalf("scoped: B reads ann: %d", st)
	}
	a.h.SetSharedScope(true)
	b.must(200, "PATCH", "/Users/"+id, patch(op("replace", "active", false)))
	if u := a.user("ann"); u == nil || *u.Active {
		t.Errorf("B's disable under the reloaded shared_scope was lost: %+v", u)
	}
	a.h.SetSharedScope(false)
	if st, _ := b.do("PATCH", "/Users/"+id, patch(op("replace", "active", true))); st != 404 {
		t.Errorf("scoped again: B's PATCH answered %d, want 404", st)
	}
	if u := a.user("ann"); u == nil || *u.Active {
		t.Errorf("B re-enabled ann after shared_scope was turned off: %+v", u)
	}
}
