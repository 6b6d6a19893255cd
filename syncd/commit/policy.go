// Package commit decides whether a validated directory may replace the
// live snapshot, computes what it would change, and records the outcome
// in a status file anyone can read.
//
// The policy exists because a bad fetch looks like a mass deletion: an
// IdP returning an empty list, a filter gone wrong, a token scoped to
// one department. Losing accounts kills running jobs and locks people
// out, so large removals wait for a person (--force).
package commit

import (
	"fmt"

	"github.com/scimbridge/scimbridge/syncd/snapshot"
)

// Policy is the commit rule.
type Policy struct {
	// MaxRemovalShare is the largest share of the live snapshot's users
	// one commit may remove (0.1 = 10%).
	MaxRemovalShare float64
	// Force commits whatever the share and even an empty directory.
	Force bool
}

// Refusal is a commit the policy refused; the live snapshot stays.
type Refusal struct{ Reason string }

func (r *Refusal) Error() string { return "commit refused: " + r.Reason }

// Check returns nil if next may replace live (nil when there is no live
// snapshot), or a *Refusal saying why not.
func (p Policy) Check(live, next *snapshot.Contents, d *Diff) error {
	if p.Force {
		return nil
	}
	if len(next.Users) == 0 {
		if live == nil || len(live.Users) == 0 {
			return &Refusal{"the directory has no valid users; nothing to publish (use --force to publish an empty snapshot)"}
		}
		return &Refusal{fmt.Sprintf("the directory has no valid users but the live snapshot has %d; keeping it (use --force to publish an empty snapshot)", len(live.Users))}
	}
	if live == nil || len(live.Users) == 0 {
		return nil
	}
	removed := len(d.RemovedUsers)
	share := float64(removed) / float64(len(live.Users))
	if share > p.MaxRemovalShare {
		return &Refusal{fmt.Sprintf("it would remove %d of %d users (%.1f%%), more than max_removal_share %.1f%%; keeping the live snapshot (use --force if this is intended)",
			removed, len(live.Users), 100*share, 100*p.MaxRemovalShare)}
	}
	return p.checkMemberships(live, next)
}

// minMembershipRemovals keeps the membership share rule from refusing the
// ordinary churn of a small directory (two people leaving a team of ten).
const minMembershipRemovals = 10

// checkMemberships applies the removal rule to group memberships too. A
// server that stops showing members (AWS IAM Identity Center lists every
// group empty; a members filter that breaks) keeps every user but strips
// everyone's supplementary groups, and with them sudo, project
// directories and Slurm accounts.
func (p Policy) checkMemberships(live, next *snapshot.Contents) error {
	have := memberships(live)
	if len(have) == 0 {
		return nil
	}
	want := memberships(next)
	if len(want) == 0 {
		return &Refusal{fmt.Sprintf("no group in the directory has a member but the live snapshot has %d memberships; keeping it (the server may not be showing members: see group_members; use --force if this is intended)", len(have))}
	}
	removed := 0
	for m := range have {
		if !want[m] {
			removed++
		}
	}
	share := float64(removed) / float64(len(have))
	if removed >= minMembershipRemovals && share > p.MaxRemovalShare {
		return &Refusal{fmt.Sprintf("it would remove %d of %d group memberships (%.1f%%), more than max_removal_share %.1f%%; keeping the live snapshot (use --force if this is intended)",
			removed, len(have), 100*share, 100*p.MaxRemovalShare)}
	}
	return nil
}

func memberships(c *snapshot.Contents) map[[2]string]bool {
	m := make(map[[2]string]bool)
	for _, g := range c.Groups {
		for _, u := range g.Members {
			m[[2]string{g.Name, u}] = true
		}
	}
	return m
}

// CarryAssociations copies the live snapshot's Slurm associations of
// users that remain into next: they are what slurmdbd last reported, and
// stay true until the Slurm step reads them back again.
func CarryAssociations(live, next *snapshot.Contents) {
	if live == nil {
		return
	}
	keep := make(map[string]bool, len(next.Users))
	for _, u := range next.Users {
		keep[u.Name] = true
	}
	next.Associations = next.Associations[:0]
	for _, a := range live.Associations {
		if keep[a.User] {
			next.Associations = append(next.Associations, a)
		}
	}
}
