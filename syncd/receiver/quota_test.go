package receiver

import (
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/scimbridge/scimbridge/syncd/source"
)

// The home quota attribute (home_quota_attribute) is served in the
// configured extension, beside the SSH keys attribute in the same one,
// and reaches validation as text from a POST and after a PATCH.
func TestHomeQuotaAttribute(t *testing.T) {
	const urn = "urn:example:params:scim:schemas:extension:hpc:2.0:User"
	s, err := Open(filepath.Join(t.TempDir(), "r.db"), Options{UIDMin: 20000, UIDMax: 29999, GIDMin: 20000, GIDMax: 29999,
		SSHKeysAttribute: urn + ":sshKeys", QuotaAttribute: urn + ":homeQuota"})
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
	m := e.must(201, "POST", "/Users", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User","`+urn+`"],"userName":"ada",
		"`+urn+`":{"homeQuota":"50G","sshKeys":["`+key+`"]}}`)
	u := e.user("ada")
	if u == nil || u.Quota != "50G" || len(u.SSHKeys) != 1 || u.Malformed[source.FieldQuota] != "" {
		t.Fatalf("pushed quota and keys in one extension: %+v", u)
	}
	id, _ := m["id"].(string)
	e.must(200, "PATCH", "/Users/"+id, `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
		"Operations":[{"op":"replace","path":"`+urn+`:homeQuota","value":"75G"}]}`)
	if u := e.user("ada"); u == nil || u.Quota != "75G" {
		t.Fatalf("after PATCH: %+v", u)
	}
	e.must(201, "POST", "/Users", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":"bob"}`)
	if u := e.user("bob"); u == nil || u.Quota != "" || u.Malformed[source.FieldQuota] != "" {
		t.Fatalf("no quota sent: %+v", u)
	}
}
