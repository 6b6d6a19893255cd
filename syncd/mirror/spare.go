package mirror

// The spare (issue 18: a one-change delta installed in time proportional
// to the change). A delta was applied to a fresh copy of the live file
// (snapshot.CloneFile: 85 MB copied and fsynced at 100,000 users on a
// file system without reflink). Instead, the previous live file is kept
// as <live>.spare (a hard link made before the rename that replaces it),
// with <live>.spare.json naming it (identity, its snapshot's SHA-256, the
// SHA-256 of the live snapshot it is one step behind, the pages that
// differ between them and when it left the path). The next delta from
// the live snapshot copies those pages from the live file into the spare,
// sets its size, and applies the delta to it as to a copy; the result is
// checked and installed exactly as before.
//
// Safety:
//   - the sidecar is removed (and the directory fsynced) before the spare
//     is written: a crash while the spare is half written leaves no
//     sidecar, and a spare without one is deleted at the next install;
//   - the spare is reused only if it still has the identity the sidecar
//     recorded (device, inode, size, ctime to the nanosecond: any write,
//     chmod or link moves it), the live file is the snapshot it is one
//     step behind, and no other name links its inode (.prev is moved to
//     the live file first; a history entry that still links it, a whole
//     file, keeps it: rewriting it would change that kept snapshot). The
//     install that makes a file the spare turns its history entry into a
//     reverse delta (snapshot.Install, syncd/snapshot/reverse.go), so
//     with the default history the spare is free;
//   - readers: the C reader uses a file it mapped until CHECK_INTERVAL_NS
//     (1 s) after its last check of the path (c/common.c ensure_open), so
//     the spare is rewritten only spareGrace after it left the path; a
//     handle that held the inode and comes back to it at the path sees a
//     new ctime (same_file) and reopens.
// Anything else (no spare, no or a bad sidecar, too recent, an error):
// the copy as before, with a debug line.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/scimbridge/scimbridge/syncd/atomicfile"
	"github.com/scimbridge/scimbridge/syncd/publish"
	"github.com/scimbridge/scimbridge/syncd/snapshot"
)

// spareGrace: a spare is rewritten at least this long after it left the
// path. The C reader keeps using a file it opened up to CHECK_INTERVAL_NS
// (1 s) after its last check of the path; 5 s leaves margin for a
// lookup that started just before the interval ended and a loaded node.
const spareGrace = 5 * time.Second

// spareState is <live>.spare.json.
type spareState struct {
	Dev        uint64    `json:"dev"`
	Ino        uint64    `json:"ino"`
	Size       int64     `json:"size"`
	CtimeN     int64     `json:"ctime_ns"`
	SHA256     string    `json:"sha256"`      // the spare's snapshot
	LiveSHA256 string    `json:"live_sha256"` // the snapshot it is one step behind
	LiveSize   int64     `json:"live_size"`
	Pages      []int64   `json:"pages"` // pages that differ from the live file
	LeftAt     time.Time `json:"left_at"`
	// Copy: a copy of the live file made after a full download
	// (spareCopy), never at the path, so no reader has it open and the
	// grace does not apply; LeftAt is when it was made.
	Copy bool `json:"copy,omitempty"`
}

func (n *Node) sparePath() string      { return n.Live + ".spare" }
func (n *Node) spareStatePath() string { return n.Live + ".spare.json" }
func (n *Node) spareWorkPath() string  { return n.Live + ".spare.work" }

func (n *Node) spareGrace() time.Duration {
	if n.SpareGrace > 0 {
		return n.SpareGrace
	}
	return spareGrace
}

// dropSpare removes the spare, its sidecar and a leftover work file.
func (n *Node) dropSpare() {
	n.dropSpareLinks()
	os.Remove(n.spareWorkPath())
}

// dropSpareLinks removes the spare and its sidecar (not the work file:
// it may be the candidate being installed).
func (n *Node) dropSpareLinks() {
	os.Remove(n.spareStatePath())
	os.Remove(n.sparePath())
}

// takeSpare returns the spare, brought to the live file's bytes (the
// snapshot base), open for writing at <live>.spare.work, or nil (the
// caller copies the live file). The sidecar is gone either way.
func (n *Node) takeSpare(base string) *os.File {
	f, err := n.takeSpareErr(base)
	if err != nil {
		n.Log.WithError(err).Debug("mirror: not reusing the spare; copying the live file")
		n.dropSpare()
		return nil
	}
	return f
}

