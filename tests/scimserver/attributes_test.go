package scimserver

import (
	"testing"
)

const posixURN = "urn:ietf:params:scim:schemas:extension:posix:2.0:User"

func firstUser(t *testing.T, base, query string) map[string]any {
	t.Helper()
	r := get(t, base+"/Users"+query).wantStatus(t, 200)
	rs := r.resources()
	if len(rs) == 0 {
		t.Fatalf("no users for %s", query)
	}
	return rs[0]
}

func TestDefaultAttributes(t *testing.T) {
	s, base := start(t, Options{})
	if _, err := s.UpdateUser("alice", func(u *User) { u.Password = "hunter2" }); err != nil {
		t.Fatal(err)
	}
	u := firstUser(t, base, q("filter", `userName eq "alice"`))
	for _, k := range []string{"id", "userName", "active", "name", "emails", "meta", "externalId", posixURN} {
		if _, ok := u[k]; !ok {
			t.Errorf("default response lacks %s: %v", k, u)
		}
	}
	if _, ok := u["password"]; ok {
		t.Errorf("password (returned: never) was returned")
	}
	x := u[posixURN].(map[string]any)
	if x["uidNumber"] != 20001.0 || x["loginShell"] != "/bin/bash" || len(x["sshPublicKeys"].([]any)) != 2 {
		t.Errorf("extension = %v", x)
	}
	meta := u["meta"].(map[string]any)
	if meta["resourceType"] != "User" || meta["location"] != base+"/Users/"+u["id"].(string) || meta["version"] == nil {
		t.Errorf("meta = %v", meta)
	}
	// Never is never, even when asked for.
	u = firstUser(t, base, q("filter", `userName eq "alice"`, "attributes", "password,userName"))
	if _, ok := u["password"]; ok {
		t.Errorf("password returned when named")
	}
}

func TestAttributesParameter(t *testing.T) {
	_, base := start(t, Options{})
	u := firstUser(t, base, q("attributes", "userName,name.givenName"))
	if u["id"] == nil || u["userName"] != "alice" {
		t.Errorf("id (always) and userName must be present: %v", u)
	}
	for _, k := range []string{"active", "emails", "meta", posixURN} {
		if _, ok := u[k]; ok {
			t.Errorf("%s returned though not named", k)
		}
	}
	if n := u["name"].(map[string]any); len(n) != 1 || n["givenName"] != "Alice" {
		t.Errorf("name.givenName selected %v", n)
	}
	// Names are case-insensitive and may carry the schema URN.
	u = firstUser(t, base, q("attributes", "USERNAME,"+URNUser+":active,"+posixURN+":uidNumber"))
	if u["userName"] != "alice" || u["active"] != true {
		t.Errorf("case-insensitive / URN-qualified names: %v", u)
	}
	if x := u[posixURN].(map[string]any); len(x) != 1 || x["uidNumber"] != 20001.0 {
		t.Errorf("extension sub-attribute selection: %v", x)
	}
}

func TestExcludedAttributes(t *testing.T) {
	_, base := start(t, Options{})
	u := firstUser(t, base, q("excludedAttributes", "emails,id,name.familyName,"+posixURN))
	if _, ok := u["emails"]; ok {
		t.Errorf("emails not excluded")
	}
	if _, ok := u[posixURN]; ok {
		t.Errorf("extension not excluded")
	}
	if u["id"] == nil {
		t.Errorf("id (returned: always) was excluded")
	}
	if n := u["name"].(map[string]any); n["familyName"] != nil || n["givenName"] != "Alice" {
		t.Errorf("name after excluding familyName: %v", n)
	}
}

