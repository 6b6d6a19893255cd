package snapshot

// Reverse deltas in the history (issue 18: a node's delta install through
// the spare with the default history). When a node installs a page delta,
// the live file's history entry (a hard link, <serial>.db) would keep the
// previous live file's inode, which the next delta must be free to
// rewrite (syncd/mirror/spare.go). Instead the entry becomes
// <serial>.rdelta: the snapshot's size and SHA-256, the serial and
// SHA-256 of the snapshot it is relative to (the one being installed),
// and the old bytes of every page the new snapshot may change (the
// delta's page list, known before anything is written, plus the pages a
// change of size moves). Older entries stay reverse deltas relative to
// their successor: a chain that ends at a whole file (the live file's
// link, or an entry that was a whole file).
//
// Order (crash safety): the reverse delta is written to a temp name,
// fsynced, renamed and the directory fsynced (atomicfile.Write) before the install renames
// the candidate over the live file; the whole file's link is removed
// only after the new live file's own entry is linked. A crash anywhere
// leaves the whole file (both kept: the whole file is listed and the
// reverse delta dropped at the next install) or a complete reverse delta
// whose base is kept. The file ends in the SHA-256 of all before it: a
// damaged or truncated one is reported, never applied, and each rebuilt
// step is checked against the snapshot's SHA-256 it records.
//
// Readers (HistoryFile, EachHistory) rebuild an entry into a temp file
// in the history directory (else the system's temp directory): a copy of
// the base (a reflink where the file system shares extents), then each
// reverse delta of the chain, newest first, each step hashed.

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/scimbridge/scimbridge/syncd/atomicfile"
)

const reverseMagic = "SCIMRDL1"

// reverseHeader: magic, serial, size, SHA-256, base serial, base SHA-256,
// page size, page count.
const reverseHeader = 8 + 8 + 8 + 32 + 8 + 32 + 4 + 4

// rebuiltPrefix names HistoryFile's temp files in the history directory.
const rebuiltPrefix = ".rebuilt-"

// Reverse asks an install to keep the live snapshot's history entry as a
// reverse delta against the candidate instead of a whole file (Install, InstallOptions.Reverse).
type Reverse struct {
	Serial   int64   // the live snapshot's serial
	SHA256   string  // the live snapshot's SHA-256 (hex)
	Next     string  // the candidate's SHA-256 (hex)
	Pages    []int64 // the pages the candidate may differ in from the live file
	PageSize int64   // of Pages
}

// reverseDelta is one parsed .rdelta file.
type reverseDelta struct {
	serial, size int64
	sum          [32]byte
	base         int64
	baseSum      [32]byte
	pageSize     int64
	pages        []int64
	data         []byte // the pages' bytes, one after another (the last may be short)
}

// writeReverse writes the reverse delta of the live snapshot against a
// candidate of nextSize bytes under serial next, if the history keeps
// the live file as a whole file (its own link). It reports whether it did.
func writeReverse(live string, r *Reverse, next, nextSize int64) (bool, error) {
	if HistoryKeep <= 0 || r == nil || r.Serial < 1 || next <= r.Serial || r.PageSize <= 0 {
		return false, nil
	}
	sum, err := hex.DecodeString(r.SHA256)
	if err != nil || len(sum) != 32 {
		return false, fmt.Errorf("snapshot: reverse delta: live SHA-256 %q", r.SHA256)
	}
	nextSum, err := hex.DecodeString(r.Next)
	if err != nil || len(nextSum) != 32 {
		return false, fmt.Errorf("snapshot: reverse delta: candidate SHA-256 %q", r.Next)
	}
	f, err := os.Open(live)
	if err != nil {
		return false, err
	}
	defer f.Close()
	lfi, err := f.Stat()
	if err != nil {
		return false, err
	}
	if hfi, err := os.Stat(HistoryPath(live, r.Serial)); err != nil || !os.SameFile(hfi, lfi) {
		return false, nil // not kept, or not as the live file's link
	}
	size, ps := lfi.Size(), r.PageSize
	// The delta's pages, and every page from the shorter file's end to
	// the live file's (cut, extended or partly rewritten by the change
	// of size).
	pages := make([]int64, 0, len(r.Pages)+1)
	for _, p := range r.Pages {
		if p >= 0 && p*ps < size {
			pages = append(pages, p)
		}
	}
	for p := min(size, nextSize) / ps; p*ps < size; p++ {
		pages = append(pages, p)
	}
	slices.Sort(pages)
	pages = slices.Compact(pages)
	b := make([]byte, reverseHeader, reverseHeader+8*len(pages)+int(ps)*len(pages)+32)
	copy(b, reverseMagic)
	binary.LittleEndian.PutUint64(b[8:], uint64(r.Serial))
	binary.LittleEndian.PutUint64(b[16:], uint64(size))
	copy(b[24:], sum)
	binary.LittleEndian.PutUint64(b[56:], uint64(next))
	copy(b[64:], nextSum)
	binary.LittleEndian.PutUint32(b[96:], uint32(ps))
	binary.LittleEndian.PutUint32(b[100:], uint32(len(pages)))
	for _, p := range pages {
		b = binary.LittleEndian.AppendUint64(b, uint64(p))
	}
	for _, p := range pages {
		n := min(ps, size-p*ps)
		b = append(b, make([]byte, n)...)
		if _, err := f.ReadAt(b[len(b)-int(n):], p*ps); err != nil {
			return false, fmt.Errorf("snapshot: reverse delta: read page %d of %s: %w", p, live, err)
		}
	}
	h := sha256.Sum256(b)
	b = append(b, h[:]...)
	// Written, fsynced, renamed into place and the directory fsynced.
	if err := atomicfile.Write(ReversePath(live, r.Serial), b, 0o644); err != nil {
		return false, err
	}
	return true, nil
}

