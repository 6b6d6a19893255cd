package scim

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/scimbridge/scimbridge/syncd/source"
)

// FuzzListPage feeds arbitrary bytes through the decoding a listing page
// gets (the page envelope, each resource's id, the configured user and
// group attributes, member references), as `go test -fuzz=FuzzListPage`;
// the seeds run as an ordinary test. Nothing may panic, and every value
// is either read or recorded as malformed, never both.
func FuzzListPage(f *testing.F) {
	for _, s := range []string{
		`{"totalResults": 1, "Resources": [{"id": "u1", "userName": "alice", "active": true, "` + posixURN + `": {"uidNumber": 20001, "gidNumber": 20000, "homeDirectory": "/home/alice", "loginShell": "/bin/bash", "sshPublicKeys": ["ssh-ed25519 AAAA k"]}}]}`,
		`{"totalResults": "4", "resources": [{"id": 7, "USERNAME": "Bob", "Active": "False", "` + posixURN + `": {"UIDNUMBER": "20001", "gidNumber": 2.0E4, "sshPublicKeys": [{"Value": "ssh-ed25519 AAAA k1"}, {"value": 5}]}}]}`,
		`{"Resources": [{"id": "g1", "displayName": "physics", "members": [{"value": "u1"}, {"$ref": "https://x/scim/v2/Users/u2"}, "u3", {"value": null}], "urn:ietf:params:scim:schemas:extension:posix:2.0:Group": {"gidNumber": 30001}}]}`,
		`{"Resources": [{"id": "u4", "userName": ["a"], "` + posixURN + `": {"uidNumber": 1e400, "gidNumber": -1, "homeDirectory": 5}, "groups": [{"value": "g1"}, 3]}]}`,
		`{"Resources": [null, {"id": ""}, {"id": {"x": 1}}], "nextCursor": "abc"}`,
		`{"Resources": [{"id": "u5", "userName": "x\u0000y", "active": "yes", "` + posixURN + `": null}]}`,
		`[]`, `null`, `{"Resources": {}}`, `{"totalResults": -1}`,
	} {
		f.Add([]byte(s))
	}
	c, err := New(Options{
		BaseURL: "http://127.0.0.1:1/scim/v2", PageSize: 100,
		Attrs: Attrs{
			UID: posixURN + ":uidNumber", GID: posixURN + ":gidNumber", Active: "active", Shell: posixURN + ":loginShell",
			Home: posixURN + ":homeDirectory", GECOS: "displayName", SSHKeys: posixURN + ":sshPublicKeys",
			GroupGID: "urn:ietf:params:scim:schemas:extension:posix:2.0:Group:gidNumber",
		},
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var p listPage
		if json.Unmarshal(data, &p) != nil {
			return
		}
		for _, top := range p.Resources {
			if top == nil {
				continue
			}
			r := &resource{top: top}
			sameAsMap(t, data, top)
			id, err := r.id()
			if err == nil && id == "" {
				t.Fatalf("empty id accepted from %q", data)
			}
			u := c.toUser(r)
			checkRead(t, u.Malformed, source.FieldUID, u.UID != nil)
			checkRead(t, u.Malformed, source.FieldGID, u.GID != nil)
			checkRead(t, u.Malformed, source.FieldActive, u.Active != nil)
			for _, s := range append([]string{u.UserName, u.Home, u.Shell, u.GECOS}, u.SSHKeys...) {
				if !utf8.ValidString(s) && json.Valid(data) {
					// encoding/json replaces invalid UTF-8 with U+FFFD.
					t.Fatalf("invalid UTF-8 %q survived decoding", s)
				}
			}
			g, _, _ := c.toGroup(r)
			checkRead(t, g.Malformed, source.FieldGID, g.GID != nil)
			for _, m := range g.MemberIDs {
				if m == "" {
					t.Fatalf("empty member id from %q", data)
				}
			}
			r.groupsOf(c.opts.UsersEndpoint, c.opts.GroupsEndpoint)
		}
	})
}

func checkRead(t *testing.T, malformed map[string]string, field string, read bool) {
	t.Helper()
	if read && malformed[field] != "" {
		t.Fatalf("%s both read and malformed (%s)", field, malformed[field])
	}
}

// sameAsMap checks the in-place reading of a page (rawjson.go) against
// what encoding/json makes of the same bytes: the same resources, and
// under every key the same value, through the same lookups.
func sameAsMap(t *testing.T, data []byte, _ object) {
	t.Helper()
	var ref struct {
		TotalResults *flexInt
		NextCursor   *string
		Resources    []map[string]json.RawMessage
	}
	var p listPage
	refErr, err := json.Unmarshal(data, &ref), json.Unmarshal(data, &p)
	if refErr != nil {
		return
	}
	if err != nil {
		t.Fatalf("%q: encoding/json reads the page, the in-place reader says %v", data, err)
	}
	if (ref.TotalResults == nil) != (p.TotalResults == nil) || ref.TotalResults != nil && *ref.TotalResults != *p.TotalResults {
		t.Fatalf("%q: totalResults %v, encoding/json %v", data, p.TotalResults, ref.TotalResults)
	}
	if (ref.NextCursor == nil) != (p.NextCursor == nil) || ref.NextCursor != nil && *ref.NextCursor != *p.NextCursor {
		t.Fatalf("%q: nextCursor %v, encoding/json %v", data, p.NextCursor, ref.NextCursor)
	}
	if len(ref.Resources) != len(p.Resources) {
		t.Fatalf("%q: %d resources, encoding/json %d", data, len(p.Resources), len(ref.Resources))
	}
	for i, m := range ref.Resources {
		o := p.Resources[i]
		if (m == nil) != (o == nil) {
			t.Fatalf("%q: resource %d null %v, encoding/json %v", data, i, o == nil, m == nil)
		}
		for k, want := range m {
			got, ok := o.lookup(k)
			if !ok || !bytes.Equal(got, want) {
				t.Fatalf("%q: resource %d key %q: %q (%v), encoding/json %q", data, i, k, got, ok, want)
			}
		}
		for j := range o {
			if _, ok := m[o[j].keyName()]; !ok {
				t.Fatalf("%q: resource %d: key %q not in encoding/json's map", data, i, o[j].keyName())
			}
		}
	}
}
