package scim

import (
	"context"
	"sync"
)

// interner makes each distinct id one string for the length of a full
// read (issue 18, full read memory). A user's id is read as the key of
// its listing's seen set, as the record's ID, and once more as a member
// of each of its groups: at 100,000 users in about 3.5 groups each, five
// and a half copies of every id. Through one interner, shared by the
// users' and the groups' walks, they are one. It is dropped with the
// read: nothing of it is kept for the next poll.
type interner struct {
	mu sync.Mutex
	m  map[string]string
}

func newInterner(n int) *interner { return &interner{m: make(map[string]string, n)} }

// bytes is the string b spells, the same string for the same bytes; b
// is not kept.
func (in *interner) bytes(b []byte) string {
	in.mu.Lock()
	defer in.mu.Unlock()
	if s, ok := in.m[string(b)]; ok {
		return s
	}
	s := string(b)
	in.m[s] = s
	return s
}

// str is s, or the string equal to s seen before.
func (in *interner) str(s string) string {
	in.mu.Lock()
	defer in.mu.Unlock()
	if t, ok := in.m[s]; ok {
		return t
	}
	in.m[s] = s
	return s
}

// internKey carries a full read's interner in its context.
type internKey struct{}

func withInterner(ctx context.Context, in *interner) context.Context {
	return context.WithValue(ctx, internKey{}, in)
}
