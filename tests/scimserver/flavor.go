package scimserver

// Flavor names the POSIX extension's URNs and attribute names. Real
// providers disagree on both, so clients take them from configuration.
type Flavor struct {
	Name     string
	UserURN  string
	GroupURN string
	// Attribute names inside the user extension.
	UID, GID, Home, Shell, GECOS, SSHKeys string
	// Attribute name inside the group extension.
	GroupGID string
}

// FlavorPOSIX is the Oracle-style POSIX extension.
var FlavorPOSIX = Flavor{
	Name:     "posix",
	UserURN:  "urn:ietf:params:scim:schemas:extension:posix:2.0:User",
	GroupURN: "urn:ietf:params:scim:schemas:extension:posix:2.0:Group",
	UID:      "uidNumber",
	GID:      "gidNumber",
	Home:     "homeDirectory",
	Shell:    "loginShell",
	GECOS:    "gecos",
	SSHKeys:  "sshPublicKeys",
	GroupGID: "gidNumber",
}

// FlavorPOSIXSingularKey is the POSIX extension with the SSH key
// attribute named as LDAP's openssh-lpk schema names it and as most
// servers publish it: sshPublicKey (singular, multi-valued).
var FlavorPOSIXSingularKey = func() Flavor {
	f := FlavorPOSIX
	f.Name, f.SSHKeys = "posix-singular-key", "sshPublicKey"
	return f
}()

// FlavorCoreWeave is a CoreWeave-style extension (the URN CoreWeave
// publishes; attribute names chosen for this server).
var FlavorCoreWeave = Flavor{
	Name:     "coreweave",
	UserURN:  "urn:coreweave:params:scim:schemas:extension:coreweave:2.0:CoreWeaveUser",
	GroupURN: "urn:coreweave:params:scim:schemas:extension:coreweave:2.0:CoreWeaveGroup",
	UID:      "uid",
	GID:      "gid",
	Home:     "homeDirectory",
	Shell:    "shell",
	GECOS:    "gecos",
	SSHKeys:  "sshKeys",
	GroupGID: "gidNumber",
}

// FlavorByName returns the flavour called name ("posix", "posix-singular-key" or
// "coreweave").
func FlavorByName(name string) (Flavor, bool) {
	switch name {
	case FlavorPOSIX.Name:
		return FlavorPOSIX, true
	case FlavorCoreWeave.Name:
		return FlavorCoreWeave, true
	case FlavorPOSIXSingularKey.Name:
		return FlavorPOSIXSingularKey, true
	}
	return Flavor{}, false
}
