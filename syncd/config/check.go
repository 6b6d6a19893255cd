package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/scimbridge/scimbridge/syncd/source/scim"
)

// reservedQuery are query parameters syncd sets itself.
var reservedQuery = map[string]bool{
	"startindex": true, "count": true, "cursor": true, "attributes": true,
	"excludedattributes": true, "sortby": true, "sortorder": true,
}

var logLevels = map[string]bool{
	"panic": true, "fatal": true, "error": true, "warn": true, "warning": true,
	"info": true, "debug": true, "trace": true,
}

// MaxID is the largest UID or GID syncd hands out: 2^32-1 is (uid_t)-1,
// which means "no change" to chown and setreuid.
const MaxID = 1<<32 - 2

// Check returns every problem with the values (not the files they name).
func (c *Config) Check() Errors {
	var errs Errors
	bad := func(key, format string, a ...any) {
		errs = append(errs, fmt.Errorf("config %s: %s: %s", c.Path, key, fmt.Sprintf(format, a...)))
	}
	if c.IsMirror() {
		return c.checkMirrorNode() // a node has no source (cluster.go)
	}
	errs = append(errs, c.checkPublish()...)

	// Source and credentials. A [receiver] is the source instead.
	if c.HasReceiver() {
		if _, err := c.DecodeReceiver(); err != nil {
			var re Errors
			if errors.As(err, &re) {
				errs = append(errs, re...)
			} else {
				errs = append(errs, err)
			}
		}
		if c.BaseURL != "" {
			bad("base_url", "set either base_url (poll a SCIM server) or [receiver] (identity providers push here), not both")
		}
	} else if c.BaseURL == "" {
		bad("base_url", "missing (the SCIM service root, e.g. https://idp.example.com/scim/v2)")
	} else if u, err := url.Parse(c.BaseURL); err != nil {
		bad("base_url", "%v", err)
	} else if u.Scheme != "https" && u.Scheme != "http" {
		bad("base_url", "scheme %q: must be https", u.Scheme)
	} else if u.Host == "" {
		bad("base_url", "%q has no host", c.BaseURL)
	} else if u.Scheme == "http" && !isLoopbackHost(u.Hostname()) {
		bad("base_url", "plain http to %s would send the token in clear: use https (http is allowed for loopback only)", u.Hostname())
	} else if u.User != nil {
		bad("base_url", "must not carry credentials; use token_file or basic_user + password_file")
	}
	switch {
	case c.HasReceiver():
	case c.TokenFile != "" && (c.BasicUser != "" || c.PasswordFile != ""):
		bad("token_file", "set either token_file or basic_user + password_file, not both")
	case c.TokenFile == "" && c.BasicUser == "" && c.PasswordFile == "":
		bad("token_file", "missing: set token_file (bearer token) or basic_user + password_file")
	case c.TokenFile == "" && (c.BasicUser == "") != (c.PasswordFile == ""):
		bad("basic_user", "basic_user and password_file go together")
	}
	for _, f := range []struct{ key, v string }{
		{"token_file", c.TokenFile}, {"password_file", c.PasswordFile}, {"ca_file", c.CAFile},
		{"cache_path", c.CachePath}, {"status_path", c.StatusPath},
		{"local_passwd", c.LocalPasswd}, {"local_group", c.LocalGroup},
	} {
		if f.v != "" && !filepath.IsAbs(f.v) {
			bad(f.key, "%q is not an absolute path", f.v)
		}
	}
	if c.CachePath != "" && c.CachePath == c.StatusPath {
		bad("status_path", "is the same file as cache_path")
	}

	// Timing.
	for _, d := range []struct {
		key string
		v   int64
	}{
		{"request_timeout", int64(c.RequestTimeout)}, {"fetch_timeout", int64(c.FetchTimeout)}, {"read_timeout", int64(c.ReadTimeout)},
		{"poll_interval", int64(c.PollInterval)}, {"full_reconcile_interval", int64(c.FullReconcileInterval)},
		{"removal_check_interval", int64(c.RemovalCheckInterval)}, {"change_overlap", int64(c.ChangeOverlap)},
	} {
		if d.v <= 0 {
			bad(d.key, "must be positive")
		}
	}
	if c.PollJitter < 0 || (c.PollInterval > 0 && c.PollJitter >= c.PollInterval) {
		bad("poll_jitter", "%s must be at least 0 and less than poll_interval (%s)", c.PollJitter, c.PollInterval)
	}
	if c.FullReconcileInterval > 0 && c.FullReconcileInterval < c.PollInterval {
		bad("full_reconcile_interval", "%s is shorter than poll_interval (%s)", c.FullReconcileInterval, c.PollInterval)
	}
	if c.MaxRetries < 0 || c.MaxRetries > 20 {
		bad("max_retries", "%d: must be 0 to 20", c.MaxRetries)
	}
	if c.HistoryMaxMB < 0 || c.HistoryMaxMB > 1<<20 {
		bad("history_max_mb", "%d: must be 0 (history_keep alone bounds the history) to 1048576", c.HistoryMaxMB)
	}

	// Listing.
	for _, e := range []struct{ key, v string }{{"users_endpoint", c.UsersEndpoint}, {"groups_endpoint", c.GroupsEndpoint}} {
		if e.v == "" || strings.ContainsAny(e.v, "?#/ ") || e.v == "." || e.v == ".." {
			bad(e.key, "%q must be a single path segment such as Users", e.v)
		}
	}
	for key, q := range map[string]map[string]string{"users_query": c.UsersQuery, "groups_query": c.GroupsQuery} {
		for k := range q {
			if reservedQuery[strings.ToLower(k)] {
				bad(key, "%q is set by syncd itself", k)
			}
		}
	}
	switch c.Paging {
	case "auto", "index", "cursor":
	default:
		bad("paging", "%q is not auto, index or cursor", c.Paging)
	}
	if c.PageSize < 1 || c.PageSize > 10000 {
		bad("page_size", "%d: must be 1 to 10000", c.PageSize)
	}
	if c.PageCap < 1 {
		bad("page_cap", "%d: must be at least 1", c.PageCap)
	}
	switch c.GroupMembers {
	case "auto", "listing", "per-group", "per-user", "user-groups":
	default:
		bad("group_members", "%q is not auto, listing, per-group, per-user or user-groups", c.GroupMembers)
	}
	if c.SortBy != "" {
		if _, err := scim.ParsePath(c.SortBy); err != nil {
			bad("sort_by", "%v", err)
		}
	}
	for _, g := range c.PosixGroups {
		if strings.TrimSpace(g) == "" {
			bad("posix_groups", "empty group name")
		}
	}
	c.checkGroupNames(bad)
	for _, d := range c.UserNameDomains {
		if d == "" || strings.ContainsAny(d, "@ \t/") || strings.HasPrefix(d, ".") {
			bad("user_name_domains", "%q: want a bare domain such as example.com (or list it in user_names.domains)", d)
		}
	}

	// Attributes.
	a := c.Attributes
	for _, p := range []struct {
		key, v   string
		required bool
	}{
		{"attributes.user_name", a.UserName, true}, {"attributes.uid", a.UID, true},
		{"attributes.gid", a.GID, true}, {"attributes.gecos", a.GECOS, false},
		{"attributes.home", a.Home, false}, {"attributes.shell", a.Shell, false},
		{"attributes.ssh_keys", a.SSHKeys, false}, {"attributes.active", a.Active, false},
		{"attributes.group_name", a.GroupName, true}, {"attributes.group_gid", a.GroupGID, false},
		{"attributes.ssh_keys_alt", a.SSHKeysAlt, false}, {"attributes.home_quota", a.HomeQuota, false},
		{"attributes.project_quota", a.ProjectQuota, false},
	} {
		if p.v == "" {
			if p.required {
				bad(p.key, "missing (set it, or choose a preset: %s)", strings.Join(PresetNames(), ", "))
			}
			continue
		}
		path, err := scim.ParsePath(p.v)
		if err != nil {
			bad(p.key, "%v", err)
			continue
		}
		// Numbers that merely look like UIDs are not UIDs.
		if (p.key == "attributes.uid" || p.key == "attributes.gid" || p.key == "attributes.group_gid") &&
			path.Sub == "" && (strings.EqualFold(path.Attr, "id") || strings.EqualFold(path.Attr, "externalId") || strings.EqualFold(path.Attr, "employeeNumber")) {
			bad(p.key, "%q is an identifier, not a POSIX number: point it at a uidNumber/gidNumber attribute", p.v)
		}
	}

	// Account values.
	if c.HomeTemplate != "" {
		if err := CheckHomeTemplate(c.HomeTemplate); err != nil {
			bad("home_template", "%v", err)
		}
	}
	// White space is refused as validation refuses it in a user's shell:
	// "$SHELL -c ..." run through another shell would split it.
	for _, sh := range c.AllowedShells {
		if !filepath.IsAbs(sh) || filepath.Clean(sh) != sh || strings.ContainsAny(sh, ":\n\x00,") || strings.ContainsFunc(sh, unicode.IsSpace) {
			bad("allowed_shells", "%q is not a clean absolute path without white space", sh)
		}
	}
	if !filepath.IsAbs(c.DefaultShell) || strings.ContainsAny(c.DefaultShell, ":\n\x00,") || strings.ContainsFunc(c.DefaultShell, unicode.IsSpace) {
		bad("default_shell", "%q is not an absolute path without white space", c.DefaultShell)
	} else if len(c.AllowedShells) > 0 && !contains(c.AllowedShells, c.DefaultShell) {
		bad("default_shell", "%q is not in allowed_shells", c.DefaultShell)
	}
	checkRange := func(kind string, lo, hi int64) {
		if lo < 1 {
			bad(kind+"_min", "%d: 0 is root and negative ids do not exist; must be at least 1", lo)
		}
		if hi > MaxID {
			bad(kind+"_max", "%d: must be at most %d", hi, int64(MaxID))
		}
		if lo > hi {
			bad(kind+"_min", "%d is above %s_max %d", lo, kind, hi)
		}
	}
	checkRange("uid", c.UIDMin, c.UIDMax)
	checkRange("gid", c.GIDMin, c.GIDMax)
	c.checkHardening(bad)

	// Policy and operations.
	if c.MaxRemovalShare < 0 || c.MaxRemovalShare > 1 {
		bad("max_removal_share", "%g: must be between 0 and 1 (0.1 = 10%%)", c.MaxRemovalShare)
	}
	if !logLevels[strings.ToLower(c.LogLevel)] {
		bad("log_level", "%q is not one of error, warn, info, debug, trace", c.LogLevel)
	}
	if c.MetricsListen != "" {
		host, port, err := net.SplitHostPort(c.MetricsListen)
		switch {
		case err != nil:
			bad("metrics_listen", "%v", err)
		case !isLoopbackHost(host):
			bad("metrics_listen", "%q is not a loopback address (127.0.0.1, ::1 or localhost)", host)
		case port == "":
			bad("metrics_listen", "no port")
		}
	}
	errs = append(errs, c.checkHTTP()...)
	return errs
}

