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

// gidTable is every user's gids (the gids of the groups that list the
// user's name: what user_groups holds), ascending and without repeats, by the user's position in c.Users: what the whole write's
// rows, index and Verify read. At 100,000 users a map of name to gids
// was 12 MB held through the write (issue 18, heap at the write's
// stages); this is one array of gids, one of offsets and one of slots
// (users of one name share a slot, as they shared the map's entry).
type gidTable struct {
	slot []int32  // c.Users[i]'s slot
	at   []int32  // slot k's gids are gids[at[k]:at[k+1]]
	gids []uint32 // every slot's gids in turn
}

// of is c.Users[i]'s gids.
func (t gidTable) of(i int) []uint32 {
	k := t.slot[i]
	return t.gids[t.at[k]:t.at[k+1]]
}

// userGIDTable is c's users' gids (gidTable).
func (c *Contents) userGIDTable() gidTable {
	slots := make(map[string]int32, len(c.Users))
	t := gidTable{slot: make([]int32, len(c.Users))}
	for i, u := range c.Users {
		k, ok := slots[u.Name]
		if !ok {
			k = int32(len(slots))
			slots[u.Name] = k
		}
		t.slot[i] = k
	}
	// Two passes over the memberships: count each slot's, then fill.
	count := make([]int32, len(slots)+1)
	for _, g := range c.Groups {
		for _, m := range g.Members {
			if k, ok := slots[m]; ok {
				count[k+1]++
			}
		}
	}
	for k := 1; k < len(count); k++ {
		count[k] += count[k-1]
	}
	t.gids = make([]uint32, count[len(count)-1])
	next := slices.Clone(count[:len(count)-1])
	for _, g := range c.Groups {
		for _, m := range g.Members {
			if k, ok := slots[m]; ok {
				t.gids[next[k]] = g.GID
				next[k]++
			}
		}
	}
	// Each slot's gids sorted and without repeats, packed down.
	t.at = count
	w := int32(0)
	for k := 0; k+1 < len(count); k++ {
		gids := t.gids[count[k]:next[k]]
		slices.Sort(gids)
		gids = slices.Compact(gids)
		count[k] = w
		w += int32(copy(t.gids[w:], gids))
	}
	count[len(count)-1] = w
	t.gids = slices.Clip(t.gids[:w])
	return t
}

// gidsOf maps each member name in names (nil: every member) to the gids
// of its groups, ascending and without repeats.
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
