package config

import (
	"fmt"
	"sort"
	"strings"
)

// Extension URNs of the SCIM flavours syncd knows by name.
const (
	CoreWeaveUserURN   = "urn:coreweave:params:scim:schemas:extension:coreweave:2.0:CoreWeaveUser"
	CoreWeaveGroupURN  = "urn:coreweave:params:scim:schemas:extension:coreweave:2.0:CoreWeaveGroup"
	PosixUserURN       = "urn:ietf:params:scim:schemas:extension:posix:2.0:User"
	PosixGroupURN      = "urn:ietf:params:scim:schemas:extension:posix:2.0:Group"
	EnterpriseUserURN  = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"
	CoreUserSchemaURN  = "urn:ietf:params:scim:schemas:core:2.0:User"
	CoreGroupSchemaURN = "urn:ietf:params:scim:schemas:core:2.0:Group"
)

// presets maps a preset name to its attribute paths. Paths set in the
// file's [attributes] table win over the preset's.
var presets = map[string]Attributes{
	// CoreWeave IAM: POSIX attributes and SSH keys in CoreWeave's user
	// extension, the group's gid in its group extension. CoreWeave does
	// not publish the attribute names; these are the ones its extension
	// is served with by tests/scimserver (uid, gid, shell, sshKeys).
	"coreweave": {
		UID:      CoreWeaveUserURN + ":uid",
		GID:      CoreWeaveUserURN + ":gid",
		GECOS:    CoreWeaveUserURN + ":gecos",
		Home:     CoreWeaveUserURN + ":homeDirectory",
		Shell:    CoreWeaveUserURN + ":shell",
		SSHKeys:  CoreWeaveUserURN + ":sshKeys",
		GroupGID: CoreWeaveGroupURN + ":gidNumber",
	},
	// An RFC 2307-style POSIX extension: the attribute names of the
	// posixAccount/posixGroup LDAP classes (uidNumber, gidNumber, gecos,
	// homeDirectory, loginShell), which Oracle IDCS serves too (under its
	// own URN: override the paths there), and the SSH key attribute as
	// the openssh-lpk LDAP schema and the servers that map it publish it:
	// sshPublicKey, singular (multi-valued). The plural sshPublicKeys is
	// read when a server spells it so; /Schemas decides which is asked.
	// Attribute names compare case-insensitively (RFC 7643 section 2.1).
	"posix": {
		UID:        PosixUserURN + ":uidNumber",
		GID:        PosixUserURN + ":gidNumber",
		GECOS:      PosixUserURN + ":gecos",
		Home:       PosixUserURN + ":homeDirectory",
		Shell:      PosixUserURN + ":loginShell",
		SSHKeys:    PosixUserURN + ":sshPublicKey",
		SSHKeysAlt: PosixUserURN + ":sshPublicKeys",
		GroupGID:   PosixGroupURN + ":gidNumber",
	},
	// Only the enterprise extension: nothing in it is a UID (never
	// employeeNumber), so attributes.uid and attributes.gid must be set
	// to whatever custom attributes the deployment uses.
	"enterprise": {
		GECOS: "displayName",
	},
}

// PresetNames lists the known presets.
func PresetNames() []string {
	var n []string
	for k := range presets {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

func (c *Config) applyPreset() error {
	if c.Preset == "" {
		return nil
	}
	p, ok := presets[c.Preset]
	if !ok {
		return fmt.Errorf("config %s: preset %q is not one of %s", c.Path, c.Preset, strings.Join(PresetNames(), ", "))
	}
	a := &c.Attributes
	if a.SSHKeys == "" && a.SSHKeysAlt == "" {
		// A second spelling only with the preset's own first one.
		a.SSHKeysAlt = p.SSHKeysAlt
	}
	for _, f := range []struct {
		dst *string
		v   string
	}{
		{&a.UserName, p.UserName}, {&a.UID, p.UID}, {&a.GID, p.GID}, {&a.GECOS, p.GECOS},
		{&a.Home, p.Home}, {&a.Shell, p.Shell}, {&a.SSHKeys, p.SSHKeys}, {&a.Active, p.Active},
		{&a.GroupName, p.GroupName}, {&a.GroupGID, p.GroupGID},
	} {
		if *f.dst == "" {
			*f.dst = f.v
		}
	}
	return nil
}
