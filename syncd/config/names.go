package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/scimbridge/scimbridge/syncd/names"
)

// GroupNames is the [group_names] table: how the names identity
// providers give groups become Linux group names (syncd/names).
type GroupNames struct {
	Space     string            `toml:"space"`
	Other     string            `toml:"other"`
	NonASCII  string            `toml:"non_ascii"`
	MaxLength int               `toml:"max_length"`
	TooLong   string            `toml:"too_long"`
	Rename    map[string]string `toml:"rename"`
}

// Policy is the mapping the table describes.
func (g GroupNames) Policy() names.Policy {
	return names.Policy{Space: g.Space, Other: g.Other, NonASCII: g.NonASCII, MaxLength: g.MaxLength, TooLong: g.TooLong, Rename: g.Rename}
}

// UserNames is the [user_names] table: how identity providers' userNames
// (emails, UPNs, mixed case) become login names (syncd/names/users.go).
// The top-level user_name_domains is merged into Domains.
type UserNames struct {
	GroupNames
	Domains []string `toml:"domains"`
}

// Users is the mapping the table describes.
func (u UserNames) Users() names.Users {
	p := u.Policy()
	p.Table = "user_names"
	return names.Users{Policy: p, Domains: u.Domains}
}

func (c *Config) groupNamesDefaults() {
	c.nameTableDefaults("group_names", &c.GroupNames)
	c.nameTableDefaults("user_names", &c.UserNames.GroupNames)
	for _, d := range c.UserNameDomains {
		if !slices.Contains(c.UserNames.Domains, d) {
			c.UserNames.Domains = append(c.UserNames.Domains, d)
		}
	}
}

func (c *Config) nameTableDefaults(table string, g *GroupNames) {
	d := names.Default()
	if !c.md.IsDefined(table, "space") {
		g.Space = d.Space
	}
	if !c.md.IsDefined(table, "other") {
		g.Other = d.Other
	}
	if g.NonASCII == "" {
		g.NonASCII = d.NonASCII
	}
	if !c.md.IsDefined(table, "max_length") {
		g.MaxLength = d.MaxLength
	}
	if g.TooLong == "" {
		g.TooLong = d.TooLong
	}
}

func (c *Config) checkGroupNames(bad func(key, format string, a ...any)) {
	checkNameTable("group_names", c.GroupNames, 255, bad)
	checkNameTable("user_names", c.UserNames.GroupNames, names.MaxUserLength, bad)
	for _, d := range c.UserNames.Domains {
		if slices.Contains(c.UserNameDomains, d) {
			continue // reported as user_name_domains
		}
		if d == "" || strings.ContainsAny(d, "@ \t/") || strings.HasPrefix(d, ".") {
			bad("user_names.domains", "%q: want a bare domain such as example.com", d)
		}
	}
}

func checkNameTable(t string, g GroupNames, maxLen int, bad func(key, format string, a ...any)) {
	for key, v := range map[string]string{t + ".space": g.Space, t + ".other": g.Other} {
		switch v {
		case "", "_", "-":
		default:
			bad(key, "%q: want \"_\", \"-\" or \"\" (refuse such names)", v)
		}
	}
	if g.NonASCII != names.Transliterate && g.NonASCII != names.Refuse {
		bad(t+".non_ascii", "%q is not %q or %q", g.NonASCII, names.Transliterate, names.Refuse)
	}
	if g.TooLong != names.Hash && g.TooLong != names.Refuse {
		bad(t+".too_long", "%q is not %q or %q", g.TooLong, names.Hash, names.Refuse)
	}
	if g.MaxLength < 10 || g.MaxLength > maxLen {
		bad(t+".max_length", "%d: must be 10 to %d (32 is what useradd and most tools accept)", g.MaxLength, maxLen)
	}
	seen := map[string]string{}
	for from, to := range g.Rename {
		check := names.Check
		if t == "user_names" {
			check = names.CheckUser
		}
		if why := check(to, max(g.MaxLength, 1)); why != "" {
			bad(t+".rename", "%q = %q: the Linux name %s", from, to, why)
		}
		if other, dup := seen[to]; dup {
			bad(t+".rename", "%q and %q both rename to %q", other, from, to)
		}
		seen[to] = from
	}
}

// PrivateGroupMode is private_groups: which users whose primary gid no
// SCIM group publishes get a synthesised user-private group.
type PrivateGroupMode int

const (
	// PrivateGroupsUID (the default): a user whose gid equals their uid,
	// when nothing else owns that gid (no SCIM group, passed or
	// rejected; no local group; not below min_id; inside gid_min..gid_max).
	PrivateGroupsUID PrivateGroupMode = iota
	// PrivateGroupsAll (true): any user, whatever the gid.
	PrivateGroupsAll
	// PrivateGroupsOff (false): none; an unpublished primary gid is
	// rejected.
	PrivateGroupsOff
)

// UnmarshalTOML takes true, false or "uid".
func (m *PrivateGroupMode) UnmarshalTOML(v any) error {
	switch v {
	case true:
		*m = PrivateGroupsAll
	case false:
		*m = PrivateGroupsOff
	case "uid":
		*m = PrivateGroupsUID
	default:
		return fmt.Errorf("private_groups = %v: want true, false or \"uid\"", v)
	}
	return nil
}

func (m PrivateGroupMode) String() string {
	switch m {
	case PrivateGroupsAll:
		return "true"
	case PrivateGroupsOff:
		return "false"
	}
	return `"uid"`
}
