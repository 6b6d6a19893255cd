package snapshot

import (
	"maps"
	"slices"
)

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
	if names != nil && len(names) <= fewNames {
		return c.gidsOfFew(names)
	}
	size := len(c.Users)
	if names != nil {
		size = min(size, len(names))
	}
	memberOf := make(map[string][]uint32, size)
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

// fewNames: up to this many names, gidsOf searches each group's member
// list (sorted, as validation and Load make it) instead of hashing every
// membership: a one-change poll at 100,000 users asks for one or two
// names, two or three times (pprof over BenchmarkChangeToManifest,
// add-member: 0.2 s of CPU per change under load). BenchmarkGIDsOf at
// 100,000 users: 31 ms a call against 53 ms; most of what is left is
// checking that each list is sorted.
const fewNames = 16

func (c *Contents) gidsOfFew(names map[string]bool) map[string][]uint32 {
	want := slices.Sorted(maps.Keys(names))
	memberOf := make(map[string][]uint32, len(want))
	for i := range c.Groups {
		g := &c.Groups[i]
		if !slices.IsSorted(g.Members) {
			for _, m := range g.Members {
				if names[m] {
					memberOf[m] = append(memberOf[m], g.GID)
				}
			}
			continue
		}
		for _, n := range want {
			if _, found := slices.BinarySearch(g.Members, n); found {
				memberOf[n] = append(memberOf[n], g.GID)
			}
		}
	}
	for m, gids := range memberOf {
		slices.Sort(gids)
		memberOf[m] = slices.Compact(gids)
	}
	return memberOf
}