// readReverse reads and checks one .rdelta file.
func readReverse(path string) (*reverseDelta, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	bad := func(why string) error { return fmt.Errorf("damaged reverse delta: %s", why) }
	if len(b) < reverseHeader+32 || string(b[:8]) != reverseMagic {
		return nil, bad("no header")
	}
	body, tail := b[:len(b)-32], b[len(b)-32:]
	if h := sha256.Sum256(body); !bytes.Equal(h[:], tail) {
		return nil, bad("its checksum does not match (incomplete or changed)")
	}
	r := &reverseDelta{
		serial:   int64(binary.LittleEndian.Uint64(b[8:])),
		size:     int64(binary.LittleEndian.Uint64(b[16:])),
		base:     int64(binary.LittleEndian.Uint64(b[56:])),
		pageSize: int64(binary.LittleEndian.Uint32(b[96:])),
	}
	copy(r.sum[:], b[24:])
	copy(r.baseSum[:], b[64:])
	n := int64(binary.LittleEndian.Uint32(b[100:]))
	if r.pageSize <= 0 || r.size < 0 || n > int64(len(body)) {
		return nil, bad("header out of range")
	}
	rest := body[reverseHeader:]
	if int64(len(rest)) < 8*n {
		return nil, bad("short page list")
	}
	var want int64
	for i := int64(0); i < n; i++ {
		p := int64(binary.LittleEndian.Uint64(rest[8*i:]))
		if p < 0 || p*r.pageSize >= r.size || i > 0 && p <= r.pages[i-1] {
			return nil, bad("page list out of order or range")
		}
		r.pages = append(r.pages, p)
		want += min(r.pageSize, r.size-p*r.pageSize)
	}
	r.data = rest[8*n:]
	if int64(len(r.data)) != want {
		return nil, bad("page data of the wrong length")
	}
	return r, nil
}

// apply turns f, holding the base snapshot, into r's snapshot and checks
// its SHA-256.
func (r *reverseDelta) apply(f *os.File) error {
	if err := f.Truncate(r.size); err != nil {
		return err
	}
	off := 0
	for _, p := range r.pages {
		n := int(min(r.pageSize, r.size-p*r.pageSize))
		if _, err := f.WriteAt(r.data[off:off+n], p*r.pageSize); err != nil {
			return err
		}
		off += n
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(f, 0, r.size)); err != nil {
		return err
	}
	if got := h.Sum(nil); !bytes.Equal(got, r.sum[:]) {
		return fmt.Errorf("rebuilt from serial %d it has SHA-256 %x…, the entry says %x… (the base is not the snapshot it was made against, or the entry is wrong)",
			r.base, got[:6], r.sum[:6])
	}
	return nil
}

// HistoryFile is a file holding the kept snapshot of this serial: its
// whole-file entry, or one rebuilt from the reverse-delta chain (a temp
// file). done removes what was made; call it when finished with path.
// The error wraps ErrNotKept when the serial is not kept, and names the
// entry that could not be read or rebuilt.
func HistoryFile(live string, serial int64) (path string, done func(), err error) {
	es, err := History(live)
	if err != nil {
		return "", func() {}, err
	}
	return historyFile(live, es, serial, nil)
}

