// Package commit decides whether a validated directory may replace the
// live snapshot, computes what it would change, and records the outcome
// in a status file anyone can read.
//
// The policy exists because a bad fetch looks like a mass deletion: an
// IdP returning an empty list, a filter gone wrong, a token scoped to
// one department. Deleting accounts kills running jobs and orphans files,
// so large deletions wait for a person (--force): the records stay, but
// disabled. A disable or a loss of group membership never waits
// (guard.go).
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
// snapshot), or a *Refusal saying why not. The only refusal left is a
// directory without a single valid user: nothing in it can be a disable
// or a removal from a group, so refusing holds back deletions only. A
// large share of removals is Hold's business: it keeps the records, never
// the access (see guard.go).
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
	return nil
}

// CarryAssociations copies the live snapshot's Slurm associations of
// users that remain into next: they are what slurmdbd last reported, and
// stay true until the Slurm step reads them back again.
func CarryAssociations(live, next *snapshot.Contents) {
	if live == nil {
		return
	}
	next.Associations = next.Associations[:0]
	if len(live.Associations) == 0 {
		return // no map of 100,000 names for nothing to carry
	}
	keep := make(map[string]bool, len(next.Users))
	for _, u := range next.Users {
		keep[u.Name] = true
	}
	for _, a := range live.Associations {
		if keep[a.User] {
			next.Associations = append(next.Associations, a)
		}
	}
}
