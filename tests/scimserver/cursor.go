package scimserver

import (
	"sync"
	"time"
)

// cursorStore remembers issued RFC 9865 cursors. A cursor names the last
// item of the page it follows (keyset paging), so deletions between pages
// neither skip nor repeat items, and the query it belongs to, so a cursor
// cannot be replayed against another filter or sort.
type cursorStore struct {
	mu sync.Mutex
	m  map[string]*cursorState
}

type cursorState struct {
	query   string // canonical filter+sort+resource type
	after   *sortKey
	offset  int // used when the listing order is unstable (no key)
	expires time.Time
}

// maxCursors bounds memory when clients open many walks and abandon them.
const maxCursors = 100000

func (c *cursorStore) init() { c.m = map[string]*cursorState{} }

// put stores st under id and returns id.
func (c *cursorStore) put(id string, st *cursorState) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= maxCursors {
		now := time.Now()
		for k, v := range c.m {
			if now.After(v.expires) {
				delete(c.m, k)
			}
		}
		if len(c.m) >= maxCursors {
			clear(c.m)
		}
	}
	c.m[id] = st
	return id
}

func (c *cursorStore) get(id string) *cursorState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[id]
}

// expireAll makes every issued cursor expired (expiredCursor from now on).
func (c *cursorStore) expireAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, v := range c.m {
		v.expires = time.Time{}
	}
}

func (c *cursorStore) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.m)
}

// ExpireCursors makes every cursor issued so far answer expiredCursor.
func (s *Server) ExpireCursors() { s.cursors.expireAll() }
