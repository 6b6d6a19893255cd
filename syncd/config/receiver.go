package config

import (
	"encoding/hex"
	"fmt"
	"net"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// DefaultReceiverStore is the receiver's own database: the cluster's copy
// of the directory pushed by the identity provider. It is never the
// published snapshot (cache_path), which is rebuilt from it.
const DefaultReceiverStore = "/var/lib/scimbridge/receiver.db"

// Receiver is the [receiver] table: syncd as a SCIM 2.0 service provider
// that identity providers push to (Okta, Entra ID, Authentik, ...).
// With it, `syncd receive` (or `syncd run`) serves /Users and /Groups and
// builds the snapshot from what was pushed instead of polling base_url.
type Receiver struct {
	// Listen is the address to serve on. Without tls_cert/tls_key it must
	// be loopback: put a TLS-terminating reverse proxy in front.
	Listen  string `toml:"listen"`
	TLSCert string `toml:"tls_cert"`
	TLSKey  string `toml:"tls_key"`
	// StorePath is the receiver's SQLite database (WAL, fsynced).
	StorePath string `toml:"store_path"`
	// Clients are the identity providers allowed to push, each with the
	// SHA-256 (hex) of its bearer token; several may be active at once so
	// a token can be rotated without downtime. `syncd receive --new-token
	// NAME` prints a fresh token and its line.
	Clients []ReceiverClient `toml:"clients"`
	// RateLimit is each client's sustained requests per second, RateBurst
	// how many it may send at once; beyond that: 429 with Retry-After.
	RateLimit float64 `toml:"rate_limit"`
	RateBurst int     `toml:"rate_burst"`
	// MaxBody caps one request body, in bytes (413 beyond).
	MaxBody int64 `toml:"max_body"`
	// Debounce is how long the directory must be quiet after a change
	// before a snapshot is built; MaxDelay bounds the wait during a long
	// burst. A burst of 1,000 PATCHes becomes one snapshot.
	Debounce Duration `toml:"debounce"`
	MaxDelay Duration `toml:"max_delay"`
	// UserNameFrom is where the POSIX name comes from: "userName" (the
	// default) or "email" (the primary, else first, email). Either way an
	// email-style name is cut to its local part per user_name_domains.
	UserNameFrom string `toml:"user_name_from"`
	// SSHKeysAttribute is the attribute path holding a user's SSH public
	// keys when the identity provider sends them (default: the POSIX
	// extension's sshPublicKeys). Keys uploaded with `syncd keys set` are
	// added to them.
	SSHKeysAttribute string `toml:"ssh_keys_attribute"`
	// HomeQuotaAttribute is the optional attribute path of a user's home
	// storage limit (a string such as "50G"; a bare number is GiB), served
	// as a string attribute and applied by the homes pass, capped by
	// [homes.quota] user_max. "" (the default): none.
	HomeQuotaAttribute string `toml:"home_quota_attribute"`
	// ProjectQuotaAttribute is the same in the Group resource, for the
	// team's project directory (capped by [homes.quota] team_max).
	ProjectQuotaAttribute string `toml:"project_quota_attribute"`
	// PrimaryGID is every allocated user's primary group. 0 (the default)
	// gives each user a private group allocated from the gid range, named
	// like the user.
	PrimaryGID int64 `toml:"primary_gid"`
	// AuditDays is how long audit log rows are kept (default 90).
	AuditDays int `toml:"audit_days"`
	// MaxNewIDsPerHour bounds how many new uids (and, separately, gids)
	// the receiver hands out in any hour; 0 (the default) is half of the
	// range, at least 1,000. Numbers are never reused, so without a
	// bound a token holder could use up a range in minutes.
	MaxNewIDsPerHour int `toml:"max_new_ids_per_hour"`
	// SharedScope lets every client see and change every user and group.
	// Without it (the default) a client sees and changes only what was
	// created with its scope (see ReceiverClient.Scope).
	SharedScope bool `toml:"shared_scope"`
}

// ReceiverClient is one identity provider allowed to push.
type ReceiverClient struct {
	Name        string `toml:"name"`
	TokenSHA256 string `toml:"token_sha256"`
	// Scope names the users and groups this client may see and change:
	// those created by a client of the same scope. Default: the name.
	// The entries of one IdP's token rotation share a scope.
	Scope string `toml:"scope"`
}

// Duration is a time.Duration read from a TOML string ("2s").
type Duration struct{ time.Duration }

// UnmarshalText reads "2s", "500ms".
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	d.Duration = v
	return nil
}

// receiverPreset: a receiver stores what it is pushed in the POSIX
// extension, so its attribute paths are the "posix" preset's unless the
// file names another.
func (c *Config) receiverPreset() {
	if c.HasReceiver() && c.Preset == "" {
		c.Preset = "posix"
	}
}

// HasReceiver reports whether the file has a [receiver] table.
func (c *Config) HasReceiver() bool { return c.md.IsDefined("receiver") }

