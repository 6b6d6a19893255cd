package config

import (
	"fmt"

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

func (c *Config) groupNamesDefaults() {
	d := names.Default()
	g := &c.GroupNames
	if !c.md.IsDefined("group_names", "space") {
		g.Space = d.Space
	}
	if !c.md.IsDefined("group_names", "other") {
		g.Other = d.Other
	}
	if g.NonASCII == "" {
		g.NonASCII = d.NonASCII
	}
	if !c.md.IsDefined("group_names", "max_length") {
		g.MaxLength = d.MaxLength
	}
	if g.TooLong == "" {
		g.TooLong = d.TooLong
	}
}

func (c *Config) checkGroupNames(bad func(key, format string, a ...any)) {
	g := c.GroupNames
	for key, v := range map[string]string{"group_names.space": g.Space, "group_names.other": g.Other} {
		switch v {
		case "", "_", "-":
		default:
			bad(key, "%q: want \"_\", \"-\" or \"\" (refuse such names)", v)
		}
	}
	if g.NonASCII != names.Transliterate && g.NonASCII != names.Refuse {
		bad("group_names.non_ascii", "%q is not %q or %q", g.NonASCII, names.Transliterate, names.Refuse)
	}
	if g.TooLong != names.Hash && g.TooLong != names.Refuse {
		bad("group_names.too_long", "%q is not %q or %q", g.TooLong, names.Hash, names.Refuse)
	}
	if g.MaxLength < 10 || g.MaxLength > 255 {
		bad("group_names.max_length", "%d: must be 10 to 255 (32 is what useradd and most tools accept)", g.MaxLength)
	}
	seen := map[string]string{}
	for from, to := range g.Rename {
		if why := names.Check(to, max(g.MaxLength, 1)); why != "" {
			bad("group_names.rename", "%q = %q: the Linux name %s", from, to, why)
		}
		if other, dup := seen[to]; dup {
			bad("group_names.rename", "%q and %q both rename to %q", other, from, to)
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
