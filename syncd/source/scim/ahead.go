package scim

// A listing's next page asked for while this one is decoded (issue 18).
//
// Decisions:
//
//   - A walk (paging.go) asks for page N+1 as soon as page N's body is
//     in, before page N is validated, decoded and applied: the server
//     builds page N+1 while syncd reads page N, instead of each waiting
//     for the other. Where page N+1 is comes from a scan of page N's
//     envelope (its Resources counted for index paging, its nextCursor
//     for cursor paging), made with the walker of rawjson.go, not from a
//     decode.
//   - The page asked ahead is a guess, never a decision: the walk still
//     decides, from the decoded page and after applying it, exactly as
//     before, whether there is a next page and where; it takes the page
//     asked ahead only when that is the very request it would make now
//     (same URL), else drops it (cancelled, its result unread) and asks
//     as before. So the end of a listing, the page cap, repeats, count
//     caps, totalResults checks, the switch to cursor paging, errors and
//     429 retries behave as without it; a page past the end, or after an
//     error, is asked for but never applied. A scan of a body that is not
//     valid JSON may guess anything: the decode then fails the walk and
//     the guess is dropped.
//   - At most one request ahead per walk, and only when the page cap
//     allows one more page: the identity provider sees at most one more
//     request of a listing in flight than before, and one more request
//     per listing in all where the walk stops at a page it could not
//     foresee (a page of repeats, an error, a cap).
//   - Memory: two page buffers per walk (pageMem), used in turn: the
//     page read and the page on its way.

import (
	"context"
	"fmt"
)

// rawPage is a listing page's body as read, not yet decoded: what get
// fills for a walk.
type rawPage struct {
	body []byte
	// shown is the URL as errors show it, status the HTTP status.
	shown  string
	status int
	mem    *pageMem
}

func (r *rawPage) buffer() *[]byte { return &r.mem.buf }

// decodeInto validates and reads the body into p, which takes the
// page's memory; the error is the one get gives for a body it cannot
// decode.
func (r *rawPage) decodeInto(p *listPage) error {
	*p = listPage{mem: *r.mem}
	err := decode(r.body, p)
	*r.mem = p.mem
	if err != nil {
		return fmt.Errorf("GET %s: HTTP %d: body is not SCIM JSON: %v", r.shown, r.status, err)
	}
	return nil
}

// envelope is what a scan of a page's top-level keys says of where the
// next page is: the nextCursor, and when count is set how many elements
// Resources has (index paging; a second pass over them). ok is false
// when the body is not an object. The body is not validated: this is a
// guess (see the decisions above).
func envelope(body []byte, count bool) (n int, next string, ok bool) {
	top, ok := parseObject(nil, body)
	if !ok {
		return 0, "", false
	}
	if v, has := top.lastFold("nextCursor"); has {
		next, _ = unquote(v)
	}
	if v, has := top.lastFold("Resources"); has && count {
		eachElement(v, func([]byte) { n++ })
	}
	return n, next, true
}

// pager reads a walk's pages, at most one asked ahead.
type pager struct {
	mem  [2]pageMem
	cur  int // the slot of mem the walk's page is read into
	next *ahead
}

// ahead is a page asked for before the walk knew it needed it.
type ahead struct {
	u      string
	slot   int
	page   rawPage
	err    error
	done   chan struct{}
	cancel context.CancelFunc
}

// fetch returns the page at u: the one asked ahead when it was asked
// for u, else one asked now (a page asked ahead for another URL is
// dropped).
func (pg *pager) fetch(ctx context.Context, c *Client, u string) (*rawPage, error) {
	if a := pg.next; a != nil {
		pg.next = nil
		if a.u == u {
			<-a.done
			a.cancel()
			pg.cur = a.slot
			return &a.page, a.err
		}
		a.drop()
	}
	rp := &rawPage{mem: &pg.mem[pg.cur]}
	return rp, c.get(ctx, u, rp)
}

// askAhead asks for u while the walk reads the current page.
func (pg *pager) askAhead(ctx context.Context, c *Client, u string) {
	pg.stop()
	ctx, cancel := context.WithCancel(ctx)
	a := &ahead{u: u, slot: 1 - pg.cur, done: make(chan struct{}), cancel: cancel}
	a.page.mem = &pg.mem[a.slot]
	pg.next = a
	go func() {
		defer close(a.done)
		a.err = c.get(ctx, u, &a.page)
	}()
}

// stop drops the page asked ahead, if any, and waits until its request
// is over (its buffer is the walk's again).
func (pg *pager) stop() {
	if pg.next != nil {
		pg.next.drop()
		pg.next = nil
	}
}

func (a *ahead) drop() {
	a.cancel()
	<-a.done
}
