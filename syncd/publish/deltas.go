package publish

// Page deltas. The snapshot writer is deterministic: unchanged rows give
// byte-identical pages, so a one-user change rewrites a handful of 4 KiB
// pages of a file of tens of thousands (measured: 3 of 2,425 at 20,000
// users). With [publish] deltas = N the head also publishes, for each of
// the last N snapshots it published, a delta file holding the pages of
// the new snapshot that differ from that one. A node whose live snapshot
// is one of them fetches the delta (size and SHA-256 from the signed
// manifest), applies it to a copy of its live file and checks the result
// against the manifest's size and SHA-256; on any mismatch or error it
// falls back to the full file. The head keeps the page hashes of recent
// snapshots in a bounded LRU (hashicorp/golang-lru) and recomputes them
// from the published files after a restart.

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sync/atomic"

	"github.com/klauspost/compress/zstd"
)

// PageSize is the delta block size: SQLite's default page size.
const PageSize = 4096

const deltaMagic = "SCIMDELTA1\n"

// Delta is one published delta: the pages that turn the snapshot whose
// SHA-256 is From into the manifest's snapshot.
type Delta struct {
	From   string `json:"from"`
	Object string `json:"object"` // <to>.from-<from>.delta.zst
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	Pages  int    `json:"pages"`
}

var deltaName = regexp.MustCompile(`^[0-9a-f]{64}\.from-[0-9a-f]{64}\.delta\.zst$`)

// DeltaName names the delta from base to target.
func DeltaName(target, base string) string { return target + ".from-" + base + ".delta.zst" }

func (d *Delta) check(target string) error {
	if !hexSHA256.MatchString(d.From) || !hexSHA256.MatchString(d.SHA256) || d.Size < 1 ||
		d.Object != DeltaName(target, d.From) || d.Pages < 0 {
		return fmt.Errorf("manifest delta %q is malformed", d.Object)
	}
	return nil
}

// DeltaFrom returns the manifest's delta from base, if it has one.
func (m *Manifest) DeltaFrom(base string) *Delta {
	for i := range m.Deltas {
		if m.Deltas[i].From == base {
			return &m.Deltas[i]
		}
	}
	return nil
}