// checkFiles checks the files the configuration names: credentials must
// be root-only, the CA file must be readable.
func (c *Config) checkFiles() Errors {
	var errs Errors
	for _, f := range []struct{ key, path string }{{"token_file", c.TokenFile}, {"password_file", c.PasswordFile}} {
		if f.path == "" || !filepath.IsAbs(f.path) {
			continue
		}
		if err := CheckSecretFile(f.path); err != nil {
			errs = append(errs, fmt.Errorf("config %s: %s: %w", c.Path, f.key, err))
		}
	}
	if c.CAFile != "" && filepath.IsAbs(c.CAFile) {
		if _, err := os.ReadFile(c.CAFile); err != nil {
			errs = append(errs, fmt.Errorf("config %s: ca_file: %w", c.Path, err))
		}
	}
	return errs
}

// CheckHomeTemplate accepts an absolute path template whose only
// directives are %u (user name) and %% (a percent sign).
func CheckHomeTemplate(t string) error {
	if !strings.HasPrefix(t, "/") {
		return fmt.Errorf("%q is not absolute", t)
	}
	if strings.ContainsAny(t, ":\n\x00,") {
		return fmt.Errorf("%q contains ':', ',', a newline or NUL", t)
	}
	for i := 0; i < len(t); i++ {
		if t[i] != '%' {
			continue
		}
		if i+1 >= len(t) || (t[i+1] != 'u' && t[i+1] != '%') {
			return fmt.Errorf("%q: only %%u and %%%% are allowed", t)
		}
		i++
	}
	for _, seg := range strings.Split(t, "/") {
		if seg == ".." || seg == "." {
			return fmt.Errorf("%q contains %q", t, seg)
		}
	}
	// Validation refuses homes that are not clean paths (and "/"): a
	// template making one would refuse every user.
	if h := ExpandHome(t, "user"); path.Clean(h) != h || h == "/" {
		return fmt.Errorf("%q is not a clean path (no trailing or doubled '/'), or is /", t)
	}
	return nil
}

// ExpandHome fills in a home template for a user name that passed
// validation (so it holds no '/' or "..").
func ExpandHome(t, user string) string {
	var b strings.Builder
	for i := 0; i < len(t); i++ {
		if t[i] == '%' && i+1 < len(t) {
			switch t[i+1] {
			case 'u':
				b.WriteString(user)
				i++
				continue
			case '%':
				b.WriteByte('%')
				i++
				continue
			}
		}
		b.WriteByte(t[i])
	}
	return b.String()
}

func isLoopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// IsNotExist reports whether Load failed because the file is missing.
func IsNotExist(err error) bool { return errors.Is(err, os.ErrNotExist) }