func (n *Node) takeSpareErr(base string) (*os.File, error) {
	os.Remove(n.spareWorkPath())
	var s spareState
	if err := atomicfile.ReadJSON(n.spareStatePath(), &s); err != nil {
		return nil, err
	}
	if s.LiveSHA256 != base {
		return nil, errors.New("the spare is not one step behind the live snapshot")
	}
	if age := time.Since(s.LeftAt); !s.Copy && age < n.spareGrace() {
		return nil, fmt.Errorf("the spare left the path %v ago, under the grace of %v", age.Round(time.Millisecond), n.spareGrace())
	}
	fi, err := os.Lstat(n.sparePath())
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || idOf(fi) != (fileID{dev: s.Dev, ino: s.Ino, size: s.Size, ctime: s.CtimeN}) {
		return nil, errors.New("the spare is not the file its sidecar names")
	}
	live, err := os.Stat(n.Live)
	if err != nil || live.Size() != s.LiveSize || os.SameFile(live, fi) {
		return nil, errors.New("the live file is not the one the sidecar names")
	}
	// Invalidate first: from here a crash leaves a spare without sidecar.
	if err := os.Remove(n.spareStatePath()); err != nil {
		return nil, err
	}
	if err := snapshot.SyncDir(filepath.Dir(n.Live)); err != nil {
		return nil, err
	}
	// .prev to the live file (the install does the same next), so that
	// the spare's inode has no name but its own.
	if err := snapshot.LinkAs(n.Live, n.Live+snapshot.PrevSuffix); err != nil {
		return nil, err
	}
	if err := os.Rename(n.sparePath(), n.spareWorkPath()); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(n.spareWorkPath(), os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
		}
	}()
	if fi, err := f.Stat(); err != nil || fi.Sys().(*syscall.Stat_t).Nlink != 1 {
		return nil, errors.New("the spare's inode has other names (.prev or the history keeps it)")
	}
	in, err := os.Open(n.Live)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	page := make([]byte, publish.PageSize)
	for _, p := range s.Pages {
		off := p * publish.PageSize
		if p < 0 || off >= s.LiveSize {
			continue // past the live file's end: cut by the truncate
		}
		k, err := in.ReadAt(page, off)
		if err != nil && !(errors.Is(err, io.EOF) && off+int64(k) == s.LiveSize) {
			return nil, err
		}
		if _, err := f.WriteAt(page[:k], off); err != nil {
			return nil, err
		}
	}
	if err := f.Truncate(s.LiveSize); err != nil {
		return nil, err
	}
	ok = true
	return f, nil
}

// keepSpare links the live file, about to be replaced, as the spare
// (before the rename over it: the old inode is never without a name).
// Its sidecar is written by spareInstalled once the new file is live.
func (n *Node) keepSpare() error {
	n.dropSpareLinks()
	return snapshot.LinkAs(n.Live, n.sparePath())
}

// spareInstalled writes the sidecar of the spare keepSpare linked: it is
// the snapshot spareSum, one step behind the live snapshot liveSum, and
// differs from it in pages (and the size).
func (n *Node) spareInstalled(spareSum, liveSum string, pages []int64) error {
	return n.writeSpareState(spareState{SHA256: spareSum, LiveSHA256: liveSum, Pages: pages})
}

// writeSpareState writes the sidecar: s with the spare's identity, the
// live file's size and the time now.
func (n *Node) writeSpareState(s spareState) error {
	fi, err := os.Lstat(n.sparePath())
	if err != nil {
		return err
	}
	live, err := os.Stat(n.Live)
	if err != nil {
		return err
	}
	id := idOf(fi)
	if s.Copy && id.size != live.Size() {
		return fmt.Errorf("the copy is %d bytes, the live file %d", id.size, live.Size())
	}
	s.Dev, s.Ino, s.Size, s.CtimeN, s.LiveSize, s.LeftAt = id.dev, id.ino, id.size, id.ctime, live.Size(), time.Now().UTC()
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return atomicfile.Write(n.spareStatePath(), b, 0o600)
}

// spareCopy makes the spare after an install that leaves none (a full
// download, or a delta whose written pages are not known): a copy of the
// live file just installed (n.liveID, n.liveSum; the same identity
// after the copy), at the spare's own path, synced before its
// sidecar names it (a delta applied to the spare trusts the pages it does
// not write to be the live file's: applyProven hashes only those it
// writes). So the first delta after a full download costs its pages, not
// a copy of the file: that copy is made here, in the poll that already
// wrote the whole file. A crash leaves a spare without a sidecar, which
// the next install removes.
func (n *Node) spareCopy() error {
	n.dropSpare()
	sum := n.liveSum
	if sum == "" {
		return errors.New("the live file's hash is not known")
	}
	// As in takeSpare: no sidecar survives a crash while the spare is
	// written.
	if err := snapshot.SyncDir(filepath.Dir(n.Live)); err != nil {
		return err
	}
	f, err := os.OpenFile(n.sparePath(), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	f.Close()
	if _, err := snapshot.CloneFile(n.Live, n.sparePath()); err != nil {
		return err
	}
	if err := snapshot.SyncFile(n.sparePath()); err != nil {
		return err
	}
	if id, err := statID(n.Live); err != nil || id != n.liveID {
		return errors.New("the live file changed during the copy")
	}
	return n.writeSpareState(spareState{SHA256: sum, LiveSHA256: sum, Pages: []int64{}, Copy: true})
}
