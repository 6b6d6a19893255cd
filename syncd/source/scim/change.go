package scim

// The cheap change check between full reads.
//
// Decisions (issue 12):
//
//   - The watermark overlaps the read window. It is the server's time at
//     the START of the last full read (the HTTP Date of its first
//     response, else our clock) minus Overlap, never the newest
//     meta.lastModified seen: a record changed during a read, whose page
//     was already read, can carry an older timestamp than a record read
//     later, and "gt <newest seen>" would never ask for it again
//     (reproduced against an independent server). Overlap also covers the
//     Date header's one-second resolution and servers that stamp
//     lastModified before the change becomes visible.
//   - Re-reads are deduplicated: the full read remembers the
//     (id, lastModified) of every record newer than the watermark; a check
//     that finds only those, with the same timestamps, finds no change.
//     A clean check moves the watermark to its own start minus Overlap,
//     so the window stays about Overlap + one poll wide.
//   - Deletions leave no timestamp. The removal check asks each endpoint
//     for one record (count=1, attributes=id, the configured query) and
//     compares totalResults with the total the server reported at the
//     start of the last full read (the server's own count, so a server
//     that miscounts by a constant does not trigger reads). A read whose
//     distinct records differ from that total by another amount than the
//     previous read's (records deleted and added during the read) leaves
//     the directory "unsettled": the next poll reads everything again.
//   - A server without totalResults (cursor paging may omit it) gets no
//     removal check: deletions then wait for the full reconcile, said
//     once in the log.
//
// Cost for the server per poll, nothing changed: one small request per
// endpoint (filter meta.lastModified gt W, attributes=id,meta.lastModified:
// normally an empty list); when the removal check is due, one more per
// endpoint (count=1). Once per full read one "ge" request verifies that
// the server evaluates the filter at all.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/scimbridge/scimbridge/syncd/redact"
	"github.com/scimbridge/scimbridge/syncd/source"
)

// DefaultOverlap is how far the change check's window reaches back before
// the start of the previous read.
const DefaultOverlap = 2 * time.Minute

// Change is what one check found.
type Change struct {
	Changed bool
	// Reason says what changed, for the log ("users: 1 record modified").
	Reason string
	// Requests is the number of HTTP requests the check made.
	Requests int
	// RemovalsChecked reports whether totals were compared.
	RemovalsChecked bool
	// Records is how many changed records an Update applied; Removed
	// how many records it dropped as deleted (update.go).
	Records, Removed int

	// For Update (collecting checks): the totals the server reports now,
	// and the window this check would move to.
	totals map[string]int
	fresh  map[string]time.Time
	since  time.Time
}

// changeState is what the last full read (and the clean checks since)
// left for the next check.
type changeState struct {
	mu sync.Mutex
	// Server clock: the earliest Date header since markStart.
	clockMu  sync.Mutex
	dateMin  time.Time
	localRef time.Time

	ready  bool
	since  time.Time // the watermark W
	sample string    // a lastModified as the server writes it (format)
	// newest is the newest lastModified of the last read, to verify once
	// that the server evaluates the filter ("ge" must find it).
	newest, newestSeg, verified string
	seen                        map[string]time.Time           // seg \x00 id -> lastModified, for t > since
	totals                      map[string]int                 // seg -> totalResults at the start of the read; -1 unknown
	deltas                      map[string]int                 // seg -> distinct - totalResults of the last read
	unsettled                   string                         // why the next poll must read everything
	ids                         map[string]map[string]struct{} // seg -> ids of the last read
	order                       map[string][]string            // seg -> ids in the server's order, where known (removed.go)
	held                        *source.Directory              // after an Update: its result, instead of ids
	noTotalsLogged              bool
}

// dateTransport notes the server's clock from every response's Date.
type dateTransport struct {
	rt http.RoundTripper
	st *changeState
}

func (d dateTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := d.rt.RoundTrip(r)
	if err == nil {
		if t, perr := http.ParseTime(resp.Header.Get("Date")); perr == nil {
			d.st.clockMu.Lock()
			if d.st.dateMin.IsZero() || t.Before(d.st.dateMin) {
				d.st.dateMin = t
			}
			d.st.clockMu.Unlock()
		}
	}
	return resp, err
}

// wrapTransport puts dateTransport under hc's transport.
func (st *changeState) wrap(hc *http.Client) *http.Client {
	c := *hc
	rt := c.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	c.Transport = dateTransport{rt: rt, st: st}
	return &c
}

