package snapshot

import "slices"

// Contents is a validated directory, ready to be written. Names and
// numbers in it have passed syncd/validate; the writer trusts them.
type Contents struct {
	Users        []User
	Groups       []Group
	Associations []Association
	// Source names where the directory came from (never a credential).
	Source string
	// indexRoom: the NSS index's buckets are sized for this many times
	// the entries (0 or 1: as many as they need). Set by Update's whole
	// write after the directory outgrew the live index (index.go).
	indexRoom int
}

// User is one passwd entry plus what PAM, SPANK and the keys command need.
type User struct {
	Name    string
	UID     uint32
	GID     uint32
	GECOS   string
	Home    string
	Shell   string
	Active  bool
	SCIMID  string
	SSHKeys []string
	// Quota is the hard storage limit in bytes the identity provider sent
	// for the user's home (0: none; table quotas, quotas.go).
	Quota uint64
}

// Group is one group entry; Members are user names that are also in Users.
type Group struct {
	Name    string
	GID     uint32
	SCIMID  string
	Members []string
	// Quota is the hard storage limit in bytes the identity provider sent
	// for the team's project directory (0: none; table quotas).
	Quota uint64
}

// Association is one Slurm association of a user, as read back from
// slurmdbd after a reconcile.
type Association struct {
	User       string
	Account    string
	QOS        []string
	DefaultQOS string
	IsDefault  bool
	Blocked    bool
}

// userGIDs maps each member name to the gids of its groups, ascending and
// without repeats: user_groups, the NSS index and Verify all hold this.
func (c *Contents) userGIDs() map[string][]uint32 { return c.gidsOf(nil) }

// gidsOf is userGIDs for the users in names only (nil: every user).
func (c *Contents) gidsOf(names map[string]bool) map[string][]uint32 {
	memberOf := make(map[string][]uint32, len(c.Users))
	for _, g := range c.Groups {
		for _, m := range g.Members {
			if names == nil || names[m] {
				memberOf[m] = append(memberOf[m], g.GID)
			}
		}
	}
	for m, gids := range memberOf {
		slices.Sort(gids)
		memberOf[m] = slices.Compact(gids)
	}
	return memberOf
}