// historyFile rebuilds serial from es. A rebuild goes into work if not
// nil (EachHistory's), else a new temp file done removes.
func historyFile(live string, es []Entry, serial int64, work *os.File) (string, func(), error) {
	nop := func() {}
	at := map[int64]Entry{}
	for _, e := range es {
		at[e.Serial] = e
	}
	e, ok := at[serial]
	if !ok {
		return "", nop, fmt.Errorf("serial %d: %w", serial, ErrNotKept)
	}
	if !e.Reverse {
		return e.Path, nop, nil
	}
	// The chain from this entry up to a whole file.
	var chain []*reverseDelta
	base := ""
	for cur := e; ; {
		r, err := readReverse(cur.Path)
		if err != nil {
			return "", nop, historyErr(serial, cur, err)
		}
		if r.serial != cur.Serial {
			return "", nop, historyErr(serial, cur, fmt.Errorf("%s holds serial %d", cur.Path, r.serial))
		}
		if r.base <= r.serial {
			// A base is always a newer snapshot: this also ends a
			// chain that would loop.
			return "", nop, historyErr(serial, cur, fmt.Errorf("its base, serial %d, is not newer than it", r.base))
		}
		chain = append(chain, r)
		next, ok := at[r.base]
		switch {
		case ok && next.Reverse:
			cur = next
			continue
		case ok:
			base = next.Path
		default:
			if s, err := readSerial(live); err == nil && s == r.base {
				base = live
			} else {
				return "", nop, historyErr(serial, cur, fmt.Errorf("its base, serial %d, is no longer kept", r.base))
			}
		}
		break
	}
	done := nop
	if work == nil {
		var err error
		if work, err = rebuiltTemp(live); err != nil {
			return "", nop, err
		}
		name := work.Name()
		done = func() { os.Remove(name) }
	}
	if _, err := CloneFile(base, work.Name()); err != nil {
		done()
		return "", nop, err
	}
	if err := applyChain(work.Name(), chain, at); err != nil {
		done()
		return "", nop, historyErr(serial, Entry{}, err)
	}
	return work.Name(), done, nil
}

// rebuiltTemp makes an empty temp file for a rebuilt snapshot, in the
// history directory (same file system: a reflink where it shares
// extents), else the system's temp directory (a reader without write
// access to it). It is closed: used by name.
func rebuiltTemp(live string) (*os.File, error) {
	f, err := os.CreateTemp(HistoryDir(live), rebuiltPrefix+"*.db")
	if err != nil {
		if f, err = os.CreateTemp("", "scimbridge"+rebuiltPrefix+"*.db"); err != nil {
			return nil, err
		}
	}
	return f, f.Close()
}

// applyChain applies chain, oldest first as listed, newest first applied.
func applyChain(path string, chain []*reverseDelta, at map[int64]Entry) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	for i := len(chain) - 1; i >= 0; i-- {
		if err := chain[i].apply(f); err != nil {
			return fmt.Errorf("history entry %s: %w", at[chain[i].serial].Path, err)
		}
	}
	return f.Close()
}

func historyErr(serial int64, e Entry, err error) error {
	switch {
	case e.Path == "":
		return fmt.Errorf("serial %d: %w", serial, err)
	case e.Serial == serial:
		return fmt.Errorf("serial %d: history entry %s: %w", serial, filepath.Base(e.Path), err)
	default:
		return fmt.Errorf("serial %d: rebuilt through serial %d, history entry %s: %w", serial, e.Serial, filepath.Base(e.Path), err)
	}
}

// EachHistory calls fn for every kept snapshot, newest first, with a file
// holding it (valid only during the call) or the error that names the
// entry it could not read or rebuild. Reverse deltas are rebuilt one
// after another in one temp file: each from the one before, not from the
// live file again.
func EachHistory(live string, fn func(e Entry, path string, err error) error) error {
	es, err := History(live)
	if err != nil {
		return err
	}
	var work *os.File
	defer func() {
		if work != nil {
			os.Remove(work.Name())
		}
	}()
	// The snapshot of serial have is in the file havePath: a whole entry,
	// or work after a rebuild (then its SHA-256 haveSum is known).
	var have int64
	havePath := ""
	var haveSum [32]byte
	for i := len(es) - 1; i >= 0; i-- {
		e := es[i]
		if !e.Reverse {
			have, havePath = e.Serial, e.Path
			if err := fn(e, e.Path, nil); err != nil {
				return err
			}
			continue
		}
		if work == nil {
			if work, err = rebuiltTemp(live); err != nil {
				return err
			}
		}
		inWork := havePath == work.Name()
		r, rerr := readReverse(e.Path)
		switch {
		case rerr != nil:
			rerr = historyErr(e.Serial, e, rerr)
		case have != 0 && r.base == have && (!inWork || haveSum == r.baseSum):
			// The next newer snapshot is at hand: one step.
			if !inWork {
				if _, err := CloneFile(havePath, work.Name()); err != nil {
					return err
				}
			}
			rerr = applyChain(work.Name(), []*reverseDelta{r}, map[int64]Entry{e.Serial: e})
		default:
			// Its base is elsewhere (the live file, a gap): the whole chain.
			_, _, rerr = historyFile(live, es, e.Serial, work)
		}
		have, havePath = 0, ""
		if rerr == nil {
			have, havePath, haveSum = e.Serial, work.Name(), r.sum
		}
		if err := fn(e, havePath, rerr); err != nil {
			return err
		}
	}
	return nil
}
