package scim

// The id listing of the removal check (issue 18): when an endpoint's
// total moved, Update lists every id there is (attributes=id) and drops
// the held records no page names.
//
// Decisions:
//
//   - Pages as large as the server allows: count is the server's
//     maxPageSize (ServiceProviderConfig) when it states one, whatever
//     page_size says. An id-only record is ~160 bytes, so a page of the
//     largest size is still small; a server that does not say keeps
//     page_size (some refuse a count above their maximum).
//   - Pages side by side where the server pages by index: the first page
//     gives totalResults T and the page length L the server really
//     honours (a server capping count answers fewer than asked); the
//     pages at 1+L, 1+2L, ... up to T and the one just past T (which must
//     be empty: servers undercount) are asked by idWorkers at a time.
//     The byte budget (max_fetch_bytes), max_response_bytes, page_cap
//     and max_users/max_groups hold as for any walk, checked before a
//     request is made: a server claiming a huge T is refused by the cap,
//     never asked a billion pages. 429/503 answers are retried by get
//     after Retry-After as always.
//   - The result is taken only when it is provably the whole listing:
//     every page reports the same T, every page but the last holds L
//     records, none carries a nextCursor, the page past the end is
//     empty, and the distinct ids are exactly T. Anything else (records
//     added or removed while paging, a server ignoring startIndex, one
//     capping count per page, one paging by cursor alone: RFC 9865) falls
//     back to the sequential walk with all its checks, logged once.
//   - Index paging is used for this listing even where full reads page
//     by cursor, when the server lists index paging too (pagination.index
//     or no pagination object, RFC 7644's default); a configured
//     paging = "cursor" and a server that answered index paging with a
//     nextCursor keep the cursor. Unordered index paging is what the
//     checks above exist for: a shifted listing repeats or misses a
//     record, the count of distinct ids then differs from T, and the
//     sequential walk reads again.
//   - Pages are read in place (rawjson.go): only each resource's id is
//     looked at; a server that ignores attributes= sends whole records,
//     which cost bytes, not decoding.

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"sync"
)

// idWorkers bounds the id pages asked at once.
const idWorkers = 4

// idPage is what one page of an id listing held.
type idPage struct {
	ids    []string
	total  int // -1: not sent
	cursor bool
	err    error
	// refused: a 4xx that is the end of the listing past T (walkIndex).
	refused bool
}

// listIDs lists every id of seg under its configured query.
func (c *Client) listIDs(ctx context.Context, d *Discovery, seg string) (*walkStats, error) {
	q := cloneValues(c.baseQuery(seg))
	if !c.opts.NoAttributesParam {
		q.Set("attributes", "id")
	}
	size := c.opts.PageSize
	if d.MaxPageSize > 0 {
		size = d.MaxPageSize
	}
	if c.indexListing(d) {
		st, why, err := c.listIDsSideBySide(ctx, seg, q, d, size)
		if err != nil || why == "" {
			return st, err
		}
		c.log.WithField("endpoint", seg).WithField("reason", why).
			Info("scim: the id listing could not be read side by side; reading it page after page")
	}
	return c.walkSized(ctx, seg, q, d, size, func(*resource) error { return nil })
}

// indexListing reports whether the id listing may page by index.
func (c *Client) indexListing(d *Discovery) bool {
	if c.opts.Paging == "cursor" || c.serverCursors.Load() {
		return false
	}
	return d.Paging == "index" || d.IndexSupported
}