// markStart begins a read window.
func (st *changeState) markStart() {
	st.clockMu.Lock()
	st.dateMin, st.localRef = time.Time{}, time.Now()
	st.clockMu.Unlock()
}

// start is the server's time at the start of the window: the earliest
// Date seen since markStart, less its one-second resolution, or our own
// clock when the server sends no Date.
func (st *changeState) start() time.Time {
	st.clockMu.Lock()
	defer st.clockMu.Unlock()
	if !st.dateMin.IsZero() {
		return st.dateMin.Add(-time.Second)
	}
	return st.localRef
}

// readRecorder collects, during a full read, what the next check needs.
type readRecorder struct {
	mu      sync.Mutex
	st      *changeState
	overlap time.Duration
	cutoff  time.Time // records at or before it are not remembered
	seen    map[string]time.Time
	sample  string
	newest  time.Time
	newRaw  string
	newSeg  string
}

func (c *Client) newRecorder() *readRecorder {
	c.chg.markStart()
	return &readRecorder{st: &c.chg, overlap: c.overlap(), seen: map[string]time.Time{}}
}

func (c *Client) overlap() time.Duration {
	if c.opts.ChangeOverlap > 0 {
		return c.opts.ChangeOverlap
	}
	return DefaultOverlap
}

func seenKey(seg, id string) string { return seg + "\x00" + id }

// see records one resource of seg.
func (rr *readRecorder) see(seg string, r *resource) {
	s, ok, _ := r.str(Path{Attr: "meta", Sub: "lastModified"})
	if !ok {
		return
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return
	}
	id, _ := r.id()
	rr.mu.Lock()
	defer rr.mu.Unlock()
	if rr.cutoff.IsZero() {
		// A response has arrived, so its Date is known; a few seconds
		// of slack for the other walk's first response.
		rr.cutoff = rr.st.start().Add(-rr.overlap - 5*time.Second)
	}
	if rr.sample == "" {
		rr.sample = s
	}
	if t.After(rr.newest) {
		rr.newest, rr.newRaw, rr.newSeg = t, s, seg
	}
	if t.After(rr.cutoff) {
		rr.seen[seenKey(seg, id)] = t
	}
}

// commit makes a successful read the base of the next checks. totals
// and distinct are per endpoint: the first totalResults the server
// reported (-1 none) and the distinct records read.
func (c *Client) commitRead(rr *readRecorder, totals map[string]int, ids map[string]map[string]struct{}, order map[string][]string) {
	st := &c.chg
	w := st.start().Add(-rr.overlap)
	st.mu.Lock()
	defer st.mu.Unlock()
	st.ids, st.order, st.held = ids, order, nil
	distinct := map[string]int{}
	for seg, m := range ids {
		distinct[seg] = len(m)
	}
	st.ready = rr.newRaw != ""
	st.since = w
	st.sample = rr.sample
	if st.newest != rr.newRaw {
		st.verified = ""
	}
	st.newest, st.newestSeg = rr.newRaw, rr.newSeg
	st.seen = make(map[string]time.Time, len(rr.seen))
	for k, t := range rr.seen {
		if t.After(w) {
			st.seen[k] = t
		}
	}
	st.unsettled = ""
	st.totals = totals
	for seg, total := range totals {
		st.settleTotal(seg, distinct[seg], total)
	}
}

// settleTotal compares a listing's distinct records with the total the
// server reported at its start (st.mu held): a difference other than the
// last one leaves the directory unsettled (the next poll reads all).
func (st *changeState) settleTotal(seg string, distinct, total int) {
	if total < 0 {
		return
	}
	if st.deltas == nil {
		st.deltas = map[string]int{}
	}
	delta := distinct - total
	if prev := st.deltas[seg]; delta != prev && st.unsettled == "" {
		st.unsettled = fmt.Sprintf("%s: the last read listed %d distinct records while the server counted %d at its start (records added or deleted during the read)", seg, distinct, total)
	}
	st.deltas[seg] = delta
}

// maxConfirm bounds the records a read asks for one by one because the
// previous read listed them and this one did not.
const maxConfirm = 20

