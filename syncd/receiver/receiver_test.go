package receiver

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/scimbridge/scimbridge/syncd/source"
)

const testToken = "okta-token-1"

type env struct {
	t     *testing.T
	s     *Store
	url   string
	token string
	h     *Gate
}

// newEnv serves a store on loopback to two clients, okta (testToken) and
// entra ("entra-token"); with each func the server options may be changed.
func newEnv(t *testing.T, o Options, path string, with ...func(*ServerOptions)) *env {
	t.Helper()
	if path == "" {
		path = filepath.Join(t.TempDir(), "receiver.db")
	}
	if o.UIDMin == 0 {
		o.UIDMin, o.UIDMax, o.GIDMin, o.GIDMax = 20000, 29999, 20000, 29999
	}
	if o.SSHKeysAttribute == "" {
		o.SSHKeysAttribute = PosixUserURN + ":sshPublicKeys"
	}
	s, err := Open(path, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	var c1, c2 Client
	c1.Name, c1.SHA256 = "okta", hashBytes(testToken)
	c2.Name, c2.SHA256 = "entra", hashBytes("entra-token")
	so := ServerOptions{Clients: []Client{c1, c2}, RateLimit: 10000, RateBurst: 10000, MaxBody: 64 << 10}
	for _, f := range with {
		f(&so)
	}
	h, err := NewHandler(s, so)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(http.StripPrefix("/scim/v2", h))
	t.Cleanup(hs.Close)
	return &env{t: t, s: s, url: hs.URL + "/scim/v2", token: testToken, h: h}
}

func hashBytes(tok string) [32]byte {
	var h [32]byte
	b, _ := hexDecode(HashToken(tok))
	copy(h[:], b)
	return h
}

// do sends a request and decodes the JSON answer.
func (e *env) do(method, path string, body any) (int, map[string]any) {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		rd = bytes.NewReader(j)
	}
	req, _ := http.NewRequest(method, e.url+path, rd)
	req.Header.Set("Authorization", "Bearer "+e.token)
	req.Header.Set("Content-Type", "application/scim+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	json.Unmarshal(raw, &m)
	return resp.StatusCode, m
}

func (e *env) must(want int, method, path string, body any) map[string]any {
	e.t.Helper()
	st, m := e.do(method, path, body)
	if st != want {
		e.t.Fatalf("%s %s: status %d, want %d: %v", method, path, st, want, m)
	}
	return m
}

func (e *env) dir() *source.Directory {
	e.t.Helper()
	d, err := NewSource(e.s, "test").Fetch(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return d
}

func (e *env) user(name string) *source.User {
	for _, u := range e.dir().Users {
		if u.UserName == name {
			return &u
		}
	}
	return nil
}

// members returns the POSIX names of a group's members (nil: no group).
func (e *env) members(group string) []string {
	d := e.dir()
	names := map[string]string{}
	for _, u := range d.Users {
		names[u.ID] = u.UserName
	}
	for _, g := range d.Groups {
		if g.DisplayName == group {
			out := []string{}
			for _, id := range g.MemberIDs {
				out = append(out, names[id])
			}
			slices.Sort(out)
			return out
		}
	}
	return nil
}

const patchOp = "urn:ietf:params:scim:api:messages:2.0:PatchOp"

func patch(ops ...map[string]any) map[string]any {
	l := []any{}
	for _, o := range ops {
		l = append(l, o)
	}
	return map[string]any{"schemas": []string{patchOp}, "Operations": l}
}

func op(o, path string, v any) map[string]any {
	m := map[string]any{"op": o}
	if path != "" {
		m["path"] = path
	}
	if v != nil {
		m["value"] = v
	}
	return m
}

// TestOkta replays Okta's documented SCIM 2.0 provisioning traffic
// (developer.okta.com/docs/reference/scim/scim-20): lookup by userName,
// create, read, full PUT update, deactivate by PATCH (Okta never
// deletes users), group push, rename, member add and remove, group delete.
func TestOkta(t *testing.T) {
	e := newEnv(t, Options{UserNameDomains: []string{"okta.local"}}, "")
	q := "/Users?filter=" + urlq(`userName eq "test.user@okta.local"`) + "&startIndex=1&count=100"
	if m := e.must(200, "GET", q, nil); m["totalResults"] != float64(0) {
		t.Fatalf("lookup before create: %v", m)
	}
	created := e.must(201, "POST", "/Users", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],
		"userName":"test.user@okta.local","name":{"givenName":"Test","familyName":"User"},
		"emails":[{"primary":true,"value":"test.user@okta.local","type":"work"}],
		"displayName":"Test User","locale":"en-US","externalId":"00ujl29u0le5T6Aj10h7","groups":[],
		"password":"1mz050nq","active":true}`)
	id := created["id"].(string)
	if _, ok := created["password"]; ok {
		t.Error("password is echoed back")
	}
	ext := created[PosixUserURN].(map[string]any)
	if ext["uidNumber"] != float64(20000) || ext["gidNumber"] != float64(20000) {
		t.Errorf("allocated numbers %v, want uid 20000 gid 20000", ext)
	}
	u := e.user("test.user")
	if u == nil || *u.UID != 20000 || !*u.Active || u.GECOS != "Test User" {
		t.Fatalf("after create: %+v", u)
	}
	if m := e.must(200, "GET", q, nil); m["totalResults"] != float64(1) {
		t.Fatalf("lookup after create: %v", m)
	}
	// Case-insensitive uniqueness: Okta retrying with another case is a 409.
	st, m := e.do("POST", "/Users", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":"Test.User@okta.local","active":true}`)
	if st != 409 || m["scimType"] != "uniqueness" {
		t.Errorf("duplicate userName: %d %v", st, m)
	}
	e.must(200, "GET", "/Users/"+id, nil)
	// Profile update: Okta sends the whole user with PUT.
	e.must(200, "PUT", "/Users/"+id, `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"id":"`+id+`",
		"userName":"test.user@okta.local","name":{"givenName":"Another","familyName":"User"},
		"emails":[{"primary":true,"value":"test.user@okta.local","type":"work"}],"displayName":"Another User",
		"locale":"en-US","externalId":"00ujl29u0le5T6Aj10h7","groups":[],"active":true,
		"meta":{"resourceType":"User"}}`)
	u = e.user("test.user")
	if *u.UID != 20000 || u.GECOS != "Another User" {
		t.Fatalf("PUT lost the uid or the update: %+v", u)
	}
	// Deactivate.
	e.must(200, "PATCH", "/Users/"+id, patch(op("replace", "", map[string]any{"active": false})))
	if u = e.user("test.user"); *u.Active {
		t.Fatal("deactivated user still active")
	}
	e.must(200, "PATCH", "/Users/"+id, patch(op("replace", "", map[string]any{"active": true})))

	// A second user for the group.
	id2 := e.must(201, "POST", "/Users", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":"second@okta.local","active":true,"externalId":"00u2"}`)["id"].(string)
	// Group push.
	g := e.must(201, "POST", "/Groups", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:Group"],"displayName":"Test SCIMv2","members":[]}`)
	gid := g["id"].(string)
	if gext := g[PosixGroupURN].(map[string]any); gext["gidNumber"] != float64(20002) {
		t.Errorf("group gid %v: want 20002 (20000, 20001 are the users' private groups)", gext)
	}
	e.must(200, "GET", "/Groups?filter="+urlq(`displayName eq "Test SCIMv2"`)+"&startIndex=1&count=100", nil)
	// Okta renames with replace + id in the value.
	e.must(200, "PATCH", "/Groups/"+gid, patch(op("replace", "", map[string]any{"id": gid, "displayName": "hpc-ml"})))
	e.must(204, "PATCH", "/Groups/"+gid, patch(op("add", "members", []any{
		map[string]any{"value": id, "display": "test.user@okta.local"}, map[string]any{"value": id2, "display": "second@okta.local"}})))
	if got := e.members("hpc-ml"); !slices.Equal(got, []string{"second", "test.user"}) {
		t.Fatalf("members after add: %v", got)
	}
	got := e.must(200, "GET", "/Groups/"+gid, nil)
	if ms, _ := got["members"].([]any); len(ms) != 2 {
		t.Errorf("GET /Groups/id shows members %v", got["members"])
	}
	e.must(204, "PATCH", "/Groups/"+gid, patch(op("remove", `members[value eq "`+id2+`"]`, nil)))
	if got := e.members("hpc-ml"); !slices.Equal(got, []string{"test.user"}) {
		t.Fatalf("members after remove: %v", got)
	}
	e.must(204, "DELETE", "/Groups/"+gid, nil)
	if e.members("hpc-ml") != nil {
		t.Fatal("group still there after DELETE")
	}
	// The group's gid is never handed out again.
	g2 := e.must(201, "POST", "/Groups", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:Group"],"displayName":"other"}`)
	if g2[PosixGroupURN].(map[string]any)["gidNumber"] == float64(20002) {
		t.Error("a deleted group's gid was reused")
	}
	// Same name again: the same gid comes back.
	g3 := e.must(201, "POST", "/Groups", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:Group"],"displayName":"HPC-ML"}`)
	if g3[PosixGroupURN].(map[string]any)["gidNumber"] != float64(20002) {
		t.Errorf("re-created group got gid %v, want its old 20002", g3[PosixGroupURN])
	}
}

// TestEntra replays Microsoft Entra ID's documented provisioning traffic
// (learn.microsoft.com, "Develop a sample SCIM endpoint" and the
// provisioning request examples), quirks included: capitalised ops,
// string booleans, emails[type eq "work"].value, remove with path members
// and a value list, soft delete then DELETE.
func TestEntra(t *testing.T) {
	e := newEnv(t, Options{UserNameDomains: []string{"contoso.com"}}, "")
	e.token = "entra-token"
	e.must(200, "GET", "/Users?filter="+urlq(`userName eq "Test_User_dfeef4c5@contoso.com"`), nil)
	u := e.must(201, "POST", "/Users", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User","urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"],
		"externalId":"0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef","userName":"Test_User_dfeef4c5@contoso.com","active":true,
		"emails":[{"primary":true,"type":"work","value":"Test_User_dfeef4c5@contoso.com"}],"meta":{"resourceType":"User"},
		"name":{"formatted":"givenName familyName","familyName":"familyName","givenName":"givenName"},"roles":[],
		"urn:ietf:params:scim:schemas:extension:enterprise:2.0:User":{"employeeNumber":"12345","department":"Research"}}`)
	id := u["id"].(string)
	if su := e.user("test_user_dfeef4c5"); su == nil || su.UID == nil {
		t.Fatalf("created user not in the directory: %+v", su)
	}
	// externalId is unique: a second POST with it is a 409, not a second account.
	st, m := e.do("POST", "/Users", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":"other@contoso.com","externalId":"0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef"}`)
	if st != 409 || m["scimType"] != "uniqueness" {
		t.Errorf("duplicate externalId: %d %v", st, m)
	}
	// Entra matches on externalId too.
	if m := e.must(200, "GET", "/Users?filter="+urlq(`externalId eq "0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef"`), nil); m["totalResults"] != float64(1) {
		t.Fatalf("externalId lookup: %v", m)
	}
	// Update: capitalised ops, a filtered email path, a sub-attribute.
	e.must(200, "PATCH", "/Users/"+id, patch(
		op("Replace", `emails[type eq "work"].value`, "updatedEmail@contoso.com"),
		op("Replace", "name.familyName", "updatedFamilyName"),
		op("Add", "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department", "HPC")))
	got := e.must(200, "GET", "/Users/"+id, nil)
	emails := got["emails"].([]any)
	if len(emails) != 1 || emails[0].(map[string]any)["value"] != "updatedEmail@contoso.com" {
		t.Errorf("emails after replace: %v", emails)
	}
	if got["name"].(map[string]any)["familyName"] != "updatedFamilyName" {
		t.Errorf("name after replace: %v", got["name"])
	}
	// Multi-valued replace: the whole list goes.
	e.must(200, "PATCH", "/Users/"+id, patch(op("replace", "emails", []any{
		map[string]any{"value": "a@contoso.com", "type": "work", "primary": true}, map[string]any{"value": "b@home.example", "type": "home"}})))
	if got := e.must(200, "GET", "/Users/"+id, nil); len(got["emails"].([]any)) != 2 {
		t.Errorf("emails after list replace: %v", got["emails"])
	}
	// String booleans: "False" disables.
	e.must(200, "PATCH", "/Users/"+id, `{"schemas":["`+patchOp+`"],"Operations":[{"op":"Replace","path":"active","value":"False"}]}`)
	if su := e.user("test_user_dfeef4c5"); *su.Active {
		t.Fatal(`"active": "False" did not disable`)
	}
	st, m = e.do("PATCH", "/Users/"+id, `{"schemas":["`+patchOp+`"],"Operations":[{"op":"Replace","path":"active","value":"maybe"}]}`)
	if st != 400 {
		t.Errorf(`"active": "maybe": %d %v`, st, m)
	}
	// Leaving active out never re-enables: remove path active, then a PUT
	// without it, keep the disabled user disabled.
	e.must(200, "PATCH", "/Users/"+id, `{"schemas":["`+patchOp+`"],"Operations":[{"op":"remove","path":"active"}]}`)
	if su := e.user("test_user_dfeef4c5"); *su.Active {
		t.Fatal("remove path active re-enabled a disabled user")
	}
	e.must(200, "PUT", "/Users/"+id, `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":"Test_User_dfeef4c5@contoso.com","externalId":"0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef"}`)
	if su := e.user("test_user_dfeef4c5"); *su.Active {
		t.Fatal("a PUT without active re-enabled a disabled user")
	}
	e.must(200, "PATCH", "/Users/"+id, `{"schemas":["`+patchOp+`"],"Operations":[{"op":"Replace","path":"active","value":"True"}]}`)
	if su := e.user("test_user_dfeef4c5"); !*su.Active {
		t.Fatal(`"active": "True" did not enable`)
	}

	// Groups.
	id2 := e.must(201, "POST", "/Users", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":"second@contoso.com","active":true,"externalId":"x2"}`)["id"].(string)
	g := e.must(201, "POST", "/Groups", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:Group","http://schemas.microsoft.com/2006/11/ResourceManagement/ADSCIM/2.0/Group"],
		"externalId":"8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159","displayName":"displayName","meta":{"resourceType":"Group"}}`)
	gid := g["id"].(string)
	l := e.must(200, "GET", "/Groups?excludedAttributes=members&filter="+urlq(`displayName eq "displayName"`), nil)
	if l["totalResults"] != float64(1) {
		t.Fatalf("group lookup: %v", l)
	}
	e.must(204, "PATCH", "/Groups/"+gid, `{"schemas":["`+patchOp+`"],"Operations":[{"op":"Add","path":"members","value":[{"$ref":null,"value":"`+id+`"},{"$ref":null,"value":"`+id2+`"}]}]}`)
	if got := e.members("displayName"); len(got) != 2 {
		t.Fatalf("members after Add: %v", got)
	}
	e.must(204, "PATCH", "/Groups/"+gid, `{"schemas":["`+patchOp+`"],"Operations":[{"op":"Remove","path":"members","value":[{"$ref":null,"value":"`+id+`"}]}]}`)
	if got := e.members("displayName"); !slices.Equal(got, []string{"second"}) {
		t.Fatalf("members after Remove with a value list: %v", got)
	}
	e.must(200, "PATCH", "/Groups/"+gid, patch(op("Replace", "displayName", "hpc-renamed")))
	if e.members("hpc-renamed") == nil {
		t.Fatal("rename lost")
	}
	// A member that does not exist is refused, naming it.
	st, m = e.do("PATCH", "/Groups/"+gid, patch(op("Add", "members", []any{map[string]any{"value": "nope"}})))
	if st != 400 || !strings.Contains(fmt.Sprint(m["detail"]), "nope") {
		t.Errorf("unknown member: %d %v", st, m)
	}
	// Soft delete, then hard delete.
	e.must(200, "PATCH", "/Users/"+id2, patch(op("Replace", "active", false)))
	if su := e.user("second"); *su.Active {
		t.Fatal("soft-deleted user active")
	}
	e.must(204, "DELETE", "/Users/"+id2, nil)
	if e.user("second") != nil {
		t.Fatal("deleted user still there")
	}
	if got := e.members("hpc-renamed"); len(got) != 0 {
		t.Fatalf("deleted user still a member: %v", got)
	}
	e.must(404, "GET", "/Users/"+id2, nil)
	e.must(204, "DELETE", "/Groups/"+gid, nil)
	// A rename (Entra replaces userName) keeps the uid and the private gid.
	before := e.user("test_user_dfeef4c5")
	e.must(200, "PATCH", "/Users/"+id, patch(op("Replace", "userName", "renamed.user@contoso.com")))
	after := e.user("renamed.user")
	if after == nil || *after.UID != *before.UID || *after.GID != *before.GID || e.user("test_user_dfeef4c5") != nil {
		t.Errorf("rename: before %+v after %+v", before, after)
	}
}

// TestAuthentik replays authentik's SCIM provider: POST users with
// externalId, PUT on update, groups POSTed with members, PATCH add and
// remove with value lists, DELETE.
func TestAuthentik(t *testing.T) {
	e := newEnv(t, Options{}, "")
	var ids []string
	for _, n := range []string{"akadmin", "alice", "bob"} {
		m := e.must(201, "POST", "/Users", fmt.Sprintf(`{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":%q,
			"name":{"formatted":"%s X","givenName":%q,"familyName":"X"},"displayName":"%s X","active":true,
			"emails":[{"value":"%s@example.org","type":"other","primary":true}],"externalId":"ak-%s","photos":[]}`, n, n, n, n, n, n))
		ids = append(ids, m["id"].(string))
	}
	e.must(200, "PUT", "/Users/"+ids[1], `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":"alice",
		"name":{"formatted":"Alice Liddell"},"displayName":"Alice Liddell","active":true,"externalId":"ak-alice"}`)
	g := e.must(201, "POST", "/Groups", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:Group"],"displayName":"slurm-users","externalId":"ak-g1",
		"members":[{"value":"`+ids[1]+`"}]}`)
	gid := g["id"].(string)
	e.must(204, "PATCH", "/Groups/"+gid, patch(op("add", "members", []any{map[string]any{"value": ids[2]}})))
	e.must(204, "PATCH", "/Groups/"+gid, patch(op("remove", "members", []any{map[string]any{"value": ids[1]}})))
	if got := e.members("slurm-users"); !slices.Equal(got, []string{"bob"}) {
		t.Fatalf("members: %v", got)
	}
	if u := e.user("alice"); u.GECOS != "Alice Liddell" {
		t.Errorf("PUT: %+v", u)
	}
	e.must(204, "DELETE", "/Users/"+ids[2], nil)
	if got := e.members("slurm-users"); len(got) != 0 {
		t.Fatalf("members after delete: %v", got)
	}
}

// TestMigration: users pushed by IdP A, then by IdP B with new SCIM ids
// and externalIds and the same userNames keep their uids and gids, both
// when A's users were deleted first and when B finds them by userName.
// An IdP migration hands one IdP's users to another: both clients share
// (receiver.shared_scope), as before scopes.
func TestMigration(t *testing.T) {
	e := newEnv(t, Options{}, "", func(o *ServerOptions) { o.SharedScope = true })
	uids := map[string]int64{}
	var aIDs []string
	for _, n := range []string{"ann", "ben", "cat"} {
		m := e.must(201, "POST", "/Users", fmt.Sprintf(`{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":%q,"externalId":"A-%s","active":true}`, n, n))
		aIDs = append(aIDs, m["id"].(string))
	}
	e.must(201, "POST", "/Groups", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:Group"],"displayName":"hpc-a","externalId":"A-g","members":[{"value":"`+aIDs[0]+`"}]}`)
	gidBefore := map[string]int64{}
	for _, u := range e.dir().Users {
		uids[u.UserName], gidBefore[u.UserName] = *u.UID, *u.GID
	}
	groupGID := *e.dir().Groups[0].GID
	// IdP A goes away: its users are deleted (ann, ben) ...
	e.must(204, "DELETE", "/Users/"+aIDs[0], nil)
	e.must(204, "DELETE", "/Users/"+aIDs[1], nil)
	e.must(204, "DELETE", "/Groups/"+e.dir().Groups[0].ID, nil)
	// ... a newcomer takes the next number ...
	e.must(201, "POST", "/Users", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":"dan","active":true}`)
	// ... and IdP B pushes the same people with its own ids.
	e.token = "entra-token"
	for _, n := range []string{"ANN", "ben"} {
		e.must(201, "POST", "/Users", fmt.Sprintf(`{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":%q,"externalId":"B-%s","active":true}`, n, n))
	}
	// cat was not deleted: B finds it by userName and takes it over.
	l := e.must(200, "GET", "/Users?filter="+urlq(`userName eq "CAT"`), nil)
	catID := l["Resources"].([]any)[0].(map[string]any)["id"].(string)
	e.must(200, "PATCH", "/Users/"+catID, patch(op("replace", "externalId", "B-cat")))
	e.must(201, "POST", "/Groups", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:Group"],"displayName":"hpc-a","externalId":"B-g"}`)
	for _, u := range e.dir().Users {
		if u.UserName == "dan" {
			for n, uid := range uids {
				if *u.UID == uid {
					t.Errorf("newcomer dan got %s's old uid %d", n, uid)
				}
			}
			continue
		}
		if *u.UID != uids[u.UserName] || *u.GID != gidBefore[u.UserName] {
			t.Errorf("%s: uid %d gid %d after migration, was %d %d", u.UserName, *u.UID, *u.GID, uids[u.UserName], gidBefore[u.UserName])
		}
		if u.UserName == "cat" && u.ExternalID != "B-cat" {
			t.Errorf("cat externalId %q", u.ExternalID)
		}
	}
	if g := e.dir().Groups[0]; *g.GID != groupGID {
		t.Errorf("group gid %d after migration, was %d", *g.GID, groupGID)
	}
}

// TestGate: authentication, body caps, rate limits, audit without tokens.
func TestGate(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(filepath.Join(dir, "r.db"), Options{UIDMin: 20000, UIDMax: 29999, GIDMin: 20000, GIDMax: 29999})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	reg := prometheus.NewRegistry()
	h, err := NewHandler(s, ServerOptions{Clients: []Client{{Name: "okta", SHA256: hashBytes("tok-a")}, {Name: "okta-next", SHA256: hashBytes("tok-b")}},
		RateLimit: 1, RateBurst: 3, MaxBody: 2048, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(h)
	defer hs.Close()
	req := func(tok, method, path, body string) *http.Response {
		r, _ := http.NewRequest(method, hs.URL+path, strings.NewReader(body))
		if tok != "" {
			r.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	if r := req("", "GET", "/Users", ""); r.StatusCode != 401 {
		t.Errorf("no token: %d", r.StatusCode)
	}
	if r := req("wrong", "GET", "/Users", ""); r.StatusCode != 401 {
		t.Errorf("wrong token: %d", r.StatusCode)
	}
	for _, f := range []string{"r.db", "r.db-wal", "r.db-shm"} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v, want mode 0600", f, fi.Mode(), err)
		}
	}
	if r := req("tok-b", "GET", "/ServiceProviderConfig", ""); r.StatusCode != 200 {
		t.Errorf("second (rotated) token: %d", r.StatusCode)
	}
	big := `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":"x","displayName":"` + strings.Repeat("a", 4096) + `"}`
	if r := req("tok-a", "POST", "/Users", big); r.StatusCode != 413 {
		t.Errorf("oversized body: %d", r.StatusCode)
	}
	var last *http.Response
	for i := 0; i < 5; i++ {
		last = req("tok-a", "GET", "/Schemas", "")
	}
	if last.StatusCode != 429 || last.Header.Get("Retry-After") == "" {
		t.Errorf("over the rate: %d retry-after %q", last.StatusCode, last.Header.Get("Retry-After"))
	}
	if r := req("tok-b", "GET", "/Schemas", ""); r.StatusCode != 200 {
		t.Errorf("the other client has its own bucket: %d", r.StatusCode)
	}
	hs.Close()
	rr := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(rr, httptest.NewRequest("GET", "/metrics", nil))
	for _, want := range []string{
		`scimbridge_receiver_requests_total{client="okta",code="413",method="POST"} 1`,
		`scimbridge_receiver_requests_total{client="-",code="401",method="GET"} 2`,
		`scimbridge_receiver_request_duration_seconds_count 10`,
	} {
		if !strings.Contains(rr.Body.String(), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	h.audit.flush()
	rows, err := s.Audit(context.Background(), 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 10 {
		t.Errorf("%d audit rows, want 10", len(rows))
	}
	for _, a := range rows {
		line := fmt.Sprintf("%+v", a)
		if strings.Contains(line, "tok-") || strings.Contains(line, "wrong") {
			t.Errorf("audit row holds a token: %s", line)
		}
	}
	if rows[0].Client != "-" || rows[0].Status != 401 || rows[3].Status != 413 || rows[3].Client != "okta" {
		t.Errorf("audit rows: %+v", rows[:4])
	}
}

// TestDiscovery: the documents IdPs and syncd's poller read first.
func TestDiscovery(t *testing.T) {
	e := newEnv(t, Options{}, "")
	spc := e.must(200, "GET", "/ServiceProviderConfig", nil)
	if spc["patch"].(map[string]any)["supported"] != true || spc["filter"].(map[string]any)["supported"] != true {
		t.Errorf("ServiceProviderConfig: %v", spc)
	}
	sch := e.must(200, "GET", "/Schemas", nil)
	var ids []string
	for _, r := range sch["Resources"].([]any) {
		ids = append(ids, r.(map[string]any)["id"].(string))
	}
	for _, want := range []string{CoreUserURN, CoreGroupURN, EnterpriseURN, PosixUserURN, PosixGroupURN} {
		if !slices.Contains(ids, want) {
			t.Errorf("/Schemas lacks %s: %v", want, ids)
		}
	}
	rt := e.must(200, "GET", "/ResourceTypes", nil)
	if rt["totalResults"] != float64(2) {
		t.Errorf("/ResourceTypes: %v", rt)
	}
	// Filters: co, sw, and; index paging.
	for i := 0; i < 7; i++ {
		e.must(201, "POST", "/Users", fmt.Sprintf(`{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":"user%d","externalId":"ext-%d-%d","displayName":"Person %d"}`, i, i%2, i, i))
	}
	for f, want := range map[string]float64{
		`userName sw "USER"`:                            7,
		`displayName co "son 3"`:                        1,
		`externalId sw "ext-1-" and userName sw "u"`:    3,
		`externalId eq "ext-1-3"`:                       1,
		`userName eq "user4"`:                           1,
		`userName eq "nobody"`:                          0,
		`externalId sw "ext-0-" or userName eq "user1"`: 5,
	} {
		if m := e.must(200, "GET", "/Users?filter="+urlq(f), nil); m["totalResults"] != want {
			t.Errorf("filter %s: %v, want %v", f, m["totalResults"], want)
		}
	}
	var seen []string
	for start := 1; start <= 7; start += 3 {
		m := e.must(200, "GET", fmt.Sprintf("/Users?startIndex=%d&count=3", start), nil)
		if m["totalResults"] != float64(7) {
			t.Fatalf("page: %v", m)
		}
		for _, r := range m["Resources"].([]any) {
			seen = append(seen, r.(map[string]any)["userName"].(string))
		}
	}
	if len(seen) != 7 || seen[0] != "user0" || seen[6] != "user6" {
		t.Errorf("paging order: %v", seen)
	}
	// Groups page the same way, members included unless excluded.
	for i := 0; i < 5; i++ {
		e.must(201, "POST", "/Groups", fmt.Sprintf(`{"schemas":["urn:ietf:params:scim:schemas:core:2.0:Group"],"displayName":"g%d"}`, i))
	}
	var gseen []string
	for start := 1; start <= 5; start += 2 {
		m := e.must(200, "GET", fmt.Sprintf("/Groups?startIndex=%d&count=2", start), nil)
		if m["totalResults"] != float64(5) {
			t.Fatalf("group page: %v", m)
		}
		for _, r := range m["Resources"].([]any) {
			gseen = append(gseen, r.(map[string]any)["displayName"].(string))
			if _, ok := r.(map[string]any)["members"]; !ok {
				t.Errorf("group listing without members: %v", r)
			}
		}
	}
	if !slices.Equal(gseen, []string{"g0", "g1", "g2", "g3", "g4"}) {
		t.Errorf("group paging: %v", gseen)
	}
	// The POSIX extension may be sent by the IdP: its numbers win.
	m := e.must(201, "POST", "/Users", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":"posix",
		"urn:ietf:params:scim:schemas:extension:posix:2.0:User":{"uidNumber":25000,"gidNumber":100,"loginShell":"/bin/zsh",
		"sshPublicKeys":["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl x"]}}`)
	if m[PosixUserURN].(map[string]any)["uidNumber"] != float64(25000) {
		t.Errorf("sent uid: %v", m[PosixUserURN])
	}
	if u := e.user("posix"); *u.UID != 25000 || *u.GID != 100 || u.Shell != "/bin/zsh" || len(u.SSHKeys) != 1 {
		t.Errorf("posix user: %+v", u)
	}
	st, m := e.do("POST", "/Users", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":"thief",
		"urn:ietf:params:scim:schemas:extension:posix:2.0:User":{"uidNumber":25000}}`)
	if st != 409 || m["scimType"] != "uniqueness" {
		t.Errorf("uid taken: %d %v", st, m)
	}
	// No domains listed: an email-shaped userName becomes its local part.
	st, m = e.do("POST", "/Users", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":"Bob.Jones@elsewhere.example"}`)
	if u := e.user("bob.jones"); st != 201 || u == nil {
		t.Errorf("email userName without user_names.domains: %d %v", st, m)
	}
	// A name that maps to a reserved one is refused at push time (it
	// would be left out of every snapshot).
	st, m = e.do("POST", "/Users", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":"Root@elsewhere.example"}`)
	if st != 400 || !strings.Contains(fmt.Sprint(m["detail"]), "reserved_names") {
		t.Errorf("userName mapping to root: %d %v", st, m)
	}
}

func urlq(s string) string { return url.QueryEscape(s) }

func hexDecode(s string) ([]byte, error) { return hex.DecodeString(s) }

// TestConfiguredAttributes: the POSIX name from the primary email and
// SSH keys from a custom extension attribute the IdP maps.
func TestConfiguredAttributes(t *testing.T) {
	const urn = "urn:coreweave:params:scim:schemas:extension:coreweave:2.0:CoreWeaveUser"
	dir := t.TempDir()
	s, err := Open(filepath.Join(dir, "r.db"), Options{UIDMin: 20000, UIDMax: 29999, GIDMin: 20000, GIDMax: 29999,
		UserNameFrom: "email", UserNameDomains: []string{"lab.example"}, SSHKeysAttribute: urn + ":sunkSshKeys"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h, err := NewHandler(s, ServerOptions{Clients: []Client{{Name: "okta", SHA256: hashBytes(testToken)}}, RateLimit: 1000, RateBurst: 1000, MaxBody: 1 << 16})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(h)
	defer hs.Close()
	e := &env{t: t, s: s, url: hs.URL, token: testToken}
	const key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl k"
	e.must(201, "POST", "/Users", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":"00u1abc",
		"emails":[{"value":"other@lab.example"},{"value":"Jane.Doe@lab.example","primary":true}],
		"`+urn+`":{"sunkSshKeys":["`+key+`"]}}`)
	u := e.user("jane.doe")
	if u == nil || len(u.SSHKeys) != 1 || u.SSHKeys[0] != key {
		t.Fatalf("user from email with keys from %s: %+v", urn, u)
	}
	st, m := e.do("POST", "/Users", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":"00u2"}`)
	if st != 400 || !strings.Contains(fmt.Sprint(m["detail"]), "user_name_from") {
		t.Errorf("no email: %d %v", st, m)
	}
}
