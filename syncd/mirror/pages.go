package mirror

// Page hashes beside the live snapshot (<live>.pages): the SHA-256 of
// each 4 KiB page of the live file, with the file's own SHA-256 and size.
// Why: a node applying a delta of a few pages checked the result by
// hashing the whole new file (80 MB at 100,000 users) and then hashed the
// live file again on the next poll; with the live file's page hashes it
// hashes only the pages the delta wrote and the list of hashes, and
// compares with the signed manifest's page_root (syncd/publish). A
// sidecar that is missing, damaged or for another file is ignored: the
// node then checks the whole file as before and writes a new sidecar.
// The sidecar is not trusted for anything but speed: a wrong one makes
// the root differ and the node fetch the full file.

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/scimbridge/scimbridge/syncd/publish"
)

const pagesMagic = "SCIMPAGES1\n"

// errPageRoot: the delta's result does not hash to the manifest's page
// root under the kept page hashes; the whole result is checked instead
// (a stale sidecar must not cost a full download).
var errPageRoot = errors.New("page root")

// livePages is the page hashes of one snapshot file.
type livePages struct {
	sum    string // hex SHA-256 of the file
	size   int64
	hashes [][32]byte
}

func (n *Node) pagesPath() string { return n.Live + ".pages" }

// loadPages reads the sidecar if it describes the snapshot sum.
func (n *Node) loadPages(sum string) *livePages {
	b, err := os.ReadFile(n.pagesPath())
	if err != nil || len(b) < len(pagesMagic)+32+8 || string(b[:len(pagesMagic)]) != pagesMagic {
		return nil
	}
	b = b[len(pagesMagic):]
	p := &livePages{sum: hex.EncodeToString(b[:32]), size: int64(binary.BigEndian.Uint64(b[32:]))}
	b = b[40:]
	count := (p.size + publish.PageSize - 1) / publish.PageSize
	if p.sum != sum || int64(len(b)) != count*32 {
		return nil
	}
	p.hashes = make([][32]byte, count)
	for i := range p.hashes {
		copy(p.hashes[i][:], b[32*i:])
	}
	return p
}

// savePages writes the sidecar of the live snapshot (temp file, rename).
func (n *Node) savePages(p *livePages) {
	if p == nil {
		os.Remove(n.pagesPath())
		return
	}
	sum, err := hex.DecodeString(p.sum)
	if err != nil || len(sum) != 32 {
		return
	}
	// One buffer of the sidecar's size: grown a hash at a time, its
	// doublings and their zeroing were 15% of a one-change install's CPU
	// (100,000 users, 10,000 hashes; perf, Dec 2).
	b := make([]byte, 0, len(pagesMagic)+32+8+32*len(p.hashes))
	b = append(b, pagesMagic...)
	b = append(b, sum...)
	b = binary.BigEndian.AppendUint64(b, uint64(p.size))
	for i := range p.hashes {
		b = append(b, p.hashes[i][:]...)
	}
	tmp := n.pagesPath() + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err == nil && os.Rename(tmp, n.pagesPath()) == nil {
		return
	}
	os.Remove(tmp)
	n.Log.Warn("mirror: cannot keep page hashes in " + n.pagesPath() + " (the next delta checks the whole file)")
}

// applyProven applies delta to dst, a copy of the live file whose page
// hashes are base, and checks the result against root page by page. It
// returns the result's page hashes.
func applyProven(dst *os.File, delta []byte, maxSize int64, base *livePages, root string) (*livePages, []int64, error) {
	hashes := base.hashes
	written := map[int][32]byte{}
	size, err := publish.ApplyDeltaPages(dst, delta, maxSize, func(idx int, data []byte) {
		written[idx] = sha256.Sum256(data)
	})
	if err != nil {
		return nil, nil, err
	}
	count := int((size + publish.PageSize - 1) / publish.PageSize)
	// base is this call's (loadPages read it for it): its hashes are
	// updated in place unless the file changed length.
	next := hashes
	if count != len(hashes) {
		next = make([][32]byte, count)
		copy(next, hashes)
	}
	for i := range next {
		h, ok := written[i]
		switch {
		case ok:
			next[i] = h
		case i >= len(hashes) || i == count-1 && size%publish.PageSize != 0:
			// A page the base did not have, or a last page cut short,
			// that the delta did not write: only the whole file tells.
			return nil, nil, fmt.Errorf("%w: page %d of the result is not in the delta", publish.ErrDelta, i)
		}
	}
	if got := publish.PageRoot(next); got != root {
		return nil, nil, fmt.Errorf("%w: the result's page root %s… is not the signed manifest's %s…", errPageRoot, got[:12], root[:12])
	}
	pages := make([]int64, 0, len(written))
	for i := range written {
		pages = append(pages, int64(i))
	}
	slices.Sort(pages)
	return &livePages{size: size, hashes: next}, pages, nil
}
