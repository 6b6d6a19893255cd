package scim

// Finding a few deletions without listing every id (issue 18).
//
// When the removal check finds an endpoint's count down by d (1..
// maxProbeDeletions) and nothing else is unexplained, Update looks for
// the d records where they were instead of listing every id (ids.go):
// at 100,000 users the whole id listing is 100 pages of 1,000 (2 s
// against the test server), on a real server with pages of 100 at
// 100 ms a page minutes, while an offboarded user must lose access
// promptly.
//
// Decisions:
//
//   - The client keeps the order in which the server listed the
//     endpoint's ids last (changeState.order): the full read's order,
//     or the whole id listing's when it was read side by side (it is
//     then provably whole). Deletions found here leave it; records the
//     change check finds new are assumed appended at the end (the order
//     of servers that list by insertion, the common default without
//     sortBy). Nothing else is assumed: every assumption is checked by
//     the probes below, and the order is only ever a hint where to
//     look. A server that places new records elsewhere (sorted by id or
//     name), or lists by cursor in another order than by index, shows
//     it at the next deletion's probes, which then fall back to the
//     whole listing, and that listing's order is kept instead. Placing
//     additions by probing at the poll that sees them was the other
//     choice: it costs every addition poll requests for an order only a
//     later deletion may need.
//   - Deleting d records from a list shifts every later record: the
//     record now at 0-based position k was at k+s(k) in the remembered
//     order, s non-decreasing from 0 to d. Single positions are asked
//     (startIndex=k+1, count=1, attributes=id, the configured query and
//     sortBy, as the id listing asks them), idWorkers side by side per
//     round, spread over each interval where s still rises (a k-ary
//     search: about log5 N rounds); an interval of at most probeRange
//     positions is asked whole in one request instead. Where s rises by
//     r between neighbours, the r records between them in the
//     remembered order are the candidates. The first round also asks
//     the last position, where a record the change check never saw
//     would most likely be.
//   - Every answer must fit: the same totalResults as the removal check
//     (no change while probing), an id found in the remembered order
//     within the shift its neighbours allow, shifts never falling. A
//     server that ignores startIndex, pages another order, caps count
//     at 0, or changed underneath answers something that does not fit.
//   - A candidate is dropped only once confirmed gone, one request each
//     (GET /Users/{id} answers 404, or under a configured filter, `id
//     eq` with it finds nothing), and only when exactly d are. That is
//     what makes the result right, not the order: the held records
//     (every record the server has, as the change check adds new ones)
//     less d records confirmed gone is exactly the server's count.
//   - Anything that does not fit (an answer, a candidate that still
//     exists, more than maxProbeRequests requests, a server miscounting
//     by a constant, no index paging, a remembered order that is not
//     the held records') falls back to the whole id listing in the same
//     poll, logged once with the reason (later ones at debug): never a
//     deletion left for a later poll because the shortcut failed.

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"sync"
)

const (
	// maxProbeDeletions: a count down by more is read by the id listing.
	maxProbeDeletions = 8
	// probeRange: an interval this short is asked in one request.
	probeRange = 64
	// maxProbeRequests bounds one search: a deletion in 100,000 costs
	// about 25, eight far apart (each interval then gets a binary
	// search of its own) about 100.
	maxProbeRequests = 160
)

// probeMiss is why the search could not find the deletions (the caller
// reads the whole id listing).
type probeMiss string

// obs is one observed position: the record at 0-based position k of the
// server's listing is at j in the remembered order (shift j-k).
type obs struct{ k, j int }

