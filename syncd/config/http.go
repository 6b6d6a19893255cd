package config

import (
	"fmt"
	"net/url"

	"github.com/scimbridge/scimbridge/syncd/source/scim"
)

// HTTPLimits bound what syncd reads from the SCIM server and where it
// follows it (see syncd/source/scim/guard.go). A fetch that goes over a
// cap fails with an error naming the option, and the live snapshot stays.
// The defaults are sized for a directory of a million users.
type HTTPLimits struct {
	// AllowedRedirectOrigins are origins (https://host[:port]) besides
	// base_url's that a redirect may lead to. The token is sent to them.
	// Empty (the default): only redirects within base_url's origin are
	// followed. A redirect from https to http is never followed.
	AllowedRedirectOrigins []string `toml:"allowed_redirect_origins"`
	// MaxUsers and MaxGroups cap the distinct records of one listing.
	MaxUsers  int `toml:"max_users"`
	MaxGroups int `toml:"max_groups"`
	// MaxResponseBytes caps one response body, MaxFetchBytes every
	// response of one fetch together.
	MaxResponseBytes int64 `toml:"max_response_bytes"`
	MaxFetchBytes    int64 `toml:"max_fetch_bytes"`
}

// httpDefaults fills in the caps that are absent (an explicit 0 is
// checked, not replaced).
func (c *Config) httpDefaults() {
	if !c.md.IsDefined("page_cap") {
		c.PageCap = scim.DefaultPageCap
	}
	if !c.md.IsDefined("max_users") {
		c.MaxUsers = scim.DefaultMaxUsers
	}
	if !c.md.IsDefined("max_groups") {
		c.MaxGroups = scim.DefaultMaxGroups
	}
	if !c.md.IsDefined("max_response_bytes") {
		c.MaxResponseBytes = scim.DefaultMaxResponseBytes
	}
	if !c.md.IsDefined("max_fetch_bytes") {
		c.MaxFetchBytes = scim.DefaultMaxFetchBytes
	}
}

// checkHTTP returns the problems with the HTTPLimits.
func (c *Config) checkHTTP() Errors {
	var errs Errors
	bad := func(key, format string, a ...any) {
		errs = append(errs, fmt.Errorf("config %s: %s: %s", c.Path, key, fmt.Sprintf(format, a...)))
	}
	for _, o := range c.AllowedRedirectOrigins {
		if _, err := scim.ParseOrigin(o); err != nil {
			bad("allowed_redirect_origins", "%v", err)
			continue
		}
		if u, _ := url.Parse(o); u.Scheme == "http" && !isLoopbackHost(u.Hostname()) {
			bad("allowed_redirect_origins", "%q: plain http would send the token in clear: use https (http is allowed for loopback only)", o)
		}
	}
	if c.MaxUsers < 1 {
		bad("max_users", "%d: must be at least 1", c.MaxUsers)
	}
	if c.MaxGroups < 1 {
		bad("max_groups", "%d: must be at least 1", c.MaxGroups)
	}
	if c.MaxResponseBytes < 1 {
		bad("max_response_bytes", "%d: must be at least 1", c.MaxResponseBytes)
	}
	if c.MaxFetchBytes < 1 {
		bad("max_fetch_bytes", "%d: must be at least 1", c.MaxFetchBytes)
	} else if c.MaxResponseBytes > c.MaxFetchBytes {
		bad("max_response_bytes", "%d is above max_fetch_bytes %d", c.MaxResponseBytes, c.MaxFetchBytes)
	}
	return errs
}
