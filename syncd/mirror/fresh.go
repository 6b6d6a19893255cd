package mirror

import (
	"fmt"
	"time"

	"github.com/scimbridge/scimbridge/syncd/commit"
	"github.com/scimbridge/scimbridge/syncd/publish"
)

// Freshness of a node: how old the newest valid signature from its head is.
//
// A healthy head signs its manifest again at every poll that reached the
// identity source (publish.Publisher), every poll_interval (PollSeconds in
// the manifest). A node records, in its state file, the newest Signed
// time it verified and when it first verified it, by its own clock
// (SignedSeen). The signature age is now - SignedSeen: measured on one
// clock, so a node whose clock is off from the head's by minutes still
// sees a healthy head as fresh, and a manifest served again and again (a
// stale copy of the publish directory, a frozen bucket, a replay of the
// current manifest) never makes it younger: the same Signed time is not
// new. Past stale_after (default staleAfter) a poll that found nothing
// newer is "stale", not "unchanged": an error in the log, `syncd status`
// exit 1, scimbridge_mirror_stale 1. The live snapshot stays, and its
// mtime (the gates' freshness) stays at the last source_contact the head
// signed, so gates with max_age see the same age grow.

// DefaultStaleAfterMin is the least default stale_after: a head that
// polls every minute (the default) may miss a few polls to a slow or
// briefly unreachable source before its nodes call themselves stale.
const DefaultStaleAfterMin = 5 * time.Minute

// staleAfter is the configured bound, else five of the head's poll
// intervals, at least DefaultStaleAfterMin.
func staleAfter(configured time.Duration, pollSeconds int64) time.Duration {
	if configured > 0 {
		return configured
	}
	return max(5*time.Duration(pollSeconds)*time.Second, DefaultStaleAfterMin)
}

// signatureSeen is when this node first verified a signature as new as m's:
// kept from the state file while the head's Signed time does not move.
func signatureSeen(prev *accepted, m *publish.Manifest, now time.Time) (signed, seen time.Time) {
	if prev == nil || prev.SignedSeen.IsZero() || m.Signed.After(prev.Signed) {
		return m.Signed, now
	}
	return prev.Signed, prev.SignedSeen
}

// checkStale turns a poll that found nothing newer into "stale" when the
// newest signature is older than the bound. Failed and refused polls keep
// their outcome (their error says more); the age is in r either way.
func (n *Node) checkStale(r *Result, now time.Time) {
	a := n.accepted()
	if a == nil || a.SignedSeen.IsZero() {
		return
	}
	r.SignatureSeen, r.HeadSigned = a.SignedSeen, a.Signed
	r.StaleAfter = staleAfter(n.StaleAfter, a.PollSeconds)
	age := now.Sub(a.SignedSeen)
	if age <= r.StaleAfter || r.Err != nil {
		return
	}
	r.Outcome = commit.Stale
	r.Err = fmt.Errorf("stale: the newest valid signature from the head (%s, serial %d) was first seen %s ago, more than stale_after %s: "+
		"the head is down or has lost its identity source, or this node is served a frozen copy of its manifest; "+
		"the live snapshot stays and ages for the gates (max_age)", n.followingName(), a.Serial, age.Round(time.Second), r.StaleAfter)
}