// findRemoved looks for the held-now records of seg that are gone, given
// the remembered order (len n), the server's count now (n-d), and
// returns them, each confirmed gone. A non-empty miss means the search
// could not tell (read the listing); err is a failure of the poll.
func (c *Client) findRemoved(ctx context.Context, d *Discovery, seg string, order []string, now int) (gone []string, miss probeMiss, err error) {
	n := len(order)
	del := n - now
	switch {
	case !c.indexListing(d):
		return nil, "the server does not page by index", nil
	case c.baseQuery(seg).Get("filter") != "" && !d.FilterSupported:
		return nil, "a configured filter and a server that does not filter: a candidate cannot be confirmed gone", nil
	case del < 1 || del > maxProbeDeletions:
		return nil, probeMiss(fmt.Sprintf("%d records held, %d at the server (more than %d deletions, or additions the change check did not see)", n, now, maxProbeDeletions)), nil
	}
	q := cloneValues(c.baseQuery(seg))
	if !c.opts.NoAttributesParam {
		q.Set("attributes", "id")
	}
	if c.opts.SortBy != "" && d.SortSupported {
		q.Set("sortBy", c.opts.SortBy)
	}
	rng := probeRange
	if d.MaxPageSize > 0 {
		rng = min(rng, d.MaxPageSize)
	}
	// seen: observed positions, sorted by k, with the virtual ends
	// (k=-1, j=-1) and (k=now, j=n).
	seen := []obs{{-1, -1}, {now, n}}
	requests := 0
	for round := 0; ; round++ {
		asks := nextAsks(seen, idWorkers, rng)
		if round == 0 && now > 0 && !slices.ContainsFunc(asks, func(a ask) bool { return a.k+a.n >= now }) {
			asks = append(asks, ask{k: now - 1, n: 1})
		}
		if len(asks) == 0 {
			break
		}
		if requests += len(asks); requests > maxProbeRequests {
			return nil, probeMiss(fmt.Sprintf("more than %d requests", maxProbeRequests)), nil
		}
		answers, miss, err := c.askPositions(ctx, seg, q, asks, now)
		if err != nil || miss != "" {
			return nil, miss, err
		}
		for i, a := range asks {
			for off, id := range answers[i] {
				k := a.k + off
				if k >= now {
					return nil, probeMiss(fmt.Sprintf("startIndex=%d listed more records than the server counts (%d)", a.k+1, now)), nil
				}
				// The neighbours observed so far bound the shift.
				at := sort.Search(len(seen), func(x int) bool { return seen[x].k >= k })
				if seen[at].k == k {
					if order[seen[at].j] != id {
						return nil, probeMiss(fmt.Sprintf("position %d answered %q, then %q", k+1, order[seen[at].j], id)), nil
					}
					continue
				}
				lo, hi := seen[at-1].j-seen[at-1].k, seen[at].j-seen[at].k
				j := -1
				for s := lo; s <= hi; s++ {
					if k+s < n && order[k+s] == id {
						j = k + s
						break
					}
				}
				if j < 0 {
					return nil, probeMiss(fmt.Sprintf("startIndex=%d answered %q, which is not where %d deletions from the remembered order can put a record", k+1, id, del)), nil
				}
				seen = slices.Insert(seen, at, obs{k, j})
			}
		}
	}
	var cand []string
	for i := 1; i < len(seen); i++ {
		a, b := seen[i-1], seen[i]
		switch rise := (b.j - b.k) - (a.j - a.k); {
		case rise < 0:
			return nil, "the shifts fall: the remembered order is not the server's", nil
		case rise > 0:
			// Neighbours (no open interval is left): the records
			// between them in the remembered order are not listed.
			cand = append(cand, order[a.j+1:b.j]...)
		}
	}
	if len(cand) != del {
		return nil, probeMiss(fmt.Sprintf("%d candidates for %d deletions", len(cand), del)), nil
	}
	still, err := c.anyExists(ctx, d, seg, cand)
	switch {
	case err != nil:
		return nil, "", err
	case still != "":
		return nil, probeMiss(fmt.Sprintf("candidate %q still exists", still)), nil
	}
	return cand, "", nil
}

// ask is a request for n positions from 0-based k.
type ask struct{ k, n int }

// nextAsks are the next round's requests: for every interval between
// observed neighbours where the shift rises and positions remain
// unobserved, the whole interval when it is at most rng long, else
// probes spread over it, width in all.
func nextAsks(seen []obs, width, rng int) []ask {
	type gap struct{ lo, hi int } // unobserved positions lo..hi-1
	var open []gap
	for i := 1; i < len(seen); i++ {
		a, b := seen[i-1], seen[i]
		if b.j-b.k > a.j-a.k && b.k > a.k+1 {
			open = append(open, gap{a.k + 1, b.k})
		}
	}
	var asks []ask
	per := max(1, width/max(1, len(open)))
	for _, g := range open {
		if len(asks) >= width {
			break
		}
		size := g.hi - g.lo
		if size <= rng {
			asks = append(asks, ask{g.lo, size})
			continue
		}
		p := min(per, width-len(asks))
		for i := 1; i <= p; i++ {
			asks = append(asks, ask{g.lo + size*i/(p+1), 1})
		}
	}
	return asks
}

