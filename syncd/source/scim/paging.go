package scim

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
)

// listPage is one page of a SCIM ListResponse (RFC 7644 section 3.4.2,
// RFC 9865 for nextCursor). Its keys match case-insensitively, which
// covers servers that send "resources" (UnmarshalJSON, rawjson.go).
type listPage struct {
	// TotalResults may come as a string of digits.
	TotalResults *flexInt
	NextCursor   *string
	// Resources are read one level deep, in place; values stay raw
	// until a configured path asks for them.
	Resources []object
	// mem is the page's memory, kept by a walk from page to page.
	mem pageMem
}

// walk lists segment page by page and calls fn once per distinct id, in
// the order the server sent them. Any failed page fails the walk.
//
// Index paging stops at the first empty page, or at a page holding only
// ids already seen (servers that answer a startIndex past the end with
// page 1 again, or that stop advancing). Reaching the reported
// totalResults is not trusted alone: one more page is read to confirm
// the end, because servers undercount. Cursor paging stops when
// nextCursor is absent, the only end signal RFC 9865 gives. Both are
// bounded by PageCap. The next page is asked for while a page is read,
// and taken only where these rules go on to it (ahead.go).
func (c *Client) walk(ctx context.Context, segment string, q url.Values, d *Discovery, fn func(r *resource) error) (*walkStats, error) {
	size := c.opts.PageSize
	if d.MaxPageSize > 0 && size > d.MaxPageSize {
		size = d.MaxPageSize
	}
	return c.walkSized(ctx, segment, q, d, size, fn)
}

// walkSized is walk with size records asked per page.
func (c *Client) walkSized(ctx context.Context, segment string, q url.Values, d *Discovery, size int, fn func(r *resource) error) (*walkStats, error) {
	q = cloneValues(q)
	q.Set("count", strconv.Itoa(size))
	cursor := c.paging(d) == "cursor"
	// Index paging over an unordered set repeats and skips records;
	// sorting pins the order. Cursors (RFC 9865) are stable without it,
	// and sorting a large set on every page is costly for the server.
	if c.opts.SortBy != "" && d.SortSupported && !cursor {
		q.Set("sortBy", c.opts.SortBy)
	}
	st := c.newWalkStats(ctx, segment, size)
	defer st.pg.stop()
	if cursor {
		return st, c.walkCursor(ctx, segment, q, st, fn)
	}
	return st, c.walkIndex(ctx, segment, q, st, fn)
}

// newWalkStats starts a listing of segment, size records a page.
func (c *Client) newWalkStats(ctx context.Context, segment string, size int) *walkStats {
	st := &walkStats{seen: make(map[string]struct{}), reported: -1, first: -1, segment: segment, size: size}
	st.maxRecords, st.maxOption, st.what = c.countCap(segment)
	st.onDup, _ = ctx.Value(dupKey{}).(func(r *resource))
	st.onTotal, _ = ctx.Value(totalKey{}).(func(int))
	st.res.in, _ = ctx.Value(internKey{}).(*interner)
	return st
}

// paging is how listings are paged: as discovered, or by cursor once an
// index-paged answer carried a nextCursor (paging = auto only).
func (c *Client) paging(d *Discovery) string {
	if d.Paging != "cursor" && c.opts.Paging == "auto" && c.serverCursors.Load() {
		return "cursor"
	}
	return d.Paging
}

type walkStats struct {
	seen map[string]struct{}
	// order is the ids in the server's order, set only by a side-by-side
	// id listing that proved whole (ids.go; removed.go keeps it).
	order    []string
	pages    int
	repeats  int // resources skipped as already seen
	reported int // last totalResults, -1 if never sent
	first    int // first totalResults, -1 if never sent
	// sawCursor: an index-paged answer carried a nextCursor.
	sawCursor bool
	// segment is the endpoint listed, size the count asked per page.
	segment string
	size    int
	// maxRecords caps the distinct records (0: no cap); maxOption is the
	// option that sets it, what the records' kind.
	maxRecords      int
	maxOption, what string
	// overCount: a page held more records than count asked (warned once).
	overCount bool
	// onDup, when set, sees each record whose id was already seen (the
	// first one wins; see dupHook).
	onDup func(r *resource)
	// onTotal, when set, sees the first totalResults (before the first
	// record): a size hint (sizeHint).
	onTotal func(n int)
	// pg reads the pages, one asked ahead (ahead.go); res holds each
	// record in turn (rawjson.go).
	pg  pager
	res resource
}

// dupKey carries a walk's onDup in its context.
type dupKey struct{}

// totalKey carries a walk's onTotal in its context.
type totalKey struct{}

// maxPresize bounds the records a listing's first totalResults may make
// room for at once: a server claiming millions costs at most this many
// empty records (about 40 MB of users), then the slice grows as read.
const maxPresize = 1 << 18