// listIDsSideBySide is the concurrent index listing. why is not empty
// when the listing cannot be taken as whole (the caller walks instead).
func (c *Client) listIDsSideBySide(ctx context.Context, seg string, q url.Values, d *Discovery, size int) (*walkStats, string, error) {
	q.Set("count", strconv.Itoa(size))
	if c.opts.SortBy != "" && d.SortSupported {
		q.Set("sortBy", c.opts.SortBy)
	}
	st := c.newWalkStats(ctx, seg, size)
	var mem pageMem
	first := c.idPageAt(ctx, seg, q, 1, &mem)
	if first.err != nil {
		return nil, "", fmt.Errorf("scim: listing %s: %w", seg, first.err)
	}
	st.pages++
	switch {
	case first.cursor:
		return nil, "the server answers with a nextCursor", nil
	case first.total < 0:
		return nil, "the server sends no totalResults", nil
	case len(first.ids) == 0 && first.total > 0:
		return nil, "the first page is empty", nil
	}
	total, step := first.total, len(first.ids)
	if st.maxRecords > 0 && total > st.maxRecords {
		return nil, "", &LimitError{Option: st.maxOption, Limit: int64(st.maxRecords),
			What: fmt.Sprintf("listing %s: the server counts %d %s", seg, total, st.what),
			Hint: "a directory larger than expected, or a server that miscounts"}
	}
	var starts []int
	if step > 0 {
		for s := 1 + step; s <= total+step; s += step {
			starts = append(starts, s) // the last one is past total
		}
	}
	if st.pages+len(starts) > c.opts.PageCap {
		return nil, "", c.pageCapError(seg)
	}
	pages := make([]idPage, len(starts))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error // the failure, not the cancellations it causes
	)
	for range min(idWorkers, len(starts)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mem pageMem
			for i := range next {
				pages[i] = c.idPageAt(ctx, seg, q, starts[i], &mem)
				if pages[i].err != nil && !pages[i].refused {
					mu.Lock()
					if firstErr == nil {
						firstErr = pages[i].err
						cancel()
					}
					mu.Unlock()
				}
			}
		}()
	}
feed:
	for i := range starts {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		return nil, "", fmt.Errorf("scim: listing %s: %w", seg, firstErr)
	}
	if err := ctx.Err(); err != nil {
		return nil, "", err
	}
	for i, p := range pages {
		if p.err == nil {
			st.pages++
		}
		last := i == len(pages)-1
		switch {
		case p.cursor:
			return nil, "the server answers with a nextCursor", nil
		case p.refused && !last:
			return nil, fmt.Sprintf("the page at startIndex=%d was refused before the end", starts[i]), nil
		case last && len(p.ids) > 0:
			return nil, fmt.Sprintf("the page past totalResults (%d) holds records", total), nil
		case !p.refused && p.total != total:
			return nil, fmt.Sprintf("totalResults moved from %d to %d while paging", total, p.total), nil
		case i < len(pages)-2 && len(p.ids) != step:
			return nil, fmt.Sprintf("the page at startIndex=%d holds %d records, not %d", starts[i], len(p.ids), step), nil
		}
	}
	st.reported, st.first = total, total
	st.order = make([]string, 0, total)
	for _, p := range append([]idPage{first}, pages...) {
		for _, id := range p.ids {
			if _, dup := st.seen[id]; dup {
				st.repeats++
				continue
			}
			st.seen[id] = struct{}{}
			st.order = append(st.order, id)
		}
	}
	if len(st.seen) != total {
		return nil, fmt.Sprintf("%d distinct ids where the server counts %d (%d repeated)", len(st.seen), total, st.repeats), nil
	}
	return st, "", nil
}

// idPageAt asks for the page at start and keeps its ids.
func (c *Client) idPageAt(ctx context.Context, seg string, q url.Values, start int, mem *pageMem) idPage {
	q = cloneValues(q)
	q.Set("startIndex", strconv.Itoa(start))
	u := c.endpoint(seg, q)
	p := listPage{mem: *mem}
	err := c.get(ctx, u, &p)
	*mem = p.mem
	if err != nil {
		return idPage{err: err, refused: start > 1 && endRefusal(err)}
	}
	out := idPage{total: -1, cursor: p.NextCursor != nil && *p.NextCursor != "", ids: make([]string, 0, len(p.Resources))}
	if p.TotalResults != nil {
		out.total = int(*p.TotalResults)
	}
	for i, top := range p.Resources {
		if top == nil {
			return idPage{err: fmt.Errorf("GET %s: resource %d is null", shownURL(u), i)}
		}
		id, err := (&resource{top: top}).id()
		if err != nil {
			return idPage{err: fmt.Errorf("GET %s: resource %d: %v", shownURL(u), i, err)}
		}
		out.ids = append(out.ids, id)
	}
	return out
}
