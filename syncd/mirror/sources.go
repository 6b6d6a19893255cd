package mirror

// More than one source: heads that failed over, and heads rebuilt.
//
// A node's [mirror] names one source (url, path or s3_bucket) and, after
// it, any number of fallback_urls and fallback_paths: a second head (a
// real cluster has one head, or two), or another copy of the same publish
// directory. Every manifest must verify with the one public key the node
// trusts, so both heads sign with the same key.
//
// Each poll reads every source's manifest (in the order listed; a quiet
// head answers 304 to the built-in server and nginx) and follows the
// manifest with the highest serial; the first listed wins a tie. If that
// one is refused, or its snapshot cannot be fetched, the next highest is
// tried. A head that is down costs one failed request per poll and
// nothing else; `syncd status` names the head followed ("source:
// mirror <url>"), the state file <cache_path>.mirror.json too.
//
// Which manifests a node takes. The state file <cache_path>.mirror.json
// holds the accepted manifest (the last one installed or touched: serial,
// snapshot hash, source_contact, source) and the floor, the highest serial
// the node ever accepted (from any head). A manifest with
//
//   - a serial above the floor: a new commit; installed;
//   - the accepted serial and snapshot: the head re-signed it after a
//     quiet poll; the live file's mtime moves to its source_contact,
//     never back (an older source_contact is a replay: refused);
//   - any other serial at or below the floor (a lower serial, or another
//     snapshot under a serial seen before): a replay when its
//     source_contact is not newer than the accepted one (refused, exit 3,
//     the live snapshot stays); taken when its source_contact is newer:
//     it was signed, with the head's key, by a head that reached the
//     identity source after everything this node accepted, so it is not
//     an old manifest played back. This is a second head taking over from
//     one with a higher serial, or a head rebuilt from scratch whose
//     serial is still below the old ones (a head without clock-based
//     serials, syncd/snapshot/serial.go, its clock behind, or many
//     commits in one second that ran the old serials ahead of the clock).
//
// The floor is what keeps a failover safe: after a node moved from head A
// (serial 300) to head B (serial 120), A's old manifest at serial 300 is
// not "higher than 120"; it is at the floor, with an old source_contact,
// and refused.
//
// Why source_contact and not created: created is when a head wrote its
// snapshot; a second head that committed the same data earlier (lower
// serial, older created) is just as right, and as fresh, as long as it
// keeps reaching the source. source_contact only moves when a head
// reached the source, and a replayed manifest carries the old one. So a
// higher serial with an older created time is taken (a newer commit, by
// the rule of the highest serial), and a lower serial with an older
// source_contact is not.
//
// A head that is up but has lost its identity source keeps re-serving its
// manifest with an old source_contact. When another valid head's
// source_contact is newer by more than failover_after (default 5m; 0
// turns this off), the stale head goes after the fresh ones in the order
// above, so nodes fail over to the head that still reaches the source
// (a lower serial with a newer source_contact: taken). When it recovers,
// its higher serial and new source_contact lead again.
//
// What this does not protect against: someone holding the head's private
// key, and a second head whose identity source lags the first (a replica
// that has not seen a disable yet): after a failover the node follows
// what that head read.

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/publish"
)

// NewAll builds the transports of a [mirror] table: the main source first,
// then fallback_urls, then fallback_paths.
func NewAll(m config.Mirror) (Transport, []Transport, error) {
	t, err := New(m)
	if err != nil {
		return nil, nil, err
	}
	var more []Transport
	for _, u := range m.FallbackURLs {
		h, err := newHTTP(u, m.CAFile)
		if err != nil {
			return nil, nil, fmt.Errorf("mirror: fallback_urls %q: %w", u, err)
		}
		more = append(more, h)
	}
	for _, p := range m.FallbackPaths {
		more = append(more, &dirTransport{dir: p})
	}
	return t, more, nil
}

type candidate struct {
	t Transport
	m *publish.Manifest
}

// manifests reads and verifies every source's manifest and returns the
// good ones, highest serial first (stable: the listed order on a tie).
// With none good, the error says why for each source.
func (n *Node) manifests(ctx context.Context, r *Result) ([]candidate, error) {
	srcs := append([]Transport{n.T}, n.Fallback...)
	var cands []candidate
	var errs []error
	refusals := 0
	for _, t := range srcs {
		var buf bytes.Buffer
		got, err := t.Fetch(ctx, publish.ManifestName, publish.MaxManifestSize, &buf)
		r.Bytes += got
		if err != nil {
			errs = append(errs, fmt.Errorf("fetch %s from %s: %w", publish.ManifestName, t.Name(), err))
			continue
		}
		m, err := publish.OpenAny(buf.Bytes(), append([]ed25519.PublicKey{n.Key}, n.MoreKeys...))
		if err != nil {
			errs = append(errs, refuse("%s from %s: %v", publish.ManifestName, t.Name(), err))
			refusals++
			continue
		}
		cands = append(cands, candidate{t, m})
	}
	if len(cands) > 0 {
		for _, err := range errs {
			n.Log.WithError(err).Warn("mirror: a source is not usable; following another")
		}
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].m.Serial > cands[j].m.Serial })
	if n.FailoverAfter > 0 && len(cands) > 1 {
		// A head far behind another in source_contact (up, but cut off
		// from the identity source) goes after the fresh ones.
		var newest time.Time
		for _, c := range cands {
			if c.m.SourceContact.After(newest) {
				newest = c.m.SourceContact
			}
		}
		fresh := func(c candidate) bool { return newest.Sub(c.m.SourceContact) <= n.FailoverAfter }
		sort.SliceStable(cands, func(i, j int) bool { return fresh(cands[i]) && !fresh(cands[j]) })
	}
	switch {
	case len(cands) > 0:
		return cands, nil
	case len(errs) == 1:
		return nil, errs[0]
	}
	msgs := make([]string, len(errs))
	for i, err := range errs {
		msgs[i] = strings.TrimPrefix(err.Error(), "refused: ")
	}
	if refusals == len(errs) {
		return nil, &Refusal{strings.Join(msgs, "; ")}
	}
	return nil, errors.New(strings.Join(msgs, "; "))
}

// followingName is the source this node follows: the last one whose
// manifest it accepted, else the first listed.
func (n *Node) followingName() string {
	if n.following != "" {
		return n.following
	}
	if a := n.accepted(); a != nil && a.From != "" {
		return a.From
	}
	return n.T.Name()
}