// confirmRemovals asks for records the previous read listed and this one
// did not (at most maxConfirm of them per endpoint). Index paging over a
// set that changes under it skips records: a record deleted from a page
// already read shifts every later record one place down, and one is
// never listed, while the totals still agree when another was added. A
// record that still exists (and still matches the configured filter) was
// skipped: the read is not published, and the next one starts afresh.
func (c *Client) confirmRemovals(ctx context.Context, d *Discovery, seg string, cur map[string]struct{}) error {
	c.chg.mu.Lock()
	prev, held := c.chg.ids[seg], c.chg.held
	c.chg.mu.Unlock()
	var missing []string
	note := func(id string) bool {
		if _, ok := cur[id]; !ok {
			missing = append(missing, id)
		}
		return len(missing) < maxConfirm
	}
	switch {
	case prev != nil:
		for id := range prev {
			if !note(id) {
				break
			}
		}
	case held != nil && seg == c.opts.UsersEndpoint:
		for i := range held.Users {
			if !note(held.Users[i].ID) {
				break
			}
		}
	case held != nil:
		for i := range held.Groups {
			if !note(held.Groups[i].ID) {
				break
			}
		}
	}
	for _, id := range missing {
		exists, err := c.exists(ctx, d, seg, id)
		if err != nil {
			return fmt.Errorf("scim: confirming that %s %q is gone: %w", seg, id, err)
		}
		if exists {
			return fmt.Errorf("scim: listing %s: record %q exists but no page listed it: the listing shifted during the read (records deleted or added while paging); not publishing a partial directory, the next poll reads again", seg, id)
		}
	}
	return nil
}

// exists asks for one record: GET seg/id, or, under a configured
// filter, whether the filter still selects it.
func (c *Client) exists(ctx context.Context, d *Discovery, seg, id string) (bool, error) {
	if base := c.baseQuery(seg).Get("filter"); base != "" {
		if !d.FilterSupported {
			return false, nil
		}
		q := cloneValues(c.baseQuery(seg))
		q.Set("filter", "("+base+") and id eq "+jsonString(id))
		q.Set("startIndex", "1")
		q.Set("count", "1")
		if !c.opts.NoAttributesParam {
			q.Set("attributes", "id")
		}
		var p listPage
		if err := c.get(ctx, c.endpoint(seg, q), &p); err != nil {
			return false, err
		}
		return len(p.Resources) > 0, nil
	}
	q := url.Values{}
	if !c.opts.NoAttributesParam {
		q.Set("attributes", "id")
	}
	var raw json.RawMessage
	err := c.get(ctx, c.endpoint(seg+"/"+url.PathEscape(id), q), &raw)
	var he *HTTPError
	if errors.As(err, &he) && he.Status == http.StatusNotFound {
		return false, nil
	}
	return err == nil, err
}

// formatLike writes t the way the server wrote sample (offset, fraction
// digits), truncated, so that a server comparing strings compares like
// with like. Truncation only moves the watermark earlier.
func formatLike(t time.Time, sample string) string {
	st, err := time.Parse(time.RFC3339Nano, sample)
	if err != nil {
		return t.UTC().Format(time.RFC3339)
	}
	t = t.In(st.Location())
	frac := 0
	if i := strings.IndexByte(sample, '.'); i >= 0 {
		j := i + 1
		for j < len(sample) && sample[j] >= '0' && sample[j] <= '9' {
			j++
		}
		frac = j - i - 1
	}
	layout := "2006-01-02T15:04:05"
	if frac > 0 {
		layout += "." + strings.Repeat("0", frac)
	}
	if strings.HasSuffix(sample, "Z") || strings.HasSuffix(sample, "z") {
		layout += "Z07:00"
	} else {
		layout += "-07:00"
	}
	return t.Format(layout)
}

// ErrNoChangeCheck means the server offers no cheap way to tell whether
// anything changed; the caller does a full fetch.
var ErrNoChangeCheck = errors.New("scim: server offers no change check")

// errFound stops a check's walk at the first record not seen before.
type errFound struct{ what string }

func (e errFound) Error() string { return e.what }

// Changed is Check with the removal check.
func (c *Client) Changed(ctx context.Context) (bool, error) {
	ch, err := c.Check(ctx, true)
	return ch.Changed, err
}

// Check asks whether anything changed since the last Fetch: records
// modified (meta.lastModified gt the watermark, deduplicated against
// what the read saw) and, when removals is set, records added or deleted
// (totalResults against the read's). ErrNoChangeCheck: the server cannot
// answer, read everything.
func (c *Client) Check(ctx context.Context, removals bool) (Change, error) {
	ch, err := c.check(withBudget(ctx, c.opts.MaxFetchBytes), removals, nil)
	return ch, redact.Error(c.nameTimeout(ctx, err))
}

// collector takes the records a collecting check (Update) lists: each
// changed record in full, and each repeat of one (paging drift).
type collector interface {
	add(seg string, r *resource)
	dup(seg string, r *resource)
}

