package keys

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/scimbridge/scimbridge/syncd/cache"
	"github.com/scimbridge/scimbridge/syncd/snapshot"
)

func newKey(t *testing.T, comment string) string {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	k := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sp)))
	if comment != "" {
		k += " " + comment
	}
	return k
}

func bare(k string) string {
	f := strings.Fields(k)
	return f[0] + " " + f[1]
}

func TestConfiguredPath(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the reader trusts only a root-owned reader.conf")
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "reader.conf")
	for _, tc := range []struct {
		name, body string
		mode       os.FileMode
		want       string
	}{
		{"plain", "cache_path = /srv/c.db\n", 0o644, "/srv/c.db"},
		{"spaces and CR", "  cache_path\t=  /srv/c.db \r\n", 0o644, "/srv/c.db"},
		{"last line wins", "cache_path = /a.db\ncache_path = /b.db\n", 0o644, "/b.db"},
		{"relative ignored", "cache_path = c.db\n", 0o644, DefaultCachePath},
		{"other keys ignored", "# x\nfoo = /x\n", 0o644, DefaultCachePath},
		{"group writable: untrusted", "cache_path = /srv/c.db\n", 0o664, DefaultCachePath},
		{"world writable: untrusted", "cache_path = /srv/c.db\n", 0o646, DefaultCachePath},
	} {
		if err := os.WriteFile(conf, []byte(tc.body), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(conf, tc.mode); err != nil {
			t.Fatal(err)
		}
		if got := configuredPath(conf); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := configuredPath(filepath.Join(dir, "missing")); got != DefaultCachePath {
		t.Errorf("missing file: got %q", got)
	}
	if err := os.Chown(conf, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	os.Chmod(conf, 0o644)
	if got := configuredPath(conf); got != DefaultCachePath {
		t.Errorf("owned by nobody: got %q, want the default", got)
	}
}

func TestCanonical(t *testing.T) {
	k1, k2 := newKey(t, "alice@laptop"), newKey(t, "")
	in := []string{
		k1,
		"  " + k2 + "  ",
		k1 + " ", // duplicate
		`from="10.0.0.0/8" ` + newKey(t, ""),
		`command="/bin/sh" ` + newKey(t, ""),
		"ssh-ed25519 not-base64",
		"garbage",
		"",
	}
	got, bad := Canonical(in)
	want := []string{bare(k1), bare(k2)}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("keys:\n got %q\nwant %q", got, want)
	}
	if len(bad) != 4 {
		t.Errorf("want 4 rejected lines, got %d: %v", len(bad), bad)
	}
}

// snap writes a snapshot with the real writer and opens it.
func snap(t *testing.T, c *snapshot.Contents) *cache.Cache {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cache.db")
	c.Source = "keys_test"
	if _, err := snapshot.Write(path, c); err != nil {
		t.Fatal(err)
	}
	r, err := cache.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

func TestCheck(t *testing.T) {
	k := newKey(t, "")
	user := func(name string, uid uint32, active bool) snapshot.User {
		return snapshot.User{Name: name, UID: uid, GID: uid, Home: "/home/" + name,
			Shell: "/bin/bash", Active: active, SSHKeys: []string{k}}
	}
	c := snap(t, &snapshot.Contents{
		Users: []snapshot.User{
			user("alice", 20001, true), user("bob", 20002, false),
			user("carol", 20003, true), user("Alice", 20004, true),
		},
		Groups: []snapshot.Group{
			{Name: "slurm-users", GID: 30001, Members: []string{"alice", "bob"}},
			{Name: "visitors", GID: 30002, Members: []string{"carol"}},
		},
	})
	allow := []string{"slurm-users", "slurm-sudo"}
	for _, tc := range []struct {
		name  string
		allow []string
		want  Decision
	}{
		{"alice", allow, Allowed},
		{"bob", allow, Disabled},
		{"carol", allow, NotAllowed},
		{"carol", nil, Allowed},
		{"bob", nil, Disabled},
		{"Alice", allow, NotAllowed}, // another user: not a member
		{"ALICE", allow, Unknown},
		{"alice ", allow, Unknown},
		{"nobody", allow, Unknown},
	} {
		u, d, err := Check(c, tc.name, tc.allow)
		if err != nil {
			t.Fatalf("%q: %v", tc.name, err)
		}
		if d != tc.want {
			t.Errorf("%q allow=%v: got %s, want %s", tc.name, tc.allow, d, tc.want)
		}
		if d == Allowed && u.Name != tc.name {
			t.Errorf("%q: answered for %q", tc.name, u.Name)
		}
	}
}

func TestCheckUnavailable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	if _, err := cache.Open(path); err == nil {
		t.Fatal("opening a missing snapshot succeeded")
	}
}

// fakeSCIM is a SCIM /Users endpoint holding resources; it records the
// last request.
type fakeSCIM struct {
	mu        sync.Mutex
	resources []map[string]any
	delay     time.Duration
	status    int
	lastQuery string
	lastAuth  string
}

func (f *fakeSCIM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.lastQuery, f.lastAuth = r.URL.RawQuery, r.Header.Get("Authorization")
	res, delay, status := f.resources, f.delay, f.status
	f.mu.Unlock()
	if r.URL.Path != "/scim/v2/Users" {
		http.NotFound(w, r)
		return
	}
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}
	if status != 0 {
		w.WriteHeader(status)
		return
	}
	w.Header().Set("Content-Type", "application/scim+json")
	json.NewEncoder(w).Encode(map[string]any{
		"schemas":      []string{"urn:ietf:params:scim:api:messages:2.0:ListResponse"},
		"totalResults": len(res), "Resources": res,
	})
}

