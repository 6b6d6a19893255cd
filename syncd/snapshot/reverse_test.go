package snapshot

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A reverse delta rebuilds the previous snapshot from the next whatever
// the change of size (grown, shrunk to a page boundary or within a page),
// from the pages the delta wrote alone; a damaged one, or one whose base
// changed, is refused with the entry's name.
func TestReverseDeltaRebuilds(t *testing.T) {
	const ps = 4096
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name         string
		oldSz, newSz int
	}{
		{"same size", 40 * ps, 40 * ps},
		{"grown", 40 * ps, 47 * ps},
		{"shrunk", 40 * ps, 33 * ps},
		{"shrunk within a page", 40*ps - 100, 33*ps + 1000},
		{"grown from within a page", 33*ps + 1000, 40*ps - 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			live := filepath.Join(dir, "cache.db")
			old := make([]byte, tc.oldSz)
			for i := range old {
				old[i] = byte(rng.IntN(256))
			}
			next := make([]byte, tc.newSz)
			copy(next, old)
			// The delta: a few pages rewritten, and every page the old
			// file did not have or had only in part.
			var pages []int64
			for _, p := range []int{0, 7, 20, 31} {
				if p*ps < tc.newSz {
					next[p*ps+5] ^= 0xff
					pages = append(pages, int64(p))
				}
			}
			for p := tc.oldSz / ps; p*ps < tc.newSz; p++ {
				for i := p * ps; i < min((p+1)*ps, tc.newSz); i++ {
					next[i] = byte(rng.IntN(256))
				}
				pages = append(pages, int64(p))
			}
			sum := func(b []byte) string { h := sha256.Sum256(b); return hex.EncodeToString(h[:]) }
			os.WriteFile(live, old, 0o644)
			os.MkdirAll(HistoryDir(live), 0o755)
			if err := os.Link(live, HistoryPath(live, 5)); err != nil {
				t.Fatal(err)
			}
			ok, err := writeReverse(live, &Reverse{Serial: 5, SHA256: sum(old), Next: sum(next), Pages: pages, PageSize: ps}, 6, int64(tc.newSz))
			if err != nil || !ok {
				t.Fatalf("writeReverse: %v %v", ok, err)
			}
			// The install: the new file live, its link, the old link gone.
			cand := live + ".new"
			os.WriteFile(cand, next, 0o644)
			os.Rename(cand, live)
			os.Link(live, HistoryPath(live, 6))
			os.Remove(HistoryPath(live, 5))
			p, done, err := HistoryFile(live, 5)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(p)
			done()
			if !bytes.Equal(got, old) {
				t.Fatalf("rebuilt %d bytes, not the old %d", len(got), len(old))
			}
			if _, err := os.Stat(p); err == nil {
				t.Fatal("done left the rebuilt file")
			}

			// The base changed under it (a page the entry does not hold):
			// the step's SHA-256 says so.
			os.Remove(HistoryPath(live, 6))
			next[3*ps+1] ^= 1
			os.WriteFile(HistoryPath(live, 6), next, 0o644)
			if _, _, err := HistoryFile(live, 5); err == nil || !strings.Contains(err.Error(), "000000000005.rdelta") || !strings.Contains(err.Error(), "SHA-256") {
				t.Fatalf("a changed base: %v", err)
			}
			// One byte of its pages changed: its checksum says so.
			b, _ := os.ReadFile(ReversePath(live, 5))
			b[reverseHeader+len(pages)*8+3] ^= 1
			os.WriteFile(ReversePath(live, 5), b, 0o644)
			if _, _, err := HistoryFile(live, 5); err == nil || !strings.Contains(err.Error(), "000000000005.rdelta") || !strings.Contains(err.Error(), "checksum") {
				t.Fatalf("a damaged reverse delta: %v", err)
			}
		})
	}
}

// Two reverse deltas naming each other as base (checksums intact: written
// by hand, never by an install) are refused, naming the entry, instead of
// a rebuild that never ends.
func TestReverseDeltaLoopRefused(t *testing.T) {
	dir := t.TempDir()
	live := filepath.Join(dir, "cache.db")
	os.WriteFile(live, make([]byte, 8192), 0o644)
	os.MkdirAll(HistoryDir(live), 0o755)
	entry := func(serial, base int64) {
		b := make([]byte, reverseHeader)
		copy(b, reverseMagic)
		put := func(off int, v uint64) {
			for i := 0; i < 8; i++ {
				b[off+i] = byte(v >> (8 * i))
			}
		}
		put(8, uint64(serial))
		put(16, 8192)
		put(56, uint64(base))
		b[96] = 0x00
		b[97] = 0x10 // page size 4096, no pages
		h := sha256.Sum256(b)
		os.WriteFile(ReversePath(live, serial), append(b, h[:]...), 0o644)
	}
	entry(3, 4)
	entry(4, 3)
	done := make(chan error, 1)
	go func() { _, _, err := HistoryFile(live, 3); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "000000000004.rdelta") || !strings.Contains(err.Error(), "not newer") {
			t.Fatalf("a loop of reverse deltas: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a loop of reverse deltas: HistoryFile did not return")
	}
}