// check is Check. With col set it asks for the records' attributes too,
// hands every record it lists to col, does not stop at the first change
// nor at a moved total (ch.moved names those endpoints), and leaves the
// window for Update to move once it has applied what it found.
func (c *Client) check(ctx context.Context, removals bool, col collector) (ch Change, _ error) {
	d, err := c.discovery(ctx)
	if err != nil {
		return ch, err
	}
	st := &c.chg
	st.mu.Lock()
	ready, since, sample := st.ready, st.since, st.sample
	newest, newestSeg, verified, unsettled := st.newest, st.newestSeg, st.verified, st.unsettled
	seen := st.seen
	st.mu.Unlock()
	if !d.FilterSupported || !ready {
		return ch, ErrNoChangeCheck
	}
	if unsettled != "" {
		if col != nil {
			// Update cannot say which records moved: read everything.
			return Change{Changed: true, Reason: unsettled}, fmt.Errorf("%w: %s", ErrFullRead, unsettled)
		}
		return Change{Changed: true, Reason: unsettled}, nil
	}
	noFilter := func() (Change, error) {
		c.mu.Lock()
		c.disc.FilterSupported = false
		c.mu.Unlock()
		return ch, ErrNoChangeCheck
	}
	r0 := c.stats.requests.Load()
	defer func() { ch.Requests = int(c.stats.requests.Load() - r0) }()
	if verified != newest {
		// Servers answer filters they cannot evaluate with an empty
		// list as well as with 400: "ge" the newest value seen must
		// find the record that has it, or "gt" finding nothing means
		// nothing.
		found, err := c.anySince(ctx, d, newestSeg, "ge", newest)
		switch {
		case isBadRequest(err):
			return noFilter()
		case err != nil:
			return ch, fmt.Errorf("scim: change check: %w", err)
		case !found:
			c.log.WithField("endpoint", newestSeg).Warn("scim: the server answers meta.lastModified ge <the newest value it sent> with nothing: it does not evaluate that filter; every poll reads everything")
			return noFilter()
		}
		st.mu.Lock()
		st.verified = newest
		st.mu.Unlock()
	}
	st.markStart()
	w := formatLike(since, sample)
	fresh := map[string]time.Time{}
	for _, seg := range []string{c.opts.UsersEndpoint, c.opts.GroupsEndpoint} {
		q := url.Values{}
		filter := "meta.lastModified gt " + jsonString(w)
		if base := c.baseQuery(seg).Get("filter"); base != "" {
			// The configured filter narrows the listing: a record
			// outside it is no change (and must not look like one).
			filter = "(" + base + ") and " + filter
		}
		q.Set("filter", filter)
		wctx := ctx
		if col != nil {
			// The changed records in full, with what a full read asks.
			if a := c.listQuery(seg).Get("attributes"); a != "" {
				q.Set("attributes", a)
			}
			seg := seg
			wctx = withDupHook(ctx, func(r *resource) { col.dup(seg, r) })
		} else if !c.opts.NoAttributesParam {
			q.Set("attributes", "id,meta.lastModified")
		}
		_, err := c.walk(wctx, seg, q, d, func(r *resource) error {
			id, _ := r.id()
			if col != nil {
				col.add(seg, r)
			}
			s, ok, _ := r.str(Path{Attr: "meta", Sub: "lastModified"})
			t, perr := time.Parse(time.RFC3339Nano, s)
			var found error
			if prev, known := seen[seenKey(seg, id)]; !ok || perr != nil {
				found = errFound{fmt.Sprintf("%s: record %q modified (lastModified %q)", seg, id, s)}
			} else if !known || !prev.Equal(t) {
				found = errFound{fmt.Sprintf("%s: record %q modified at %s (after %s)", seg, id, s, w)}
			}
			if found == nil || col != nil {
				if perr == nil && ok {
					fresh[seenKey(seg, id)] = t
				}
			}
			if found != nil && col != nil {
				ch.Records++
				if !ch.Changed {
					ch.Changed, ch.Reason = true, found.Error()
				}
				return nil
			}
			return found
		})
		var found errFound
		switch {
		case errors.As(err, &found):
			ch.Changed, ch.Reason = true, found.what
			return ch, nil
		case isBadRequest(err):
			return noFilter()
		case err != nil:
			return ch, fmt.Errorf("scim: change check: %w", err)
		}
	}
	if removals {
		st.mu.Lock()
		totals := st.totals
		st.mu.Unlock()
		for _, seg := range []string{c.opts.UsersEndpoint, c.opts.GroupsEndpoint} {
			was, ok := totals[seg]
			if !ok || was < 0 {
				c.noTotals(seg)
				continue
			}
			now, err := c.total(ctx, d, seg)
			if err != nil {
				return ch, fmt.Errorf("scim: removal check: %w", err)
			}
			if now < 0 {
				c.noTotals(seg)
				continue
			}
			ch.RemovalsChecked = true
			if col != nil {
				// Update compares with the records it holds once the
				// changes are applied (an addition and a deletion
				// cancel out in the totals).
				if ch.totals == nil {
					ch.totals = map[string]int{}
				}
				ch.totals[seg] = now
				continue
			}
			if now != was {
				ch.Changed, ch.Reason = true, fmt.Sprintf("%s: %d records, %d at the last read (added or deleted)", seg, now, was)
				return ch, nil
			}
		}
	}
	if col != nil {
		ch.fresh, ch.since = fresh, since
		return ch, nil
	}
	// Nothing new: the window moves up to this check's start.
	c.moveWindow(since, fresh)
	return ch, nil
}