// sizeHint makes the walks under ctx tell f how many records to make
// room for: the first totalResults, at most maxPresize and limit.
func sizeHint(ctx context.Context, limit int, f func(n int)) context.Context {
	return context.WithValue(ctx, totalKey{}, func(n int) {
		if n > 0 {
			f(min(n, maxPresize, max(limit, 1)))
		}
	})
}

// withDupHook makes the walks under ctx show repeated records to f.
func withDupHook(ctx context.Context, f func(r *resource)) context.Context {
	return context.WithValue(ctx, dupKey{}, f)
}

// take handles one page's resources; it returns how many were new.
func (st *walkStats) take(u string, p *listPage, fn func(r *resource) error) (int, error) {
	st.total(p)
	fresh := 0
	for i, top := range p.Resources {
		if top == nil {
			return fresh, fmt.Errorf("GET %s: resource %d is null", u, i)
		}
		// One resource is reused record after record: fn and onDup
		// must not keep it.
		r := &st.res
		r.reset(top)
		id, err := r.id()
		if err != nil {
			return fresh, fmt.Errorf("GET %s: resource %d: %v", u, i, err)
		}
		if _, dup := st.seen[id]; dup {
			st.repeats++
			if st.onDup != nil {
				st.onDup(r)
			}
			continue
		}
		st.seen[id] = struct{}{}
		fresh++
		if st.maxRecords > 0 && len(st.seen) > st.maxRecords {
			return fresh, &LimitError{Option: st.maxOption, Limit: int64(st.maxRecords),
				What: fmt.Sprintf("listing %s: more than %d %s", st.segment, st.maxRecords, st.what),
				Hint: "an endless listing (a cursor that never ends), or a directory larger than expected"}
		}
		if err := fn(r); err != nil {
			return fresh, err
		}
	}
	return fresh, nil
}

// total notes the page's totalResults.
func (st *walkStats) total(p *listPage) {
	if p.TotalResults != nil {
		st.reported = int(*p.TotalResults)
		if st.first < 0 {
			st.first = st.reported
			if st.onTotal != nil {
				st.onTotal(st.first)
			}
		}
	}
}

// endRefusal reports whether err, for a page past the reported end, is
// the end of the listing: a 4xx (400 invalidValue and the like) that is
// not about the credentials or the rate.
func endRefusal(err error) bool {
	var he *HTTPError
	return errors.As(err, &he) && he.Status >= 400 && he.Status < 500 && he.Status != 401 && he.Status != 403 && he.Status != 429
}

func (c *Client) walkIndex(ctx context.Context, segment string, q url.Values, st *walkStats, fn func(r *resource) error) error {
	start := 1
	for {
		if st.pages >= c.opts.PageCap {
			return c.pageCapError(segment)
		}
		q.Set("startIndex", strconv.Itoa(start))
		u := c.endpoint(segment, q)
		raw, err := st.pg.fetch(ctx, c, u)
		if err != nil {
			// Past the reported end, a refusal (400 invalidValue and
			// the like) is the end, not a failure.
			if st.reported >= 0 && start > st.reported && endRefusal(err) {
				break
			}
			return fmt.Errorf("scim: listing %s: %w", segment, err)
		}
		// The next page is asked for while this one is read, where
		// this one says it is (ahead.go); used only if the walk goes on
		// there.
		if n, next, ok := envelope(raw.body, true); ok && n > 0 && next == "" && st.pages+1 < c.opts.PageCap {
			q.Set("startIndex", strconv.Itoa(start+n))
			st.pg.askAhead(ctx, c, c.endpoint(segment, q))
		}
		var p listPage
		if err := raw.decodeInto(&p); err != nil {
			return fmt.Errorf("scim: listing %s: %w", segment, err)
		}
		st.pages++
		if p.NextCursor != nil && *p.NextCursor != "" {
			// RFC 9865: a server may page by cursor only, answering a
			// request without a cursor with a nextCursor, and need not
			// say so in ServiceProviderConfig. Such a server ignores
			// startIndex: index paging would see page 1 again and again.
			st.sawCursor = true
			if c.opts.Paging == "auto" {
				if c.serverCursors.CompareAndSwap(false, true) {
					c.log.WithField("endpoint", segment).Info("scim: the server answers index paging with a nextCursor (RFC 9865): paging by cursor")
				}
				q.Del("startIndex")
				q.Del("sortBy")
				return c.walkCursor(ctx, segment, q, st, fn)
			}
		}
		if len(p.Resources) == 0 {
			st.total(&p)
			break
		}
		c.noteOverCount(st, &p)
		fresh, err := st.take(u, &p, fn)
		if err != nil {
			return err
		}
		if fresh == 0 {
			// Only records already seen: the end, if we are past the
			// reported total (servers that wrap around to page 1). Before
			// it, the server is ignoring startIndex (AWS answers every
			// index request with page 1): stopping there would publish
			// a fraction of the directory. A server that sent a
			// nextCursor pages by cursor, whatever totalResults says.
			if st.sawCursor {
				return fmt.Errorf("scim: listing %s: the page at startIndex=%d repeats earlier records and the server sends nextCursor: it ignores startIndex and pages by cursor (RFC 9865); set paging = \"cursor\" or \"auto\"", segment, start)
			}
			if st.reported >= 0 && start <= st.reported {
				return fmt.Errorf("scim: listing %s: the page at startIndex=%d repeats earlier records although totalResults is %d: the server ignores startIndex; set paging = \"cursor\"", segment, start, st.reported)
			}
			break
		}
		start += len(p.Resources)
	}
	// A page asked ahead past the end is never read.
	st.pg.stop()
	if st.reported >= 0 && len(st.seen) < st.reported && st.repeats > 0 {
		// Records repeated and others are missing: the listing shifted
		// under us (unordered paging, changes during the walk). The
		// missing ones would be removed from the cluster.
		return fmt.Errorf("scim: listing %s: %d distinct records of %d reported, %d repeated: the listing shifted during paging; not publishing a partial directory (a server that pages an unordered set needs sort_by = \"id\"; cursor paging does not shift)", segment, len(st.seen), st.reported, st.repeats)
	}
	if st.reported >= 0 && len(st.seen) < st.reported && st.repeats == 0 {
		// Fewer records than reported and none repeated: either the
		// server overcounts, or it reads startIndex as 0-based (WSO2 IS)
		// and record 0 was on no page. RFC 7644 makes a startIndex below
		// 1 mean 1, so asking for 0 costs a conformant server one page
		// already seen, and gives an off-by-one server its first record.
		q.Set("startIndex", "0")
		u := c.endpoint(segment, q)
		var p listPage
		if err := c.get(ctx, u, &p); err == nil {
			st.pages++
			fresh, err := st.take(u, &p, fn)
			if err != nil {
				return err
			}
			if fresh > 0 {
				c.log.WithField("endpoint", segment).WithField("records", fresh).
					Warn("scim: startIndex=0 listed records no page from startIndex=1 had: the server counts startIndex from 0 (off by one)")
			}
		}
	}
	if st.reported >= 0 && len(st.seen) != st.reported {
		c.log.WithField("endpoint", segment).WithField("totalResults", st.reported).WithField("distinct", len(st.seen)).
			Warn("scim: totalResults differs from the records listed (records changed during paging, or the server miscounts)")
	}
	return nil
}