var clientName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// DecodeReceiver decodes, defaults and checks the [receiver] table. Every
// problem is reported, each naming the key that fixes it.
func (c *Config) DecodeReceiver() (*Receiver, error) {
	r := &Receiver{}
	if c.HasReceiver() {
		if err := c.md.PrimitiveDecode(c.Receiver, r); err != nil {
			return nil, fmt.Errorf("config %s: [receiver]: %w", c.Path, err)
		}
		if err := c.unknownIn("receiver"); err != nil {
			return nil, err
		}
	}
	if r.Listen == "" {
		r.Listen = "127.0.0.1:8443"
	}
	if r.StorePath == "" {
		r.StorePath = DefaultReceiverStore
	}
	if !c.md.IsDefined("receiver", "rate_limit") {
		r.RateLimit = 200
	}
	if !c.md.IsDefined("receiver", "rate_burst") {
		r.RateBurst = 400
	}
	if r.MaxBody == 0 {
		r.MaxBody = 1 << 20
	}
	if r.Debounce.Duration == 0 {
		r.Debounce.Duration = 2 * time.Second
	}
	if r.MaxDelay.Duration == 0 {
		r.MaxDelay.Duration = 15 * time.Second
	}
	if !c.md.IsDefined("receiver", "audit_days") {
		r.AuditDays = 90
	}
	if r.UserNameFrom == "" {
		r.UserNameFrom = "userName"
	}
	if r.SSHKeysAttribute == "" {
		r.SSHKeysAttribute = PosixUserURN + ":sshPublicKeys"
	}
	var errs Errors
	bad := func(key, format string, a ...any) {
		errs = append(errs, fmt.Errorf("config %s: receiver.%s: %s", c.Path, key, fmt.Sprintf(format, a...)))
	}
	host, _, err := net.SplitHostPort(r.Listen)
	if err != nil {
		bad("listen", "%q: %v (host:port, e.g. 127.0.0.1:8443)", r.Listen, err)
	} else if (r.TLSCert == "") != (r.TLSKey == "") {
		bad("tls_cert", "tls_cert and tls_key go together")
	} else if r.TLSCert == "" && !isLoopbackHost(host) {
		bad("listen", "%q without tls_cert/tls_key would take bearer tokens in clear: listen on loopback behind a TLS reverse proxy, or set tls_cert and tls_key", r.Listen)
	}
	for _, f := range []struct{ key, v string }{{"store_path", r.StorePath}, {"tls_cert", r.TLSCert}, {"tls_key", r.TLSKey}} {
		if f.v != "" && !filepath.IsAbs(f.v) {
			bad(f.key, "%q is not an absolute path", f.v)
		}
	}
	if r.TLSKey != "" && filepath.IsAbs(r.TLSKey) {
		// The private key, like the token: root-only, no planted link.
		if err := CheckSecretFile(r.TLSKey); err != nil {
			bad("tls_key", "%v", err)
		}
	}
	if r.StorePath == c.CachePath || r.StorePath == c.StatusPath {
		bad("store_path", "%q is the snapshot or status file: the receiver's store is its own file", r.StorePath)
	}
	if len(r.Clients) == 0 {
		bad("clients", "no client may push: add [[receiver.clients]] with name and token_sha256 (syncd receive --new-token NAME prints one)")
	}
	seen := map[string]bool{}
	for i, cl := range r.Clients {
		if !clientName.MatchString(cl.Name) {
			bad(fmt.Sprintf("clients[%d].name", i), "%q: letters, digits, _ . - (up to 64)", cl.Name)
		}
		h := strings.ToLower(cl.TokenSHA256)
		if b, err := hex.DecodeString(h); err != nil || len(b) != 32 {
			bad(fmt.Sprintf("clients[%d].token_sha256", i), "not 64 hex digits (the SHA-256 of the token, never the token itself)")
		}
		if seen[h] {
			bad(fmt.Sprintf("clients[%d].token_sha256", i), "same token as another client")
		}
		seen[h] = true
		r.Clients[i].TokenSHA256 = h
		if cl.Scope == "" {
			r.Clients[i].Scope = cl.Name
		} else if !clientName.MatchString(cl.Scope) {
			bad(fmt.Sprintf("clients[%d].scope", i), "%q: letters, digits, _ . - (up to 64); the entries of one identity provider's token rotation share one", cl.Scope)
		}
	}
	if r.MaxNewIDsPerHour < 0 {
		bad("max_new_ids_per_hour", "%d: 0 (half the range per hour) or a positive number", r.MaxNewIDsPerHour)
	}
	if r.RateLimit <= 0 || r.RateBurst < 1 {
		bad("rate_limit", "rate_limit must be positive and rate_burst at least 1")
	}
	if r.MaxBody < 1024 || r.MaxBody > 64<<20 {
		bad("max_body", "%d: must be 1024 to 67108864 bytes", r.MaxBody)
	}
	if r.Debounce.Duration < 0 || r.MaxDelay.Duration < r.Debounce.Duration {
		bad("max_delay", "max_delay (%s) must be at least debounce (%s)", r.MaxDelay, r.Debounce)
	}
	switch r.UserNameFrom {
	case "userName", "email":
	default:
		bad("user_name_from", "%q is not userName or email", r.UserNameFrom)
	}
	if i := strings.LastIndexByte(r.SSHKeysAttribute, ':'); strings.Contains(r.SSHKeysAttribute[i+1:], ".") || strings.HasSuffix(r.SSHKeysAttribute, ":") {
		bad("ssh_keys_attribute", "%q: an attribute (\"attr\" or \"urn:...:attr\"), not a sub-attribute path", r.SSHKeysAttribute)
	}
	for key, q := range map[string]string{"home_quota_attribute": r.HomeQuotaAttribute, "project_quota_attribute": r.ProjectQuotaAttribute} {
		if q != "" && (strings.Contains(q[strings.LastIndexByte(q, ':')+1:], ".") || strings.HasSuffix(q, ":")) {
			bad(key, "%q: an attribute (\"attr\" or \"urn:...:attr\"), not a sub-attribute path", q)
		}
	}
	if r.AuditDays < 1 {
		bad("audit_days", "%d: keep the audit log at least 1 day", r.AuditDays)
	}
	if r.PrimaryGID < 0 || r.PrimaryGID > MaxID {
		bad("primary_gid", "%d: 0 (a private group per user) or a gid", r.PrimaryGID)
	}
	if len(errs) > 0 {
		return r, errs
	}
	return r, nil
}
