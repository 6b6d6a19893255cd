package snapshot

// The NSS index blob read and written as file pages (issue 18). Update
// read the live 31 MB blob through SQL (SQLite reads its 7,500 overflow
// pages one by one and copies the value twice on the way to Go) and
// wrote the new one back with one UPDATE, handing SQLite all 31 MB to
// compare page by page for the few chunks that differ: about 0.3 s of
// CPU per change at 100,000 users for what is, on a one-change poll, a
// few KiB.
//
// The blob's overflow pages follow one another (Write inserts the row
// last into a file without free pages, and nothing moves pages: no
// auto-vacuum, no VACUUM on the in-place path); the C reader maps them
// the same way. readIndex reads the chain's pages in one read and checks
// every link; writeIndexPages writes, into the private copy after the
// row transaction has been committed and the connection closed, only
// the overflow pages whose bytes differ, at the offsets SQLite's own
// overwrite (btreeOverwriteContent) would write them: the payload bytes
// of an overflow page after its 4-byte link, which stays. Nothing else
// of the page or the file changes. The copy is not live until it is
// renamed, after fsync, the page comparison (verifyPages: exactly the
// chunks that differ changed, nothing else in the index) and the C
// reader's checks; a kill -9 before that leaves a temp file the next
// writer removes, as before.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
)

// indexChainOf is where the index's payload lies in the file f (open):
// its first overflow page, how many payload bytes page 2 keeps, and the
// offset in page 2 of the payload (its record header, then the blob's
// first bytes), for a blob of n bytes; page2 is that page.
func indexChainOf(f *os.File, ps, n int) (first, local, at int, page2 []byte, err error) {
	head := make([]byte, 2*ps)
	if _, err := f.ReadAt(head, 0); err != nil {
		return 0, 0, 0, nil, fmt.Errorf("read page 2 of %s: %w", f.Name(), err)
	}
	if first, local, err = indexChain(head, ps, n); err != nil {
		return 0, 0, 0, nil, err
	}
	if local < recordHeader(n) {
		return 0, 0, 0, nil, fmt.Errorf("the NSS index keeps %d payload bytes in page 2, fewer than its header", local)
	}
	page2 = head[ps:]
	cell := int(binary.BigEndian.Uint16(page2[8:]))
	_, u1 := sqliteUvarint(page2[cell:])
	_, u2 := sqliteUvarint(page2[cell+u1:])
	return first, local, cell + u1 + u2, page2, nil
}

// readIndex reads the n-byte NSS index blob of the file at path from its
// pages, checking that its overflow pages follow one another.
func readIndex(path string, ps, n int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	first, local, at, page2, err := indexChainOf(f, ps, n)
	if err != nil {
		return nil, err
	}
	hdr, C := recordHeader(n), ps-4
	npages := (hdr + n - local + C - 1) / C
	blob := make([]byte, n)
	copy(blob, page2[at+hdr:at+local]) // the bytes page 2 keeps
	pages := make([]byte, npages*ps)
	if _, err := f.ReadAt(pages, int64(first-1)*int64(ps)); err != nil {
		return nil, fmt.Errorf("read the NSS index's %d pages from page %d of %s: %w", npages, first, path, err)
	}
	for i := 0; i < npages; i++ {
		pg := pages[i*ps : (i+1)*ps]
		next := int(binary.BigEndian.Uint32(pg))
		want := first + i + 1
		if i == npages-1 {
			want = 0
		}
		if next != want {
			return nil, fmt.Errorf("the NSS index's overflow page %d links to page %d, not %d: its chain is not contiguous", first+i, next, want)
		}
		copy(blob[local-hdr+i*C:], pg[4:])
	}
	return blob, nil
}

// writeIndexPages writes blob over the index of the file at path (a
// private copy, no connection open on it), which holds live: only the
// overflow pages whose payload differs are written. It returns how many.
func writeIndexPages(path string, ps int, live []byte, blob *newIndex) (int, error) {
	n := len(live)
	if blob.size() != n {
		return 0, fmt.Errorf("the new NSS index is %d bytes, the live one %d", blob.size(), n)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return 0, fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	first, local, _, _, err := indexChainOf(f, ps, n)
	if err != nil {
		return 0, err
	}
	hdr, C := recordHeader(n), ps-4
	if !bytes.Equal(live[:local-hdr], blob.span(0, local-hdr)) {
		return 0, fmt.Errorf("the NSS index's first %d bytes (in page 2) changed", local-hdr)
	}
	npages := (hdr + n - local + C - 1) / C
	wrote := 0
	for i := 0; i < npages; i++ {
		lo, hi := local+i*C-hdr, min(local+(i+1)*C-hdr, n)
		nb := blob.span(lo, hi)
		if bytes.Equal(live[lo:hi], nb) {
			continue
		}
		if _, err := f.WriteAt(nb, int64(first+i-1)*int64(ps)+4); err != nil {
			return wrote, fmt.Errorf("write page %d of %s: %w", first+i, path, err)
		}
		wrote++
	}
	return wrote, f.Close()
}

// newIndex is the NSS index after a change: the live blob with the
// patched buckets laid over it (patchIndex), or a whole new blob (base,
// no chunks). The live blob is not copied for a patch (31 MB at 100,000
// users per change, for a few changed chunks); it is changed in place
// only once the new file is live (flatten), when it becomes the kept
// live blob (liveindex.go).
type newIndex struct {
	base   []byte
	chunks map[int][]byte // offset in base -> the chunk's new bytes
	h, c   int            // chunk 0's offset, chunk size (patches)
}

func (x *newIndex) size() int { return len(x.base) }

// span is bytes [lo, hi) of the new index (base's own bytes when no
// patched chunk overlaps them).
func (x *newIndex) span(lo, hi int) []byte {
	if len(x.chunks) == 0 || hi <= x.h {
		return x.base[lo:hi]
	}
	var out []byte
	for k := max(0, (lo-x.h)/x.c); x.h+k*x.c < hi; k++ {
		at := x.h + k*x.c
		ch, ok := x.chunks[at]
		if !ok {
			continue
		}
		if out == nil {
			out = bytes.Clone(x.base[lo:hi])
		}
		a, b := max(lo, at), min(hi, at+len(ch))
		if a < b {
			copy(out[a-lo:], ch[a-at:b-at])
		}
	}
	if out == nil {
		return x.base[lo:hi]
	}
	return out
}

// flatten lays the patched chunks over base, in place, and returns it:
// only once the new file is live (base is the live blob until then).
func (x *newIndex) flatten() []byte {
	for at, ch := range x.chunks {
		copy(x.base[at:], ch)
	}
	x.chunks = nil
	return x.base
}
