package publish

// Hashing only the pages a commit changed (issue 18). The publisher read
// and hashed the whole 80 MB snapshot three times per commit at 100,000
// users: the file's SHA-256, a SHA-256 per 4 KiB page (the page root and
// the deltas) and one per frame range (frames.go); about 0.2 s of CPU
// per change, on the path to the signed manifest.
//
// Decisions:
//   - The in-place writer compares every page of the file it installs
//     with the live file it copied (snapshot/update.go, verifyPages) and
//     says which differ (snapshot.ChangedPagesOf, for that very file:
//     device, inode and size). When the file it copied is the one the
//     last object was made from (lastSrc, as opened), the page hashes are
//     the last object's with only the changed pages hashed again, and the
//     frames whose range holds no changed page are the last object's
//     frames at the same place, copied without reading or hashing the
//     range (frames.go). Snapshot files are never changed once renamed
//     into place, so the unchanged pages are the bytes hashed before.
//   - The file's own SHA-256 is still computed over every byte: it names
//     the object, and a node checks what it installs against it.
//   - Anything else (another process's file, a whole write, a publisher
//     started since, a base whose hashes are no longer kept) hashes the
//     whole file as before.

import (
	"crypto/sha256"
	"os"
	"slices"

	"github.com/scimbridge/scimbridge/syncd/snapshot"
)

// changeSince is the writer's page change from the file the last object
// was made from to src, or nil.
func (p *Publisher) changeSince(src *os.File, verified bool) *snapshot.PageChange {
	if !verified || p.lastSum == "" {
		return nil
	}
	c, ok := snapshot.ChangedPagesOf(src)
	if !ok || c.PageSize <= 0 || c.From != p.lastSrc {
		return nil
	}
	return &c
}

// hashPages is pageHashes(f), from the last object's hashes and the
// changed pages when change says which.
func (p *Publisher) hashPages(f *os.File, change *snapshot.PageChange) ([][32]byte, error) {
	if change != nil {
		if old, ok := p.pages().Get(p.lastSum); ok {
			h, n, err := patchHashes(f, old, change)
			p.PagesHashed = n
			return h, err
		}
	}
	h, err := pageHashes(f)
	p.PagesHashed = len(h)
	return h, err
}

// patchHashes is old (the page hashes of change.From) with the pages of
// f (change.To) that change names hashed again, and any page past the
// end of the shorter file.
func patchHashes(f *os.File, old [][32]byte, change *snapshot.PageChange) ([][32]byte, int, error) {
	size := change.To.Size
	n := int((size + PageSize - 1) / PageSize)
	h := make([][32]byte, n)
	copy(h, old)
	redo := map[int]bool{}
	for _, pg := range change.Pages {
		lo := int64(pg-1) * int64(change.PageSize)
		for q := lo / PageSize; q*PageSize < lo+int64(change.PageSize) && int(q) < n; q++ {
			redo[int(q)] = true
		}
	}
	// The last page of the shorter file may be partial, and every page
	// past it is new.
	from := min(len(old), n)
	if change.From.Size%PageSize != 0 && from > 0 {
		from--
	}
	for q := from; q < n; q++ {
		redo[q] = true
	}
	buf := make([]byte, PageSize)
	qs := make([]int, 0, len(redo))
	for q := range redo {
		qs = append(qs, q)
	}
	slices.Sort(qs)
	for _, q := range qs {
		k := min(int64(PageSize), size-int64(q)*PageSize)
		if _, err := f.ReadAt(buf[:k], int64(q)*PageSize); err != nil {
			return nil, 0, err
		}
		h[q] = sha256.Sum256(buf[:k])
	}
	return h, len(qs), nil
}

// unchangedRange says whether the frame range [lo, hi) of the new file
// holds only pages change leaves as they were in the file the last
// frames were made from (src), at the same offsets; nil when unknown.
func unchangedRange(change *snapshot.PageChange, src fileID) func(lo, hi int64) bool {
	if change == nil || change.From != src {
		return nil
	}
	ps := int64(change.PageSize)
	pages := slices.Clone(change.Pages)
	slices.Sort(pages)
	return func(lo, hi int64) bool {
		// The same range in both files: frame k of the last object held
		// exactly [lo, hi) of From.
		if hi > change.To.Size || min(lo+frameSize, change.From.Size) != hi {
			return false
		}
		// The first changed page whose end is past lo must start at or
		// after hi.
		i, _ := slices.BinarySearchFunc(pages, lo, func(pg int, lo int64) int {
			if int64(pg)*ps <= lo {
				return -1
			}
			return 1
		})
		return i == len(pages) || int64(pages[i]-1)*ps >= hi
	}
}
