package scim

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/scimbridge/scimbridge/syncd/source"
	"github.com/scimbridge/scimbridge/tests/scimserver"
)

// handWritten serves fixed bodies by "path?startIndex", "path#cursor"
// (when a cursor parameter is sent) or just path,
// with Content-Type application/json unless the body says otherwise;
// anything else is a SCIM 404. It records the requests.
type handWritten struct {
	mu     sync.Mutex
	bodies map[string]string
	status map[string]int
	ctype  string            // for every body
	ctypes map[string]string // by key, over ctype
	reqs   []*http.Request
}

func (h *handWritten) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.reqs = append(h.reqs, r)
	h.mu.Unlock()
	p := strings.TrimPrefix(r.URL.Path, "/scim/v2/")
	keys := []string{p + "?" + r.URL.Query().Get("startIndex"), p}
	if r.URL.Query().Has("cursor") {
		keys = []string{p + "#" + r.URL.Query().Get("cursor"), p}
	}
	for _, k := range keys {
		if b, ok := h.bodies[k]; ok {
			ct := h.ctype
			if c, ok := h.ctypes[k]; ok {
				ct = c
			}
			if ct == "" {
				ct = "application/json"
			}
			w.Header().Set("Content-Type", ct)
			if st := h.status[k]; st != 0 {
				w.WriteHeader(st)
			}
			w.Write([]byte(b))
			return
		}
	}
	w.Header().Set("Content-Type", "application/scim+json")
	w.WriteHeader(404)
	w.Write([]byte(`{"schemas":["urn:ietf:params:scim:api:messages:2.0:Error"],"status":"404","detail":"no such endpoint"}`))
}

func serveHandWritten(t *testing.T, h *handWritten) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL + "/scim/v2"
}

// minimalLists is an empty ListResponse.
const minimalLists = `{"totalResults": 0, "Resources": []}`

const posixURN = "urn:ietf:params:scim:schemas:extension:posix:2.0:User"

