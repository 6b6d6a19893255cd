package config

import (
	"strings"
	"testing"

	"github.com/scimbridge/scimbridge/syncd/source/scim"
)

func TestHTTPLimitsDefaultsAndValues(t *testing.T) {
	c, err := Load(setup(t, `
base_url = "https://idp.example.com/scim/v2"
token_file = "@DIR@/token"
preset = "posix"
`))
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxUsers != 2_000_000 || c.MaxGroups != 2_000_000 || c.PageCap != scim.DefaultPageCap ||
		c.MaxResponseBytes != scim.DefaultMaxResponseBytes || c.MaxFetchBytes != scim.DefaultMaxFetchBytes ||
		len(c.AllowedRedirectOrigins) != 0 {
		t.Errorf("defaults: %+v page_cap %d", c.HTTPLimits, c.PageCap)
	}
	c, err = Load(setup(t, `
base_url = "https://idp.example.com/scim/v2"
token_file = "@DIR@/token"
preset = "posix"
allowed_redirect_origins = ["https://idp-eu.example.com", "http://127.0.0.1:8080/"]
max_users = 50
max_groups = 7
max_response_bytes = 1000
max_fetch_bytes = 5000
page_cap = 9
`))
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxUsers != 50 || c.MaxGroups != 7 || c.MaxResponseBytes != 1000 || c.MaxFetchBytes != 5000 ||
		c.PageCap != 9 || len(c.AllowedRedirectOrigins) != 2 {
		t.Errorf("values: %+v page_cap %d", c.HTTPLimits, c.PageCap)
	}
}

func TestHTTPLimitsRefused(t *testing.T) {
	_, err := Load(setup(t, `
base_url = "https://idp.example.com/scim/v2"
token_file = "@DIR@/token"
preset = "posix"
allowed_redirect_origins = ["http://idp-eu.example.com", "https://idp.example.com/scim", "ftp://x"]
max_users = 0
max_groups = -1
max_response_bytes = 10000
max_fetch_bytes = 100
`))
	if err == nil {
		t.Fatal("accepted")
	}
	msg := err.Error()
	for _, want := range []string{
		`"http://idp-eu.example.com": plain http would send the token in clear`,
		`"https://idp.example.com/scim": want an origin`, `"ftp://x"`,
		"max_users: 0", "max_groups: -1", "max_response_bytes: 10000 is above max_fetch_bytes 100",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("no %q in:\n%s", want, msg)
		}
	}
}