func (c *Client) walkCursor(ctx context.Context, segment string, q url.Values, st *walkStats, fn func(r *resource) error) error {
	cursor := ""
	used := make(map[string]bool)
	stale := 0 // pages in a row with no new record
	for {
		if st.pages >= c.opts.PageCap {
			return c.pageCapError(segment)
		}
		q.Set("cursor", cursor)
		u := c.endpoint(segment, q)
		raw, err := st.pg.fetch(ctx, c, u)
		if err != nil {
			return fmt.Errorf("scim: listing %s: %w", segment, err)
		}
		// The next page is asked for while this one is read (ahead.go);
		// used only if the walk goes on to that cursor.
		if _, next, ok := envelope(raw.body, false); ok && next != "" && !used[next] && st.pages+1 < c.opts.PageCap {
			q.Set("cursor", next)
			st.pg.askAhead(ctx, c, c.endpoint(segment, q))
		}
		var p listPage
		if err := raw.decodeInto(&p); err != nil {
			return fmt.Errorf("scim: listing %s: %w", segment, err)
		}
		st.pages++
		c.noteOverCount(st, &p)
		fresh, err := st.take(u, &p, fn)
		if err != nil {
			return err
		}
		if p.NextCursor == nil || *p.NextCursor == "" {
			return nil
		}
		// New cursors for pages that bring nothing new: a page repeated
		// forever (or empty pages forever) would run to page_cap.
		if fresh == 0 {
			stale++
			if stale >= staleCursorPages {
				return fmt.Errorf("scim: listing %s: %d pages in a row brought no record not seen before, each with a new nextCursor: the server repeats a page (or pages empty) without end; not paging further", segment, stale)
			}
		} else {
			stale = 0
		}
		cursor = *p.NextCursor
		if used[cursor] {
			return fmt.Errorf("scim: listing %s: server returned cursor %q twice: paging would loop", segment, clip(cursor))
		}
		used[cursor] = true
	}
}

func cloneValues(v url.Values) url.Values {
	c := make(url.Values, len(v)+4)
	for k, vs := range v {
		c[k] = append([]string(nil), vs...)
	}
	return c
}

// noteOverCount warns, once per listing, when a page holds more records
// than count asked: the server ignores count, and only the caps
// (max_response_bytes, max_users/max_groups) bound its pages.
func (c *Client) noteOverCount(st *walkStats, p *listPage) {
	if st.overCount || st.size <= 0 || len(p.Resources) <= st.size {
		return
	}
	st.overCount = true
	c.log.WithField("endpoint", st.segment).WithField("count", st.size).WithField("records", len(p.Resources)).
		Warn("scim: the server sent more records on a page than count asked: it ignores count; max_response_bytes bounds each page")
}
