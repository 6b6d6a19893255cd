// Package scimserver is an in-memory, read-only SCIM 2.0 service provider
// (RFC 7643, RFC 7644, RFC 9865 cursor paging) for tests and the demo. It
// serves users and groups with a POSIX-style extension, and it can be told
// to misbehave the way real SCIM servers do (see Faults), so clients are
// tested against the bugs they will meet rather than the RFC alone.
//
// Extension flavours (Options.Flavor) differ only in URNs and attribute
// names; the Go data model (POSIX) is the same for both:
//
//	                 FlavorPOSIX (Oracle-style)                       FlavorCoreWeave
//	user URN         urn:ietf:params:scim:schemas:extension:posix:2.0:User
//	                                                                   urn:coreweave:params:scim:schemas:extension:coreweave:2.0:CoreWeaveUser
//	UID              uidNumber (integer)                              uid (integer)
//	primary GID      gidNumber (integer)                              gid (integer)
//	home             homeDirectory                                    homeDirectory
//	shell            loginShell                                       shell
//	GECOS            gecos                                            gecos
//	SSH keys         sshPublicKeys (multi-valued string)              sshKeys (multi-valued string)
//	group URN        urn:ietf:params:scim:schemas:extension:posix:2.0:Group
//	                                                                   urn:coreweave:params:scim:schemas:extension:coreweave:2.0:CoreWeaveGroup
//	group GID        gidNumber (integer)                              gidNumber (integer)
//
// The server listens on loopback only. Tests mutate it through Go methods
// (UpsertUser, DeleteUser, SetMembers, SetFaults, ...) or, from shell, the
// loopback-only admin API under /_admin/ (see admin.go).
package scimserver