func shapeClient(t *testing.T, url string, log logrus.FieldLogger) *Client {
	t.Helper()
	c, err := New(Options{
		BaseURL: url, PageSize: 100, MaxRetries: 1, BackoffBase: time.Millisecond, Log: log,
		Attrs: Attrs{
			UID: posixURN + ":uidNumber", GID: posixURN + ":gidNumber", Active: "active", Shell: posixURN + ":loginShell",
			SSHKeys: posixURN + ":sshPublicKeys", GroupGID: "urn:ietf:params:scim:schemas:extension:posix:2.0:Group:gidNumber",
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Shapes conformant servers send differently from ours (RFC 7644 section
// 3.4.2: only totalResults and Resources matter, names are
// case-insensitive per RFC 7643 section 2.1), and the looser ones real
// servers send: integer ids, members with only a $ref, bare member ids.
func TestHandWrittenShapes(t *testing.T) {
	h := &handWritten{bodies: map[string]string{
		// No schemas, no itemsPerPage or startIndex, "resources" in
		// lower case, the extension URN in lower case, a numeric id.
		"Users?1": `{"totalResults": 3, "resources": [
			{"id": "u1", "USERNAME": "alice", "Active": "False",
			 "urn:ietf:params:scim:schemas:extension:posix:2.0:user": {"UIDNUMBER": "20001", "gidNumber": 20000, "sshPublicKeys": [{"Value": "ssh-ed25519 AAAA k1"}, {"value": "ssh-ed25519 AAAA k2", "primary": true}]}},
			{"id": 42, "userName": "bob",
			 "urn:ietf:params:scim:schemas:extension:posix:2.0:User": {"uidNumber": 20002, "gidNumber": 20000, "sshPublicKeys": ["ssh-ed25519 AAAA k3"]}},
			{"id": "u3", "userName": "carol", "active": true,
			 "urn:ietf:params:scim:schemas:extension:posix:2.0:User": {"uidNumber": 20003, "gidNumber": 20000}}]}`,
		// The last page: nothing but schemas (totalResults and Resources
		// omitted).
		"Users?4": `{"schemas": ["urn:ietf:params:scim:api:messages:2.0:ListResponse"]}`,
		"Groups?1": `{"totalResults": 1, "Resources": [
			{"id": "g1", "displayName": "hpc",
			 "urn:ietf:params:scim:schemas:extension:posix:2.0:Group": {"gidNumber": 30001},
			 "members": [
				{"Value": "u1", "Type": "User"},
				{"value": 42},
				{"$ref": "../Users/u3", "display": "Carol"},
				"u4",
				{"display": "Dave Only-Display"},
				{"value": "g2", "type": "Group"},
				{"$ref": "https://idp.example.com/scim/v2/Groups/g9"}]}]}`,
		"Groups?2": `{"totalResults": 1, "Resources": []}`,
	}}
	log, hook := logtest.NewNullLogger()
	dir, err := shapeClient(t, serveHandWritten(t, h), log).Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]source.User{}
	for _, u := range dir.Users {
		by[u.ID] = u
	}
	a, b, c := by["u1"], by["42"], by["u3"]
	if len(dir.Users) != 3 || a.UserName != "alice" || b.UserName != "bob" || c.UserName != "carol" {
		t.Fatalf("users = %+v", dir.Users)
	}
	if a.UID == nil || *a.UID != 20001 || a.Active == nil || *a.Active || len(a.SSHKeys) != 2 || a.Malformed != nil {
		t.Errorf("alice = %+v (uid %v)", a, ptr(a.UID))
	}
	if b.UID == nil || *b.UID != 20002 || len(b.SSHKeys) != 1 {
		t.Errorf("bob = %+v", b)
	}
	if len(dir.Groups) != 1 {
		t.Fatalf("groups = %+v", dir.Groups)
	}
	g := dir.Groups[0]
	if strings.Join(g.MemberIDs, ",") != "u1,42,u3,u4" || g.Malformed != nil {
		t.Errorf("members = %q (malformed %v), want u1,42,u3,u4: the nested groups and the display-only member left out", g.MemberIDs, g.Malformed)
	}
	warned := false
	for _, e := range hook.AllEntries() {
		if e.Level == logrus.WarnLevel && strings.Contains(e.Message, "left out") && e.Data["members"] == int64(1) {
			warned = true
		}
	}
	if !warned {
		t.Errorf("no warning about the one member without a usable id; log: %v", entries(hook))
	}
	// Accept asks for SCIM JSON; JSON is accepted too.
	for _, r := range h.reqs {
		if acc := r.Header.Get("Accept"); !strings.Contains(acc, "application/scim+json") {
			t.Errorf("request %s: Accept %q", r.URL, acc)
		}
	}
}

func entries(h *logtest.Hook) []string {
	var out []string
	for _, e := range h.AllEntries() {
		out = append(out, e.Level.String()+": "+e.Message)
	}
	return out
}

// An empty directory may omit Resources (RFC 7644 section 3.4.2).
func TestEmptyListWithoutResources(t *testing.T) {
	h := &handWritten{bodies: map[string]string{
		"Users":  `{"schemas": ["urn:ietf:params:scim:api:messages:2.0:ListResponse"], "totalResults": 0}`,
		"Groups": `{"schemas": ["urn:ietf:params:scim:api:messages:2.0:ListResponse"], "totalResults": 0}`,
	}}
	dir, err := shapeClient(t, serveHandWritten(t, h), quietLog()).Fetch(context.Background())
	if err != nil || len(dir.Users) != 0 || len(dir.Groups) != 0 {
		t.Fatalf("dir %+v, err %v", dir, err)
	}
	if n := len(h.reqs); n != 4 { // ServiceProviderConfig, Schemas, Users, Groups
		t.Errorf("%d requests, want 4", n)
	}
}

// When no group shows a member anywhere, the fetch says so loudly: the
// groups are published empty.
func TestNoMembersAnywhereWarns(t *testing.T) {
	srv := scimserver.New(scimserver.Options{Faults: scimserver.Faults{GroupMembersNever: true}})
	if err := srv.Load(scimserver.Generate(30, 3, 7)); err != nil {
		t.Fatal(err)
	}
	url, stop := srv.Start()
	defer stop()
	log, hook := logtest.NewNullLogger()
	c := newTestClient(t, url, func(o *Options) { o.Log = log })
	dir, err := c.Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if anyMembers(dir) {
		t.Fatalf("members from a server that shows none: %+v", dir.Groups)
	}
	for _, e := range hook.AllEntries() {
		if e.Level == logrus.WarnLevel && strings.Contains(e.Message, "no group has any member") {
			return
		}
	}
	t.Errorf("no warning; log: %v", entries(hook))
}

// RFC 9865 cursors: count may be left out of answers, previousCursor is
// ignored, totalResults may be absent, and an empty nextCursor (which
// would ask for page 1 again) ends the walk like an absent one.
func TestCursorShapes(t *testing.T) {
	h := &handWritten{bodies: map[string]string{
		"ServiceProviderConfig": `{"filter": {"supported": true}, "pagination": {"cursor": true, "index": false}}`,
		"Users#":                `{"nextCursor": "c2", "Resources": [{"id": "u1", "userName": "a"}]}`,
		"Users#c2":              `{"previousCursor": "", "nextCursor": "c3", "Resources": [{"id": "u2", "userName": "b"}]}`,
		"Users#c3":              `{"previousCursor": "c2", "nextCursor": "", "Resources": [{"id": "u3", "userName": "c"}]}`,
		"Groups#":               `{"Resources": []}`,
	}}
	dir, err := shapeClient(t, serveHandWritten(t, h), quietLog()).Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(dir.Users) != 3 || dir.Users[2].UserName != "c" {
		t.Fatalf("users = %+v", dir.Users)
	}
	n := 0
	for _, r := range h.reqs {
		if strings.HasSuffix(r.URL.Path, "/Users") {
			n++
			if r.URL.Query().Has("startIndex") {
				t.Errorf("cursor request %s also sends startIndex", r.URL)
			}
		}
	}
	if n != 3 {
		t.Errorf("%d user pages read, want 3", n)
	}
}