// pageHashes hashes r in PageSize blocks.
func pageHashes(r io.Reader) ([][32]byte, error) {
	var out [][32]byte
	buf := make([]byte, PageSize)
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		n, err := io.ReadFull(br, buf)
		if n > 0 {
			out = append(out, sha256.Sum256(buf[:n]))
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// PageRoot is the SHA-256 over page hashes in order, in hex: what a
// node's copy must hash to page by page. Why not only the file's SHA-256:
// a node that applied a one-page delta to a copy of its live file would
// hash the whole file again (80 MB at 100,000 users, most of a delta
// install's CPU); with the live file's page hashes kept beside it
// (syncd/mirror), it hashes the delta's pages and the list of hashes
// (32 bytes a page). The manifest signs both the file's SHA-256 and
// this root.
func PageRoot(hashes [][32]byte) string {
	h := sha256.New()
	for i := range hashes {
		h.Write(hashes[i][:])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// HashFilePages is HashFile that also returns the file's page hashes, in
// one read.
func HashFilePages(path string) (string, int64, [][32]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, nil, err
	}
	defer f.Close()
	whole := &countWriter{w: sha256.New()}
	pages, err := pageHashes(io.TeeReader(f, whole))
	if err != nil {
		return "", 0, nil, err
	}
	return hex.EncodeToString(whole.w.(hash.Hash).Sum(nil)), whole.n, pages, nil
}

// hashesOf returns the page hashes of the published snapshot sum: from
// the LRU, else from its published file (unpacked on the fly).
func (p *Publisher) hashesOf(sum string) ([][32]byte, error) {
	if h, ok := p.pages().Get(sum); ok {
		return h, nil
	}
	var r io.Reader
	if f, err := os.Open(filepath.Join(p.Dir, sum+".db")); err == nil {
		defer f.Close()
		r = f
	} else if f, err := os.Open(filepath.Join(p.Dir, sum+".db.zst")); err == nil {
		defer f.Close()
		dec, err := zstd.NewReader(f, zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, err
		}
		defer dec.Close()
		r = dec
	} else {
		return nil, fmt.Errorf("no published file for %s…", sum[:12])
	}
	h, err := pageHashes(r)
	if err != nil {
		return nil, err
	}
	p.pages().Add(sum, h)
	return h, nil
}

// writeDeltas publishes deltas from each base (most recent first) to the
// snapshot at path (a copy in Dir) whose page hashes are hashes. A delta
// that would not be much smaller than the full file is not published.
// object is the compressed object's size once it is known (0 before:
// the compression runs beside the deltas); Publish drops a delta larger
// than half of it, so one still being written stops there, and counts
// as the manifest's deltas did before it was dropped.
func (p *Publisher) writeDeltas(path, target string, hashes [][32]byte, size, fullSize int64, bases []string, object *atomic.Int64) []Delta {
	var out []Delta
	taken := 0 // deltas written, and stopped at object's bound
	for _, base := range bases {
		if base == target || taken >= p.Deltas {
			continue
		}
		bh, err := p.hashesOf(base)
		if err != nil {
			continue // an old base whose file was pruned: nodes on it take the full file
		}
		var changed []int
		for i := range hashes {
			if i >= len(bh) || bh[i] != hashes[i] {
				changed = append(changed, i)
			}
		}
		d, err := p.writeDelta(path, target, base, changed, size, fullSize/2, object)
		if errors.Is(err, errDeltaOverObject) {
			taken++
			continue
		}
		if err != nil || d.Size*2 > fullSize {
			if err == nil {
				os.Remove(filepath.Join(p.Dir, d.Object))
			}
			continue
		}
		out = append(out, d)
		taken++
	}
	return out
}

// writeDelta writes <target>.from-<base>.delta.zst: magic, new size,
// page count, then (index, length, bytes) per changed page; zstd. The
// pages go through the encoder as they are read (runs of consecutive
// pages in one read), not into one buffer first: at 100,000 users a
// delta from an early snapshot of a bulk load holds most of the file's
// pages, and growing that buffer (its new memory cleared and faulted in
// at each doubling) was 3 s of CPU in a 100,000-user receiver load
// (pprof, push8, 2026-12-02). The encoding stops, and the delta is not
// published, as soon as its compressed bytes pass limit (0: no limit;
// errDeltaTooBig), the same bound writeDeltas applies to the finished
// delta, or half of object once that is above 0 (errDeltaOverObject:
// Publish would drop it; object may be nil).
func (p *Publisher) writeDelta(path, target, base string, changed []int, size, limit int64, object *atomic.Int64) (Delta, error) {
	d := Delta{From: base, Object: DeltaName(target, base), Pages: len(changed)}
	src, err := os.Open(path)
	if err != nil {
		return d, err
	}
	defer src.Close()
	z := &boundedBuffer{limit: limit, object: object}
	enc, err := zstd.NewWriter(z, zstd.WithEncoderConcurrency(1))
	if err != nil {
		return d, err
	}
	defer enc.Close()
	var head [len(deltaMagic) + 12]byte
	copy(head[:], deltaMagic)
	binary.BigEndian.PutUint64(head[len(deltaMagic):], uint64(size))
	binary.BigEndian.PutUint32(head[len(deltaMagic)+8:], uint32(len(changed)))
	if _, err := enc.Write(head[:]); err != nil {
		return d, err
	}
	const run = 64 // pages read at once
	buf := make([]byte, run*PageSize)
	var rec [8]byte
	for len(changed) > 0 {
		// changed is ascending: take the consecutive pages at its start.
		k := 1
		for k < len(changed) && k < run && changed[k] == changed[0]+k {
			k++
		}
		n, err := src.ReadAt(buf[:k*PageSize], int64(changed[0])*PageSize)
		if err != nil && err != io.EOF {
			return d, err
		}
		for j := 0; j < k; j++ {
			lo, hi := min(j*PageSize, n), min((j+1)*PageSize, n)
			binary.BigEndian.PutUint32(rec[:4], uint32(changed[j]))
			binary.BigEndian.PutUint32(rec[4:], uint32(hi-lo))
			if _, err := enc.Write(rec[:]); err != nil {
				return d, err
			}
			if _, err := enc.Write(buf[lo:hi]); err != nil {
				return d, err
			}
		}
		changed = changed[k:]
	}
	if err := enc.Close(); err != nil {
		return d, err
	}
	h := sha256.Sum256(z.b)
	d.Size, d.SHA256 = int64(len(z.b)), hex.EncodeToString(h[:])
	return d, writeAtomic(filepath.Join(p.Dir, d.Object), z.b)
}

// errDeltaTooBig: a delta's compressed bytes passed writeDelta's limit.
var errDeltaTooBig = errors.New("delta larger than its bound")

// errDeltaOverObject: a delta's compressed bytes passed half of the
// compressed object's.
var errDeltaOverObject = errors.New("delta larger than half the object")

// boundedBuffer collects the compressed delta and refuses to grow past
// limit bytes (when limit > 0) or half of object (when set and above 0).
type boundedBuffer struct {
	b      []byte
	limit  int64
	object *atomic.Int64
}

func (w *boundedBuffer) Write(p []byte) (int, error) {
	n := int64(len(w.b) + len(p))
	if w.limit > 0 && n > w.limit {
		return 0, errDeltaTooBig
	}
	if w.object != nil {
		if o := w.object.Load(); o > 0 && n > o/2 {
			return 0, errDeltaOverObject
		}
	}
	w.b = append(w.b, p...)
	return len(p), nil
}

// ErrDelta: a delta could not be applied; the node takes the full file.
var ErrDelta = errors.New("delta")

// ApplyDelta reads a delta (already checked against the manifest's size
// and SHA-256, unpacked at most to maxSize bytes) and writes its pages
// into dst, a copy of the base snapshot, then truncates dst to the new
// size. The caller checks the result's size and SHA-256.
func ApplyDelta(dst *os.File, delta []byte, maxSize int64) error {
	_, err := ApplyDeltaPages(dst, delta, maxSize, nil)
	return err
}

// ApplyDeltaPages is ApplyDelta that shows each page it writes to page
// (may be nil) and returns the new size.
func ApplyDeltaPages(dst *os.File, delta []byte, maxSize int64, page func(idx int, data []byte)) (int64, error) {
	size, err := applyDelta(dst, delta, maxSize, page)
	if err != nil {
		return 0, err
	}
	return size, dst.Truncate(size)
}

func applyDelta(dst *os.File, delta []byte, maxSize int64, page func(idx int, data []byte)) (int64, error) {
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(maxSize)+(64<<20)))
	if err != nil {
		return 0, err
	}
	defer dec.Close()
	raw, err := dec.DecodeAll(delta, nil)
	if err != nil {
		return 0, fmt.Errorf("%w: unpack: %v", ErrDelta, err)
	}
	r := bytes.NewReader(raw)
	magic := make([]byte, len(deltaMagic))
	if _, err := io.ReadFull(r, magic); err != nil || string(magic) != deltaMagic {
		return 0, fmt.Errorf("%w: not a delta file", ErrDelta)
	}
	var size uint64
	var count uint32
	if binary.Read(r, binary.BigEndian, &size) != nil || binary.Read(r, binary.BigEndian, &count) != nil {
		return 0, fmt.Errorf("%w: short header", ErrDelta)
	}
	if size > uint64(maxSize) {
		return 0, fmt.Errorf("%w: new size %d beyond max_size", ErrDelta, size)
	}
	buf := make([]byte, PageSize)
	for k := uint32(0); k < count; k++ {
		var idx, n uint32
		if binary.Read(r, binary.BigEndian, &idx) != nil || binary.Read(r, binary.BigEndian, &n) != nil || n > PageSize {
			return 0, fmt.Errorf("%w: bad page entry %d", ErrDelta, k)
		}
		off := int64(idx) * PageSize
		if off+int64(n) > int64(size) {
			return 0, fmt.Errorf("%w: page %d beyond the new size", ErrDelta, idx)
		}
		if _, err := io.ReadFull(r, buf[:n]); err != nil {
			return 0, fmt.Errorf("%w: short page %d", ErrDelta, idx)
		}
		if _, err := dst.WriteAt(buf[:n], off); err != nil {
			return 0, err
		}
		if page != nil {
			page(int(idx), buf[:n])
		}
	}
	if r.Len() != 0 {
		return 0, fmt.Errorf("%w: %d trailing bytes", ErrDelta, r.Len())
	}
	return int64(size), nil
}
