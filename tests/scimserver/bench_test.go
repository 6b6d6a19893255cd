package scimserver

import (
	"testing"
)

// BenchmarkFullWalk100k walks 100k users and 10k groups by cursor, the
// benchmark-scale directory, and reports the server's share of a sync.
func BenchmarkFullWalk100k(b *testing.B) {
	s := New(Options{Cursor: true})
	if err := s.Load(Generate(100000, 10000, 1)); err != nil {
		b.Fatal(err)
	}
	base, stop := s.Start()
	defer stop()
	t := &testing.T{}
	for b.Loop() {
		users, _ := walkCursor(t, base, "/Users", 1000, 200)
		groups, _ := walkCursor(t, base, "/Groups", 1000, 20)
		if len(users) != 100000 || len(groups) != 10000 {
			b.Fatalf("walked %d users, %d groups", len(users), len(groups))
		}
	}
}

func BenchmarkGenerate100k(b *testing.B) {
	for b.Loop() {
		Generate(100000, 10000, 1)
	}
}