// askPositions asks every ask side by side (idWorkers at a time) and returns
// each one's ids. Every answer must carry the total now.
func (c *Client) askPositions(ctx context.Context, seg string, q url.Values, asks []ask, now int) ([][]string, probeMiss, error) {
	out := make([][]string, len(asks))
	pages := make([]idPage, len(asks))
	sideBySide(len(asks), func(i int, mem *pageMem) {
		q := cloneValues(q)
		q.Set("count", strconv.Itoa(asks[i].n))
		pages[i] = c.idPageAt(ctx, seg, q, asks[i].k+1, mem)
	})
	if err := ctx.Err(); err != nil {
		return nil, "", err
	}
	for i, p := range pages {
		switch {
		case p.err != nil:
			var he *HTTPError
			if errors.As(p.err, &he) && he.Status >= 400 && he.Status < 500 && he.Status != 401 && he.Status != 403 && he.Status != 429 {
				return nil, probeMiss(fmt.Sprintf("startIndex=%d was refused: %v", asks[i].k+1, p.err)), nil
			}
			return nil, "", fmt.Errorf("scim: looking for deletions in %s: %w", seg, p.err)
		case p.total != now:
			return nil, probeMiss(fmt.Sprintf("totalResults %d where the removal check counted %d (changed while probing, or not sent)", p.total, now)), nil
		case len(p.ids) == 0:
			return nil, probeMiss(fmt.Sprintf("startIndex=%d (of %d) answered no record", asks[i].k+1, now)), nil
		case len(p.ids) > asks[i].n:
			return nil, probeMiss(fmt.Sprintf("startIndex=%d count=%d answered %d records", asks[i].k+1, asks[i].n, len(p.ids))), nil
		}
		out[i] = p.ids
	}
	return out, "", nil
}

// anyExists confirms ids gone, idWorkers side by side: the first one
// that still exists, or "".
func (c *Client) anyExists(ctx context.Context, d *Discovery, seg string, ids []string) (string, error) {
	found := make([]bool, len(ids))
	errs := make([]error, len(ids))
	sideBySide(len(ids), func(i int, _ *pageMem) { found[i], errs[i] = c.exists(ctx, d, seg, ids[i]) })
	for i, id := range ids {
		if errs[i] != nil {
			return "", fmt.Errorf("scim: confirming that %s %q is gone: %w", seg, id, errs[i])
		}
		if found[i] {
			return id, nil
		}
	}
	return "", nil
}

// sideBySide calls f for 0..n-1, idWorkers at a time, each worker with
// its own page memory.
func sideBySide(n int, f func(i int, mem *pageMem)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(idWorkers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mem pageMem
			for i := range next {
				f(i, &mem)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// idsOf is the ids of recs, in their order.
func idsOf[T any](recs []T, id func(*T) string) []string {
	out := make([]string, len(recs))
	for i := range recs {
		out[i] = id(&recs[i])
	}
	return out
}

// without is order less the ids in gone (a new slice).
func without(order []string, gone map[string]struct{}) []string {
	out := make([]string, 0, len(order))
	for _, id := range order {
		if _, ok := gone[id]; !ok {
			out = append(out, id)
		}
	}
	return out
}

// probeMissed says why deletions are read by the whole id listing: the
// first time at info level, later at debug (a server that cannot be
// probed would say it at every deletion).
func (c *Client) probeMissed(seg string, why probeMiss) {
	c.mu.Lock()
	logged := c.probeLogged
	c.probeLogged = true
	c.mu.Unlock()
	l := c.log.WithField("endpoint", seg).WithField("reason", string(why))
	if !logged {
		l.Info("scim: deletions not found by probing single positions; listing every id instead")
		return
	}
	l.Debug("scim: deletions not found by probing single positions; listing every id instead")
}
