package receiver

import (
	"testing"

	"github.com/scimbridge/scimbridge/syncd/source"
)

// The home quota attribute (home_quota_attribute) is served in the
// configured extension, beside the SSH keys attribute in the same one,
// and reaches validation as text from a POST and after a PATCH.
func TestHomeQuotaAttribute(t *testing.T) {
	const urn = "urn:example:params:scim:schemas:extension:hpc:2.0:User"
	const gurn = "urn:example:params:scim:schemas:extension:hpc:2.0:Group"
	e := newEnv(t, Options{SSHKeysAttribute: urn + ":sshKeys", QuotaAttribute: urn + ":homeQuota", ProjectQuotaAttribute: gurn + ":projectQuota"}, "")
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
	// A team's project quota, in a group extension beside the POSIX one.
	e.must(201, "POST", "/Groups", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:Group","`+gurn+`"],"displayName":"physics",
		"`+gurn+`":{"projectQuota":"5T"}}`)
	var got string
	for _, g := range e.dir().Groups {
		if g.DisplayName == "physics" {
			got = g.Quota
		}
	}
	if got != "5T" {
		t.Fatalf("pushed project quota: %q", got)
	}
}
