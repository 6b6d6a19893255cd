package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestReceiverGood(t *testing.T) {
	p := setup(t, `
cache_path = "@DIR@/cache.db"
[receiver]
listen = "127.0.0.1:8443"
store_path = "@DIR@/receiver.db"
[[receiver.clients]]
name = "okta"
token_sha256 = "9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08"
[[receiver.clients]]
name = "okta-next"
token_sha256 = "60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752"
scope = "okta"
`)
	c, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if !c.HasReceiver() || c.Preset != "posix" || c.Attributes.UID == "" {
		t.Errorf("receiver config: preset %q uid %q", c.Preset, c.Attributes.UID)
	}
	r, err := c.DecodeReceiver()
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Clients) != 2 || r.Clients[0].TokenSHA256 != strings.ToLower(r.Clients[0].TokenSHA256) ||
		r.Debounce.Duration != 2*time.Second || r.UserNameFrom != "userName" || r.MaxBody != 1<<20 || r.RateLimit != 200 {
		t.Errorf("defaults: %+v", r)
	}
	// A client's scope defaults to its name; a rotation entry names it.
	if r.Clients[0].Scope != "okta" || r.Clients[1].Scope != "okta" || r.SharedScope {
		t.Errorf("scopes: %+v shared %v", r.Clients, r.SharedScope)
	}
}

func TestReceiverBad(t *testing.T) {
	p := setup(t, `
base_url = "https://idp.example.com/scim/v2"
token_file = "@DIR@/token"
cache_path = "@DIR@/cache.db"
[receiver]
listen = "0.0.0.0:8443"
store_path = "@DIR@/cache.db"
user_name_from = "nickname"
debounce = "10s"
max_delay = "1s"
ssh_keys_attribute = "name.keys"
[[receiver.clients]]
name = "bad name!"
token_sha256 = "the-token-itself"
scope = "two words"
`)
	_, err := Load(p)
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("err = %v", err)
	}
	msg := err.Error()
	for _, want := range []string{"base_url: set either", "receiver.listen", "receiver.store_path", "receiver.user_name_from",
		"receiver.max_delay", "receiver.ssh_keys_attribute", "receiver.clients[0].name", "receiver.clients[0].token_sha256", "receiver.clients[0].scope"} {
		if !strings.Contains(msg, want) {
			t.Errorf("no %q in:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "the-token-itself") {
		t.Error("the error repeats what may be a token")
	}
}
