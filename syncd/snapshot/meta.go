package snapshot

import "time"

// SchemaVersion is the meta.schema_version this writer produces. It must
// equal SCIM_SCHEMA_VERSION in include/scimcache.h, or every node's
// reader refuses the file (a test checks the two agree).
const SchemaVersion = 2

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