// moveWindow moves the change window up to the start of the check that
// began at since and listed fresh (records newer than the window are
// remembered, so the next check does not count them again).
func (c *Client) moveWindow(since time.Time, fresh map[string]time.Time) {
	st := &c.chg
	nw := st.start().Add(-c.overlap())
	st.mu.Lock()
	if st.since.Equal(since) {
		// fresh is every record the check listed (t > since): the
		// window's records, whether or not the window moves (within a
		// second of the last read it cannot, the Date header having
		// one-second resolution).
		if nw.After(st.since) {
			st.since = nw
		}
		st.seen = make(map[string]time.Time, len(fresh))
		for k, t := range fresh {
			if t.After(st.since) {
				st.seen[k] = t
			}
		}
	}
	st.mu.Unlock()
}

func (c *Client) noTotals(seg string) {
	c.chg.mu.Lock()
	logged := c.chg.noTotalsLogged
	c.chg.noTotalsLogged = true
	c.chg.mu.Unlock()
	if !logged {
		c.log.WithField("endpoint", seg).Warn("scim: the server sends no totalResults: deletions are seen only at the full reconcile (full_reconcile_interval)")
	}
}

// baseQuery is the configured query of an endpoint.
func (c *Client) baseQuery(seg string) url.Values {
	if seg == c.opts.GroupsEndpoint {
		return c.opts.GroupsQuery
	}
	return c.opts.UsersQuery
}

// total is the endpoint's totalResults under its configured query, -1
// when the server does not say. One request for one record's id.
func (c *Client) total(ctx context.Context, d *Discovery, seg string) (int, error) {
	q := cloneValues(c.baseQuery(seg))
	q.Set("startIndex", "1")
	q.Set("count", "1")
	if !c.opts.NoAttributesParam {
		q.Set("attributes", "id")
	}
	if c.paging(d) == "cursor" {
		q.Del("startIndex")
		q.Set("cursor", "")
	}
	var p listPage
	if err := c.get(ctx, c.endpoint(seg, q), &p); err != nil {
		return 0, err
	}
	if p.TotalResults == nil {
		return -1, nil
	}
	return int(*p.TotalResults), nil
}

// anySince asks whether any record of seg has meta.lastModified op t.
func (c *Client) anySince(ctx context.Context, d *Discovery, seg, op, t string) (bool, error) {
	q := url.Values{}
	q.Set("filter", "meta.lastModified "+op+" "+jsonString(t))
	q.Set("startIndex", "1")
	q.Set("count", "1")
	if !c.opts.NoAttributesParam {
		q.Set("attributes", "id")
	}
	if c.paging(d) == "cursor" {
		q.Del("startIndex")
		q.Set("cursor", "")
	}
	var p listPage
	if err := c.get(ctx, c.endpoint(seg, q), &p); err != nil {
		return false, err
	}
	return len(p.Resources) > 0 || (p.TotalResults != nil && *p.TotalResults > 0), nil
}

// jsonString is s as a SCIM filter string literal (a JSON string).
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func isBadRequest(err error) bool {
	var he *HTTPError
	return errors.As(err, &he) && he.Status == 400
}

// Forget drops what the last read kept for the next change check (every
// id read and the recent lastModified times: about 20 MB at 100,000
// users), for a process that will not read again (sync --once; the
// pipeline calls it through source.Forgetter). A later check then finds
// no base and asks for a full read, as after a start.
func (c *Client) Forget() {
	st := &c.chg
	st.mu.Lock()
	defer st.mu.Unlock()
	st.ready, st.seen, st.ids, st.totals, st.deltas, st.order, st.held = false, nil, nil, nil, nil, nil, nil
}
