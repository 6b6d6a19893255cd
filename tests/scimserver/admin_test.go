package scimserver

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// admin calls the admin API at the server root.
func admin(t *testing.T, base, method, path, body string) reply {
	t.Helper()
	root := strings.TrimSuffix(base, "/scim/v2")
	return do(t, newReq(t, method, root+"/_admin/"+path, body))
}

func TestAdminAPI(t *testing.T) {
	s, base := start(t, Options{})
	r := admin(t, base, "POST", "users", `{"userName":"zoe","posix":{"uidNumber":20099,"gidNumber":20000,"loginShell":"/bin/bash","homeDirectory":"/home/zoe"}}`).wantStatus(t, 200)
	zid := r.str("id")
	if zid == "" || r.num("version") != 1 {
		t.Fatalf("upsert answer %s", r.raw)
	}
	u := get(t, base+"/Users/"+zid).wantStatus(t, 200)
	if u.body[posixURN].(map[string]any)["uidNumber"] != 20099.0 || u.body["active"] != true {
		t.Fatalf("new user as served: %s", u.raw)
	}

	admin(t, base, "POST", "users/zoe/active", `{"active":false}`).wantStatus(t, 200)
	admin(t, base, "POST", "users/zoe/keys", `{"keys":["ssh-ed25519 AAAA zoe"]}`).wantStatus(t, 200)
	u = get(t, base+"/Users/"+zid).wantStatus(t, 200)
	if u.body["active"] != false || len(u.body[posixURN].(map[string]any)["sshPublicKeys"].([]any)) != 1 {
		t.Fatalf("after active/keys: %s", u.raw)
	}

	admin(t, base, "POST", "groups/physics/members", `{"add":["zoe"],"remove":["bob"]}`).wantStatus(t, 200)
	g, _ := s.Group("physics")
	bob, _ := s.User("bob")
	if !slices.Contains(g.Members, zid) || slices.Contains(g.Members, bob.ID) {
		t.Fatalf("physics members %v", g.Members)
	}
	r = admin(t, base, "POST", "groups", `{"displayName":"new-team","gidNumber":20500,"members":["alice","zoe"]}`).wantStatus(t, 200)
	if len(r.body["members"].([]any)) != 2 {
		t.Fatalf("new group %s", r.raw)
	}
	admin(t, base, "POST", "groups", `{"displayName":"bad","members":["nobody"]}`).wantStatus(t, 400)

	admin(t, base, "DELETE", "users/zoe", "").wantStatus(t, 204)
	get(t, base+"/Users/"+zid).wantStatus(t, 404)
	if g, _ := s.Group("new-team"); len(g.Members) != 1 {
		t.Fatalf("deleted user still a member: %v", g.Members)
	}
	admin(t, base, "DELETE", "users/zoe", "").wantStatus(t, 404)
	admin(t, base, "DELETE", "groups/new-team", "").wantStatus(t, 204)

	admin(t, base, "PUT", "faults", `{"failListRequest":1,"failStatus":500}`).wantStatus(t, 200)
	get(t, base+"/Users").wantStatus(t, 500)
	var f Faults
	json.Unmarshal(admin(t, base, "GET", "faults", "").raw, &f)
	if f.FailStatus != 500 {
		t.Fatalf("faults %+v", f)
	}
	admin(t, base, "DELETE", "faults", "").wantStatus(t, 200)

	c := admin(t, base, "GET", "counters", "").wantStatus(t, 200)
	if c.num("userGets") < 3 || c.num("userLists") != 1 {
		t.Fatalf("counters %s", c.raw)
	}
	reqs := admin(t, base, "GET", "requests", "").wantStatus(t, 200)
	var log []LoggedRequest
	json.Unmarshal(reqs.raw, &log)
	if len(log) == 0 || log[0].Path != "/scim/v2/Users/"+zid {
		t.Fatalf("request log %s", reqs.raw)
	}

	admin(t, base, "POST", "reset", "").wantStatus(t, 200)
	if d := s.Snapshot(); len(d.Users) != 11 || len(d.Groups) != 4 {
		t.Fatalf("after reset %d users %d groups", len(d.Users), len(d.Groups))
	}
	if g, _ := s.Group("physics"); !slices.Contains(g.Members, bob.ID) {
		t.Fatal("reset did not restore physics")
	}
	if c := s.Requests(); c.Total != 0 {
		t.Fatalf("counters after reset %+v", c)
	}
	admin(t, base, "GET", "nope", "").wantStatus(t, 404)
}

func TestAdminLoopbackOnly(t *testing.T) {
	s := New(Options{})
	req := httptest.NewRequest("GET", "/_admin/counters", nil)
	req.RemoteAddr = "192.0.2.7:5555"
	w := httptest.NewRecorder()
	s.ServeHTTP(w, req)
	if w.Code != http.StatusForbidden {
		t.Fatalf("admin from 192.0.2.7: %d", w.Code)
	}
	s = New(Options{NoAdmin: true})
	req.RemoteAddr = "127.0.0.1:5555"
	w = httptest.NewRecorder()
	s.ServeHTTP(w, req)
	if w.Code != http.StatusNotFound {
		t.Fatalf("admin with NoAdmin: %d", w.Code)
	}
}
