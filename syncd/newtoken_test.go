package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/receiver"
)

// --new-token prints a block that pastes into [receiver] with its scope
// written out (issue 20): the name's own scope by default, --scope for a
// rotation, and a note when the scope is another client's.
func TestNewTokenBlock(t *testing.T) {
	parse := func(out string) config.ReceiverClient {
		t.Helper()
		i := strings.Index(out, "[[receiver.clients]]")
		if i < 0 {
			t.Fatalf("no client block in %q", out)
		}
		var doc struct {
			Receiver struct{ Clients []config.ReceiverClient } `toml:"receiver"`
		}
		if _, err := toml.Decode(out[i:], &doc); err != nil || len(doc.Receiver.Clients) != 1 {
			t.Fatalf("the printed block does not parse: %v\n%s", err, out[i:])
		}
		return doc.Receiver.Clients[0]
	}
	var b bytes.Buffer
	receiver.WriteNewToken(&b, "okta", "", "tok-1", nil)
	c := parse(b.String())
	if c.Name != "okta" || c.Scope != "okta" || c.TokenSHA256 != receiver.HashToken("tok-1") || !strings.Contains(b.String(), "tok-1\n") {
		t.Errorf("new client: %+v\n%s", c, b.String())
	}
	b.Reset()
	receiver.WriteNewToken(&b, "okta-2027", "okta", "tok-2", []config.ReceiverClient{{Name: "okta", Scope: "okta"}, {Name: "entra", Scope: "entra"}})
	c = parse(b.String())
	if c.Name != "okta-2027" || c.Scope != "okta" || !strings.Contains(b.String(), `shared with client "okta"`) || !strings.Contains(b.String(), "scopes in this config: okta, entra") {
		t.Errorf("rotation: %+v\n%s", c, b.String())
	}
}