const posixURN = "urn:ietf:params:scim:schemas:extension:posix:2.0:User"

func scimUser(name string, uid any, active any, keys []any) map[string]any {
	x := map[string]any{"uidNumber": uid, "gidNumber": 20001}
	if keys != nil {
		x["sshPublicKeys"] = keys
	}
	m := map[string]any{"id": "id-" + name, "userName": name, posixURN: x}
	if active != nil {
		m["active"] = active
	}
	return m
}

func liveSetup(t *testing.T, f *fakeSCIM, extra string) *Live {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	if err := os.WriteFile(tok, []byte("s3cret-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "syncd.toml")
	body := "base_url = \"" + srv.URL + "/scim/v2\"\ntoken_file = \"" + tok + "\"\npreset = \"posix\"\n" + extra
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := NewLive(conf, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestLiveUser(t *testing.T) {
	k1, k2 := newKey(t, ""), newKey(t, "")
	f := &fakeSCIM{resources: []map[string]any{
		scimUser("Alice", 20004, true, []any{k2}), // SCIM eq is case-insensitive
		scimUser("alice", 20001, true, []any{k1, map[string]any{"value": k2}}),
	}}
	l := liveSetup(t, f, "")
	lu, err := l.User(context.Background(), "alice")
	if err != nil {
		t.Fatal(err)
	}
	if lu.UID != 20001 || !lu.Active || len(lu.Keys) != 2 || lu.Keys[0] != k1 || lu.Keys[1] != k2 {
		t.Errorf("got %+v", lu)
	}
	if f.lastAuth != "Bearer s3cret-token" {
		t.Errorf("Authorization %q", f.lastAuth)
	}
	if !strings.Contains(f.lastQuery, "filter=userName+eq+%22alice%22") {
		t.Errorf("query %q lacks the userName filter", f.lastQuery)
	}

	// A quote in the name cannot break out of the filter string.
	if _, err := l.User(context.Background(), `x" or userName pr or "`); err == nil {
		t.Error("a name matching no resource exactly was answered")
	}
	if !strings.Contains(f.lastQuery, "%5C%22") {
		t.Errorf("quote not escaped in %q", f.lastQuery)
	}

	f.resources = append(f.resources, scimUser("alice", 20001, true, nil))
	if _, err := l.User(context.Background(), "alice"); err == nil {
		t.Error("two users with the same exact userName: want an error")
	}

	f.resources = []map[string]any{scimUser("alice", "20001", false, nil)}
	lu, err = l.User(context.Background(), "alice")
	if err != nil || lu.Active || lu.UID != 20001 || len(lu.Keys) != 0 {
		t.Errorf("disabled, no keys, uid as string: got %+v, %v", lu, err)
	}

	f.resources = []map[string]any{scimUser("alice", nil, true, []any{k1})}
	if _, err := l.User(context.Background(), "alice"); err == nil {
		t.Error("a user without uid: want an error")
	}

	f.resources = []map[string]any{scimUser("alice", 20001, "yes", []any{k1})}
	if _, err := l.User(context.Background(), "alice"); err == nil {
		t.Error("active not a boolean: want an error")
	}

	f.resources, f.status = nil, http.StatusUnauthorized
	_, err = l.User(context.Background(), "alice")
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("HTTP 401: got %v", err)
	}
	f.status = 0

	f.delay = 5 * time.Second
	start := time.Now()
	if _, err := l.User(context.Background(), "alice"); err == nil {
		t.Error("slow server: want a timeout")
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("timeout took %s", d)
	}
}

func TestLiveUsersQueryFilterCombined(t *testing.T) {
	f := &fakeSCIM{resources: []map[string]any{scimUser("alice", 20001, true, nil)}}
	l := liveSetup(t, f, "[users_query]\nfilter = 'active eq true'\n")
	if _, err := l.User(context.Background(), "alice"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(f.lastQuery, "filter=%28active+eq+true%29+and+userName+eq+%22alice%22") {
		t.Errorf("query %q", f.lastQuery)
	}
	if !strings.Contains(f.lastQuery, "attributes=") {
		t.Errorf("query %q: attributes= not sent by default", f.lastQuery)
	}
}

func TestLiveNoAttributesParam(t *testing.T) {
	f := &fakeSCIM{resources: []map[string]any{scimUser("alice", 20001, true, nil)}}
	l := liveSetup(t, f, "send_attributes = false\n")
	if _, err := l.User(context.Background(), "alice"); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(f.lastQuery, "attributes=") {
		t.Errorf("send_attributes = false, yet the query is %q", f.lastQuery)
	}
}

func TestLiveRefusesReadableConfig(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "syncd.toml")
	os.WriteFile(conf, []byte("base_url = \"http://127.0.0.1:1/scim\"\ntoken_file = \"/nonexistent\"\npreset = \"posix\"\n"), 0o644)
	if _, err := NewLive(conf, time.Second); err == nil {
		t.Error("a world-readable config was accepted")
	}
}

func TestSameAccount(t *testing.T) {
	resolve := func(name string) (uint32, error) {
		if name == "alice" {
			return 20001, nil
		}
		return 0, user.UnknownUserError(name)
	}
	if !SameAccount(cache.User{Name: "alice", UID: 20001}, resolve) {
		t.Error("same uid: want the same account")
	}
	if SameAccount(cache.User{Name: "alice", UID: 30001}, resolve) {
		t.Error("a local alice with another uid: want another account")
	}
	if SameAccount(cache.User{Name: "bob", UID: 20002}, resolve) {
		t.Error("a name the system cannot resolve: want not the same account")
	}
	// Through NSS: root is uid 0 on every system.
	if uid, err := SystemUID("root"); err != nil || uid != 0 {
		t.Errorf("SystemUID(root) = %d, %v", uid, err)
	}
}

// The posix preset reads sshPublicKey (singular, as servers publish it)
// and falls back to sshPublicKeys.
func TestLiveUserSingularKey(t *testing.T) {
	k1 := newKey(t, "")
	u := scimUser("alice", 20001, true, nil)
	u[posixURN].(map[string]any)["sshPublicKey"] = []any{k1}
	f := &fakeSCIM{resources: []map[string]any{u}}
	lu, err := liveSetup(t, f, "").User(context.Background(), "alice")
	if err != nil {
		t.Fatal(err)
	}
	if len(lu.Keys) != 1 || lu.Keys[0] != k1 {
		t.Errorf("got %+v", lu)
	}
}
