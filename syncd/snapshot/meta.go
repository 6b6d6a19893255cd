package snapshot

import "time"

// SchemaVersion is the meta.schema_version this writer produces. It must
// equal SCIM_SCHEMA_VERSION in include/scimcache.h, or every node's
// reader refuses the file (a test checks the two agree).
//
// Version 3 (issue 18): a group whose member list is longer than
// piecedOver (1,000) bytes has NULL in groups.members (its members are its
// memberships rows) and its list in pieces in the NSS index (index.go).
// A version 2 reader would answer such a group with no members, so the
// version changes: old readers refuse the file (SCIM_UNAVAIL, and an old
// node's mirror keeps its last snapshot: install.go), readers of this
// version read 2 and 3 (MinReadVersion).
const SchemaVersion = 3

// MinReadVersion is the oldest schema version this syncd's nodes install
// (and the C reader reads, SCIM_SCHEMA_VERSION_MIN): a head not yet
// upgraded keeps publishing version 2, and upgraded nodes read it.
const MinReadVersion = 2

// Meta describes one snapshot, as stored in its meta table.
type Meta struct {
	Serial        int64
	CreatedAt     time.Time
	Source        string
	Users         int
	Groups        int
	Memberships   int
	SSHKeys       int
	Associations  int
	SlurmSyncedAt time.Time // zero until the Slurm step has read back associations
	// NSSIndex: the writer's NSS index is usable (index.go); false only
	// when names crowd one bucket under every seed (lookups then read
	// SQL). Set by Write; Load leaves it false.
	NSSIndex bool
}