func TestReturnedRequestExtension(t *testing.T) {
	for _, f := range []Flavor{FlavorPOSIX, FlavorCoreWeave} {
		t.Run(f.Name, func(t *testing.T) {
			_, base := start(t, Options{Flavor: f, ReturnedRequest: true})
			u := firstUser(t, base, "")
			if _, ok := u[f.UserURN]; ok {
				t.Fatalf("returned:request extension sent by default: %v", u)
			}
			if u["userName"] != "alice" {
				t.Fatalf("userName missing")
			}
			u = firstUser(t, base, q("attributes", "userName,active,"+f.UserURN))
			x, ok := u[f.UserURN].(map[string]any)
			if !ok || x[f.UID] != 20001.0 || x[f.Shell] != "/bin/bash" || len(x[f.SSHKeys].([]any)) != 2 {
				t.Fatalf("extension named by URN: %v", u)
			}
			u = firstUser(t, base, q("attributes", f.UserURN+":"+f.UID))
			if x := u[f.UserURN].(map[string]any); len(x) != 1 {
				t.Fatalf("one extension attribute named: %v", x)
			}
			// /Schemas says so.
			sch := get(t, base+"/Schemas/"+f.UserURN).wantStatus(t, 200)
			for _, a := range sch.body["attributes"].([]any) {
				if a.(map[string]any)["returned"] != "request" {
					t.Errorf("schema attribute %v not returned:request", a)
				}
			}
		})
	}
}

func TestGetByIDWithAttributes(t *testing.T) {
	s, base := start(t, Options{ReturnedRequest: true})
	bob, _ := s.User("bob")
	r := get(t, base+"/Users/"+bob.ID).wantStatus(t, 200)
	if r.str("userName") != "bob" || r.body[posixURN] != nil {
		t.Fatalf("GET by id: %s", r.raw)
	}
	if r.header.Get("ETag") == "" {
		t.Errorf("GET by id has no ETag")
	}
	r = get(t, base+"/Users/"+bob.ID+q("attributes", posixURN)).wantStatus(t, 200)
	if r.body[posixURN] == nil || r.body["userName"] != nil {
		t.Fatalf("GET by id, attributes=extension: %s", r.raw)
	}
	get(t, base+"/Users/nope").wantError(t, 404, "")
	g, _ := s.Group("physics")
	r = get(t, base+"/Groups/"+g.ID).wantStatus(t, 200)
	if len(r.body["members"].([]any)) != 3 {
		t.Fatalf("GET group: %s", r.raw)
	}
}

func TestExtraSendsMalformedData(t *testing.T) {
	s, base := start(t, Options{})
	s.UpdateUser("bob", func(u *User) {
		u.Extra = map[string]any{"active": "False", posixURN: map[string]any{"uidNumber": "20002", "loginShell": nil}}
	})
	s.UpdateUser("erin", func(u *User) { u.Extra = map[string]any{"active": nil} })
	bob := firstUser(t, base, q("filter", `userName eq "bob"`))
	x := bob[posixURN].(map[string]any)
	if bob["active"] != "False" || x["uidNumber"] != "20002" || x["loginShell"] != nil || x["gidNumber"] != 20000.0 {
		t.Fatalf("bob with Extra: %v", bob)
	}
	if _, ok := firstUser(t, base, q("filter", `userName eq "erin"`))["active"]; ok {
		t.Fatal("erin's active not omitted")
	}
}

// An attribute of an extension the server does not describe (Extra) is
// returned when attributes= names it, and only what was named.
func TestExtraOfAnotherExtensionWhenNamed(t *testing.T) {
	const hpc = "urn:example:params:scim:schemas:extension:hpc:2.0:User"
	s, base := start(t, Options{})
	s.UpdateUser("bob", func(u *User) { u.Extra = map[string]any{hpc: map[string]any{"homeQuota": "12M", "other": 1}} })
	bob := firstUser(t, base, q("filter", `userName eq "bob"`, "attributes", "userName,"+hpc+":homeQuota"))
	x, ok := bob[hpc].(map[string]any)
	if !ok || x["homeQuota"] != "12M" || len(x) != 1 {
		t.Fatalf("named extension attribute: %v", bob)
	}
	bob = firstUser(t, base, q("filter", `userName eq "bob"`, "attributes", "userName"))
	if _, ok := bob[hpc]; ok {
		t.Fatalf("not named, yet returned: %v", bob)
	}
}
