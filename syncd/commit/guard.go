package commit

// The removal guard (issue 9). Decisions:
//
//   - The guard may hold back DELETIONS of records, never loss of
//     access. A disable (active true -> false), a removal from a group
//     and a change of any field always reach the snapshot on the poll
//     that sees them, whatever else the directory does. Before this, a
//     guard refusing the whole commit also froze every disable behind it.
//   - When one commit would delete more than max_removal_share of the
//     live snapshot's users, the deleted users are held: their records
//     stay (name, uid, gid, home: files keep their owner's name, Slurm
//     keeps their associations, nothing is cascaded) but DISABLED, with
//     no SSH keys and in no group. A hard delete at the source is the
//     strongest disable there is (Keycloak and others delete to
//     offboard); holding it as an active account would be the same hole
//     as holding a disable. A bad fetch (a token scoped to one
//     department) therefore locks the missing users out until someone
//     looks, loudly (status "held", exit 3), but loses no data.
//   - Group deletions are never held: a kept group would still be mapped
//     (a Slurm account, a conflict the admin just resolved by deleting a
//     group), and its gid's files lose only a name.
//   - A held record that collides with a record of the new directory
//     (same name, uid, gid or home) is not held: the source's record
//     wins and the deletion goes through.
//   - Group membership removals are never held back. A share of them
//     above max_removal_share, or every group losing its members (a
//     server that stops showing members: AWS IAM Identity Center), is a
//     warning in the log and the status file, not a refusal.
//   - --force (Policy.Force) holds nothing.

import (
	"fmt"
	"sort"
	"strings"

	"github.com/scimbridge/scimbridge/syncd/snapshot"
)

// Held is what the guard held back in one commit.
type Held struct {
	Users []string // user records kept, disabled, that the source deleted
	// Groups is always empty: group deletions are not held (kept for the
	// status file's shape).
	Groups []string
	// Warnings are membership losses large enough to look like a
	// server fault; they were applied.
	Warnings []string
}

// Empty reports whether nothing was held and nothing warned.
func (h *Held) Empty() bool {
	return h == nil || len(h.Users)+len(h.Groups)+len(h.Warnings) == 0
}

// Summary is one line for logs and the status file.
func (h *Held) Summary() string {
	if h == nil {
		return ""
	}
	var parts []string
	if len(h.Users) > 0 {
		parts = append(parts, fmt.Sprintf("held back the deletion of %d users (kept disabled, in no group): %s", len(h.Users), list(h.Users)))
	}
	if len(h.Groups) > 0 {
		parts = append(parts, fmt.Sprintf("held back the deletion of %d groups (kept empty): %s", len(h.Groups), list(h.Groups)))
	}
	if len(parts) > 0 {
		parts = append(parts, "more than max_removal_share; use `syncd sync --once --force` if this is intended")
	}
	parts = append(parts, h.Warnings...)
	return strings.Join(parts, "; ")
}

func list(names []string) string {
	if len(names) > 10 {
		return strings.Join(names[:10], ", ") + fmt.Sprintf(" and %d more", len(names)-10)
	}
	return strings.Join(names, ", ")
}

// Hold applies the guard to next (changing it) given the diff d from live
// to next, and returns what it held back (nil: nothing). d is stale
// afterwards when anything was held: compute it again.
func (p Policy) Hold(live, next *snapshot.Contents, d *Diff) *Held {
	if p.Force || live == nil {
		return nil
	}
	h := &Held{}
	if len(live.Users) > 0 && len(d.RemovedUsers) > 0 && float64(len(d.RemovedUsers))/float64(len(live.Users)) > p.MaxRemovalShare {
		names, uids, homes := map[string]bool{}, map[uint32]bool{}, map[string]bool{}
		for _, u := range next.Users {
			names[u.Name], uids[u.UID], homes[u.Home] = true, true, true
		}
		for _, u := range d.RemovedUsers {
			if names[u.Name] || uids[u.UID] || homes[u.Home] {
				continue
			}
			u.Active, u.SSHKeys = false, nil
			next.Users = append(next.Users, u)
			h.Users = append(h.Users, u.Name)
		}
	}
	if w := p.membershipWarning(live, next, d); w != "" {
		h.Warnings = append(h.Warnings, w)
	}
	if h.Empty() {
		return nil
	}
	sortContents(next)
	return h
}

// minMembershipRemovals keeps the membership warning quiet for the
// ordinary churn of a small directory (two people leaving a team of ten).
const minMembershipRemovals = 10

// membershipWarning describes a loss of group memberships large enough
// to look like a server fault; it is applied all the same. d is the diff
// of live and next: a group it does not name has the same members in
// both, so only the removed and changed groups are compared member by
// member (a poll that sees one change does not build a set of every
// membership of 100,000 users twice).
func (p Policy) membershipWarning(live, next *snapshot.Contents, d *Diff) string {
	have := countMembers(live)
	if have == 0 {
		return ""
	}
	if countMembers(next) == 0 {
		return fmt.Sprintf("no group in the directory has a member but the live snapshot had %d memberships; applied (the server may not be showing members: see group_members)", have)
	}
	removed := 0
	for _, g := range d.RemovedGroups {
		removed += len(g.Members)
	}
	if len(d.ChangedGroups) > 0 {
		changed := make(map[string]bool, len(d.ChangedGroups))
		for _, c := range d.ChangedGroups {
			changed[c.Name] = true
		}
		now := make(map[string]map[string]bool, len(d.ChangedGroups))
		for _, g := range next.Groups {
			if changed[g.Name] {
				now[g.Name] = setOf(g.Members)
			}
		}
		for _, g := range live.Groups {
			if in, ok := now[g.Name]; ok {
				for _, u := range g.Members {
					if !in[u] {
						removed++
					}
				}
			}
		}
	}
	share := float64(removed) / float64(have)
	if removed >= minMembershipRemovals && share > p.MaxRemovalShare {
		return fmt.Sprintf("removed %d of %d group memberships (%.1f%%), more than max_removal_share %.1f%%; applied: removals from groups are never held back",
			removed, have, 100*share, 100*p.MaxRemovalShare)
	}
	return ""
}

func countMembers(c *snapshot.Contents) int {
	n := 0
	for _, g := range c.Groups {
		n += len(g.Members)
	}
	return n
}

func setOf(names []string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// sortContents restores validate's order (users by uid, groups by gid):
// the snapshot's bytes depend on it.
func sortContents(c *snapshot.Contents) {
	sort.Slice(c.Users, func(i, j int) bool { return c.Users[i].UID < c.Users[j].UID })
	sort.Slice(c.Groups, func(i, j int) bool { return c.Groups[i].GID < c.Groups[j].GID })
}
