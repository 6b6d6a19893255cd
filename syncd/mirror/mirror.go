// Package mirror is a node's syncd: it follows the snapshot a head
// publishes (syncd/publish) instead of reading the identity source.
//
// One poll: fetch manifest.json; check its ed25519 signature against the
// head's public key (nothing in it is trusted before); refuse a serial
// lower than the live snapshot's (a replay) and a different snapshot under
// the live serial; if the snapshot is new, download it into the live
// file's directory, check the transferred file's size and SHA-256, unpack
// it (bounded to the announced size), check the snapshot's size and
// SHA-256, and install it through snapshot.Install (the C reader checks
// it, .prev keeps the old one, rename, fsync). Then the live file's mtime
// becomes the manifest's source_contact: gates compute staleness from it.
//
// On any failure the live snapshot stays as it is; the reason is in the
// status file (`syncd status`) and the metrics. A refused manifest or
// file ("refused": bad signature, replay, wrong size or hash, truncated,
// unreadable by the C reader) is told apart from a failed transfer
// ("failed": the head or the network is down).
package mirror

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/sirupsen/logrus"

	"github.com/scimbridge/scimbridge/syncd/cache"
	"github.com/scimbridge/scimbridge/syncd/commit"
	"github.com/scimbridge/scimbridge/syncd/publish"
	"github.com/scimbridge/scimbridge/syncd/snapshot"
)

// Refusal is a manifest or file the node will not install: a signature,
// serial, size, hash or content check failed. The live snapshot is kept.
type Refusal struct{ Reason string }

func (r *Refusal) Error() string { return "refused: " + r.Reason }

func refuse(format string, a ...any) error { return &Refusal{fmt.Sprintf(format, a...)} }

// Node follows one head.
type Node struct {
	T          Transport
	Key        ed25519.PublicKey
	Live       string // the live snapshot (cache_path)
	StatusPath string
	MaxSize    int64
	Version    string
	Log        logrus.FieldLogger

	// Fallback are more sources after T (fallback_urls, fallback_paths):
	// other heads signing with the same key, or copies (sources.go).
	Fallback []Transport
	// FailoverAfter: a source this much behind another in source_contact
	// loses its precedence (sources.go); 0: the highest serial leads.
	FailoverAfter time.Duration

	// MoreKeys are further trusted keys (public_key_file with several
	// blocks: a key rotation in progress).
	MoreKeys []ed25519.PublicKey

	// StaleAfter is [mirror] stale_after; 0: derived from the head's
	// poll interval (fresh.go).
	StaleAfter time.Duration

	// Local are this node's passwd and group files, checked against the
	// live snapshot (local.go); zero: /etc/passwd and /etc/group.
	Local LocalFiles
	local *localCheck

	// SpareGrace: a spare file (spare.go) is rewritten only this long
	// after it left the path; 0: spareGrace.
	SpareGrace time.Duration

	// OnResult, if set, sees every poll's outcome (metrics).
	OnResult func(r *Result)

	// The live file's identity and hash, so an unchanged live file is
	// hashed once, not on every poll (nor by every `mirror --once`: the
	// pair is kept in the state file, liveIdentity).
	liveID   fileID
	liveSum  string
	liveMeta snapshot.Meta

	src       Transport // the source whose manifest is being followed
	following string    // the source last followed (status)
}

// Result is one poll's outcome.
type Result struct {
	Outcome  string // commit.Committed, Unchanged, Refused or Failed
	Manifest *publish.Manifest
	Meta     snapshot.Meta // the live snapshot after the poll
	Touched  bool          // the live file's mtime moved to a newer source_contact
	Bytes    int64         // bytes fetched
	Spare    bool          // the delta was applied to the spare file, not a copy (spare.go)
	From     string        // the source whose manifest was followed
	Err      error

	// The newest valid signature from the head (fresh.go): its Signed
	// time, when this node first verified it, and the bound.
	HeadSigned, SignatureSeen time.Time
	StaleAfter                time.Duration
	// LocalConflicts: SCIM users this node's own files claim (local.go).
	LocalConflicts []string
}

// fileID is a file's identity: device, inode, size and change time. The
// change time (ctime) moves with every write, truncate, chmod, link or
// utimes of the inode and no user-space call can set it back, so an
// unchanged fileID means unchanged bytes without reading them.
type fileID struct {
	dev, ino uint64
	size     int64
	ctime    int64 // ns
}

func idOf(fi os.FileInfo) fileID {
	st := fi.Sys().(*syscall.Stat_t)
	return fileID{dev: uint64(st.Dev), ino: st.Ino, size: fi.Size(), ctime: st.Ctim.Nano()}
}

// statID is path's fileID now.
func statID(path string) (fileID, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileID{}, err
	}
	return idOf(fi), nil
}

// Poll runs one poll and records it in the status file.
func (n *Node) Poll(ctx context.Context) *Result {
	started := time.Now().UTC()
	r := n.poll(ctx)
	if r.Err != nil {
		var ref *Refusal
		if errors.As(r.Err, &ref) {
			r.Outcome = commit.Refused
		} else {
			r.Outcome = commit.Failed
		}
	}
	n.checkStale(r, time.Now())
	n.checkLocal(r)
	n.record(started, r)
	if n.OnResult != nil {
		n.OnResult(r)
	}
	return r
}

func (n *Node) poll(ctx context.Context) *Result {
	r := &Result{}
	cands, err := n.manifests(ctx, r)
	if len(cands) == 0 {
		r.Err = err
		return r
	}
	// The highest serial first (sources.go); a candidate refused or failing
	// to download gives way to the next.
	var first *Result
	for _, c := range cands {
		cr := &Result{Bytes: r.Bytes}
		n.src = c.t
		n.follow(ctx, c.m, cr)
		r.Bytes = cr.Bytes
		if cr.Err == nil {
			cr.From = c.t.Name()
			n.following = cr.From
			return cr
		}
		if first == nil {
			first = cr
		}
		if len(cands) > 1 {
			n.Log.WithError(cr.Err).WithField("head", c.t.Name()).Warn("mirror: not following this head's manifest; trying the next source")
		}
	}
	first.Bytes = r.Bytes
	return first
}

// follow judges one head's verified manifest against what this node
// accepted before, and installs or touches accordingly.
func (n *Node) follow(ctx context.Context, m *publish.Manifest, r *Result) {
	r.Manifest = m

	live, liveErr := n.liveState()
	r.Meta = live.meta
	// What the head was last trusted for: the last accepted manifest
	// (state file), else the live snapshot itself. A local rollback
	// (syncd rollback) gives the live file a serial of the node's own;
	// the head's serials are still judged against the head's.
	acc := n.accepted()
	if liveErr != nil {
		acc = nil // no live snapshot (first start, or removed by hand): take what the head signed
	}
	if acc == nil && liveErr == nil {
		acc = &accepted{Serial: live.meta.Serial, SHA256: live.sum, SourceContact: live.mtime}
	}
	// Replays and failovers (the rule is in sources.go): a serial no
	// higher than the highest this node ever accepted (the floor), other
	// than the accepted snapshot itself, is taken only when it says
	// something newer: a later source_contact than the accepted one.
	if acc != nil {
		floor := max(acc.Floor, acc.Serial)
		same := m.Serial == acc.Serial && m.SHA256 == acc.SHA256
		newerContact := m.SourceContact.Truncate(time.Millisecond).After(acc.SourceContact.Truncate(time.Millisecond))
		switch {
		case same || m.Serial > floor:
		case !newerContact && m.Serial < floor:
			r.Err = refuse("manifest serial %d is lower than the live snapshot's %d, and its source_contact %s is not newer than the accepted %s (a replayed older manifest)",
				m.Serial, floor, m.SourceContact.UTC().Format(time.RFC3339Nano), acc.SourceContact.UTC().Format(time.RFC3339Nano))
			return
		case !newerContact:
			r.Err = refuse("manifest names snapshot %s… under serial %d, which this node accepted before as another snapshot, and its source_contact is not newer (a replayed manifest)", m.SHA256[:12], m.Serial)
			return
		default:
			n.Log.WithFields(logrus.Fields{"serial": m.Serial, "highest_accepted_serial": floor, "head": n.src.Name(),
				"source_contact": m.SourceContact.UTC().Format(time.RFC3339)}).
				Warn("mirror: a serial no higher than accepted before, with a newer source_contact: another head took over (or the head started over); following it")
		}
	}
	switch {
	case liveErr == nil && m.SHA256 == live.sum:
		contact := m.SourceContact.Truncate(time.Millisecond)
		if acc.SHA256 == m.SHA256 && contact.Before(acc.SourceContact.Truncate(time.Millisecond)) {
			r.Err = refuse("manifest source_contact %s is older than the live snapshot's %s (a replayed older manifest)", m.SourceContact.Format(time.RFC3339Nano), acc.SourceContact.UTC().Format(time.RFC3339Nano))
			return
		}
		if contact.After(live.mtime.Truncate(time.Millisecond)) {
			if err := touch(n.Live, m.SourceContact); err != nil {
				r.Err = err
				return
			}
			r.Touched = true
			// Our own utimes moved the ctime, not the bytes.
			if id, err := statID(n.Live); err == nil {
				n.liveID = id
			}
		}
		n.accept(m)
		r.Outcome = commit.Unchanged
		return
	case liveErr == nil && pinned(n.Live):
		// `syncd rollback` on this node pinned its live snapshot.
		n.Log.WithFields(logrus.Fields{"serial": m.Serial}).
			Warn("mirror: pinned by a rollback; not installing the head's snapshot; `syncd resume` follows the head again")
		r.Outcome = Pinned
		return
	}
	if liveErr != nil && !errors.Is(liveErr, os.ErrNotExist) {
		n.Log.WithError(liveErr).Warn("mirror: live snapshot unreadable; replacing it")
	}
	if m.Size > n.MaxSize || m.ObjectSize > n.MaxSize {
		r.Err = refuse("snapshot of %d bytes (%d transferred) is larger than max_size %d", m.Size, m.ObjectSize, n.MaxSize)
		return
	}
	base := ""
	if liveErr == nil {
		base = live.sum
	}
	got, meta, err := n.download(ctx, m, base, r)
	r.Bytes += got
	if err != nil {
		r.Err = err
		return
	}
	n.accept(m)
	r.Meta, r.Outcome = meta, commit.Committed
	n.Log.WithFields(logrus.Fields{"serial": meta.Serial, "users": meta.Users, "groups": meta.Groups,
		"bytes": got, "from": n.src.Name(), "spare": r.Spare}).Info("mirror: installed snapshot")
}

// download fetches m's snapshot next to the live one (through a delta
// from the live snapshot base when the manifest has one, else whole),
// checks it and installs it.
func (n *Node) download(ctx context.Context, m *publish.Manifest, base string, r *Result) (int64, snapshot.Meta, error) {
	dir := filepath.Dir(n.Live)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, snapshot.Meta{}, err
	}
	var got int64
	candidate := ""
	var pages *livePages // the candidate's page hashes
	proven := false      // every page checked against the signed page root
	var written []int64  // the pages the delta wrote (nil: no delta)
	if d := m.DeltaFrom(base); base != "" && d != nil {
		c, p, pr, w, spared, g, err := n.fetchDelta(ctx, m, d)
		got += g
		if err == nil {
			candidate, pages, proven, written, r.Spare = c, p, pr, w, spared
		} else {
			n.Log.WithError(err).Warn("mirror: delta not usable; fetching the full snapshot")
		}
	}
	if candidate == "" {
		c, p, g, err := n.fetchFull(ctx, m)
		got += g
		if err != nil {
			return got, snapshot.Meta{}, err
		}
		candidate, pages = c, p
	}
	defer os.Remove(candidate)
	// The file arrives with the head's freshness: its mtime is the
	// manifest's source_contact from the first moment it is live.
	if err := touch(candidate, m.SourceContact); err != nil {
		return got, snapshot.Meta{}, err
	}
	// Proven: byte for byte the head's verified file (the signed page
	// root): the reader opens it and reads its meta, no enumeration.
	opts := snapshot.InstallOptions{Proven: proven}
	if written != nil && base != "" && n.liveSum == base && n.liveMeta.Serial > 0 {
		// The live file's history entry becomes a reverse delta against
		// this one (snapshot/reverse.go): its inode, the next spare, then
		// has no name in the history.
		opts.Reverse = &snapshot.Reverse{Serial: n.liveMeta.Serial, SHA256: base, Next: m.SHA256,
			Pages: written, PageSize: publish.PageSize}
	}
	opts.Accept = func(meta snapshot.Meta) error {
		if meta.Serial != m.Serial {
			return fmt.Errorf("its serial is %d, the manifest says %d", meta.Serial, m.Serial)
		}
		// The live file, about to be replaced, becomes the spare of the
		// next delta (spare.go) when this one says what differs.
		if written != nil && base != "" {
			if err := n.keepSpare(); err != nil {
				n.Log.WithError(err).Debug("mirror: not keeping a spare")
				n.dropSpareLinks()
			}
		} else {
			n.dropSpareLinks()
		}
		return nil
	}
	meta, err := snapshot.Install(candidate, n.Live, opts)
	if err != nil {
		n.dropSpare()
		return got, snapshot.Meta{}, refuse("%v", err)
	}
	if written != nil && base != "" {
		if err := n.spareInstalled(base, m.SHA256, written); err != nil {
			n.Log.WithError(err).Debug("mirror: not keeping a spare")
			n.dropSpare()
		}
	}
	// The live file is the candidate, checked to hash to m.SHA256: the
	// next poll need not hash it again, nor the next delta all its pages.
	// Its identity after the rename and the history links (both move
	// the ctime).
	n.liveID, n.liveSum, n.liveMeta = fileID{}, "", snapshot.Meta{}
	if id, err := statID(n.Live); err == nil {
		n.liveID, n.liveSum, n.liveMeta = id, m.SHA256, meta
	}
	if written == nil || base == "" {
		if err := n.spareCopy(); err != nil {
			n.Log.WithError(err).Debug("mirror: not keeping a spare")
			n.dropSpare()
		}
	}
	if pages != nil {
		pages.sum = m.SHA256
	}
	n.savePages(pages)
	return got, meta, nil
}

// fetchFull downloads m's full file and returns the checked snapshot
// and its page hashes.
func (n *Node) fetchFull(ctx context.Context, m *publish.Manifest) (string, *livePages, int64, error) {
	c, got, err := n.fetchFullFile(ctx, m)
	if err != nil {
		return "", nil, got, err
	}
	p, err := checkSnapshot(c, m)
	if err != nil {
		os.Remove(c)
		return "", nil, got, err
	}
	return c, p, got, nil
}

func (n *Node) fetchFullFile(ctx context.Context, m *publish.Manifest) (string, int64, error) {
	obj, err := os.CreateTemp(filepath.Dir(n.Live), "."+filepath.Base(n.Live)+".fetch-*")
	if err != nil {
		return "", 0, err
	}
	defer os.Remove(obj.Name())
	defer obj.Close()
	h := sha256.New()
	got, err := n.src.Fetch(ctx, m.Object, m.ObjectSize, io.MultiWriter(obj, h))
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF) || err == nil && got < m.ObjectSize:
		return "", got, refuse("truncated transfer of %s: %d of %d bytes", m.Object, got, m.ObjectSize)
	case errors.Is(err, errTooLarge):
		return "", got, refuse("%s is larger than the manifest's %d bytes", m.Object, m.ObjectSize)
	case err != nil:
		return "", got, fmt.Errorf("fetch %s from %s: %w", m.Object, n.src.Name(), err)
	}
	if sum := hex.EncodeToString(h.Sum(nil)); sum != m.ObjectSHA256 {
		return "", got, refuse("%s has SHA-256 %s…, the signed manifest says %s… (modified in transit or at rest)", m.Object, sum[:12], m.ObjectSHA256[:12])
	}
	var candidate string
	if m.Compression == "zstd" {
		if candidate, err = n.unpack(obj, m); err != nil {
			return "", got, err
		}
	} else {
		if err := obj.Close(); err != nil {
			return "", got, err
		}
		// Keep the fetched file as the candidate (the deferred Remove of
		// its old name then finds nothing).
		candidate = obj.Name() + ".db"
		if err := os.Rename(obj.Name(), candidate); err != nil {
			return "", got, err
		}
	}
	return candidate, got, nil
}

// checkSnapshot compares a candidate with the manifest's size and hash
// (and page root, when the manifest has one) and returns its page hashes.
func checkSnapshot(candidate string, m *publish.Manifest) (*livePages, error) {
	sum, size, hashes, err := publish.HashFilePages(candidate)
	if err != nil {
		return nil, err
	}
	if size != m.Size || sum != m.SHA256 {
		return nil, refuse("snapshot is %d bytes with SHA-256 %s…, the signed manifest says %d bytes, %s…", size, sum[:12], m.Size, m.SHA256[:12])
	}
	if m.PageRoot != "" && publish.PageRoot(hashes) != m.PageRoot {
		return nil, refuse("snapshot's page hashes do not give the signed manifest's page_root %s…", m.PageRoot[:12])
	}
	return &livePages{sum: sum, size: size, hashes: hashes}, nil
}

// fetchDelta fetches d, applies it to a copy of the live snapshot and
// checks the result against the manifest: page by page against its
// page_root when the live file's page hashes are at hand (pages.go;
// proven), else by hashing the whole result. It returns the result's
// page hashes. Any error means: fetch the full file instead.
func (n *Node) fetchDelta(ctx context.Context, m *publish.Manifest, d *publish.Delta) (string, *livePages, bool, []int64, bool, int64, error) {
	var buf bytes.Buffer
	h := sha256.New()
	got, err := n.src.Fetch(ctx, d.Object, d.Size, io.MultiWriter(&buf, h))
	if err != nil {
		return "", nil, false, nil, false, got, err
	}
	if got != d.Size || hex.EncodeToString(h.Sum(nil)) != d.SHA256 {
		return "", nil, false, nil, false, got, fmt.Errorf("%s: %d bytes, SHA-256 differs from the signed manifest's", d.Object, got)
	}
	// The spare brought to the live file's bytes (spare.go), else a copy:
	// a reflink where the file system shares extents, else an in-kernel
	// copy (no pass of the file through this process).
	dst := n.takeSpare(d.From)
	spared := dst != nil
	if !spared {
		if dst, err = os.CreateTemp(filepath.Dir(n.Live), "."+filepath.Base(n.Live)+".delta-*"); err != nil {
			return "", nil, false, nil, false, got, err
		}
	}
	ok := false
	defer func() {
		if !ok {
			dst.Close()
			os.Remove(dst.Name())
		}
	}()
	if !spared {
		if _, err := snapshot.CloneFile(n.Live, dst.Name()); err != nil {
			return "", nil, false, nil, false, got, err
		}
	}
	var pages *livePages
	var written []int64 // nil after the apply: the pages it wrote are not known (no spare)
	base := n.loadPages(d.From)
	if m.PageRoot != "" && base != nil {
		pages, written, err = applyProven(dst, buf.Bytes(), n.MaxSize, base, m.PageRoot)
		if err == nil && pages.size != m.Size {
			err = fmt.Errorf("%w: the result is %d bytes, the signed manifest says %d", publish.ErrDelta, pages.size, m.Size)
		}
		if errors.Is(err, errPageRoot) {
			n.Log.WithError(err).Warn("mirror: checking the whole file after the delta")
			pages, err = nil, nil // and written nil
		}
	} else {
		written = []int64{}
		_, err = publish.ApplyDeltaPages(dst, buf.Bytes(), n.MaxSize, func(idx int, _ []byte) {
			written = append(written, int64(idx))
		})
	}
	if err != nil {
		return "", nil, false, nil, false, got, err
	}
	if err := dst.Close(); err != nil {
		return "", nil, false, nil, false, got, err
	}
	proven := pages != nil
	if !proven {
		if pages, err = checkSnapshot(dst.Name(), m); err != nil {
			return "", nil, false, nil, false, got, err
		}
	}
	ok = true
	return dst.Name(), pages, proven, written, spared, got, nil
}

// unpack decompresses the fetched file, bounded to the announced size.
func (n *Node) unpack(obj *os.File, m *publish.Manifest) (string, error) {
	if _, err := obj.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	dec, err := zstd.NewReader(obj, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(m.Size)+(64<<20)))
	if err != nil {
		return "", err
	}
	defer dec.Close()
	out, err := os.CreateTemp(filepath.Dir(n.Live), "."+filepath.Base(n.Live)+".new-*")
	if err != nil {
		return "", err
	}
	got, err := copyMax(out, dec, m.Size)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil || got != m.Size {
		os.Remove(out.Name())
		if err == nil {
			err = fmt.Errorf("%d of %d bytes", got, m.Size)
		}
		return "", refuse("unpacking %s: %v", m.Object, err)
	}
	return out.Name(), nil
}

// Pinned: a rollback on this node holds its live snapshot.
const Pinned = "pinned"

// pinned reports whether `syncd rollback` pinned the live snapshot (the
// pin file beside it, syncd/history).
func pinned(live string) bool {
	_, err := os.Stat(live + ".pin")
	return err == nil
}

// accepted is the last manifest this node accepted from the head, kept in
// <cache_path>.mirror.json: the floor for replays.
type accepted struct {
	Serial        int64     `json:"serial"`
	SHA256        string    `json:"sha256"`
	SourceContact time.Time `json:"source_contact"`
	From          string    `json:"from,omitempty"` // the source it came from
	// Floor is the highest serial this node ever accepted: a manifest at
	// or below it (other than the accepted one) needs a newer
	// source_contact (sources.go).
	Floor int64 `json:"floor,omitempty"`
	// Signed is the newest signature time verified (the head's clock),
	// SignedSeen when this node first verified it (its own clock), and
	// PollSeconds the head's poll interval (fresh.go).
	Signed      time.Time `json:"signed,omitzero"`
	SignedSeen  time.Time `json:"signed_seen,omitzero"`
	PollSeconds int64     `json:"poll_seconds,omitempty"`
	// Live is the live file's identity when its hash was last known.
	Live *liveIdentity `json:"live,omitempty"`
}

// liveIdentity: the live file's SHA-256, serial and counts, the fileID it
// had then and the syncd version that read it. A process that finds the
// same fileID under the same version (`syncd mirror --once` from a timer,
// or a restarted daemon) takes them instead of hashing the whole file
// (80 MB at 100,000 users, most of such a poll's CPU) and opening it
// through the C reader; the daemon keeps the same in memory
// (Node.liveMeta). Kept only when the file system stamps ctime below the
// second (Nsec != 0; ext4, XFS, btrfs, tmpfs): with whole-second stamps a
// write in the same second would not show, and the file is read as
// before. A new version reads the file again (its C reader may not read
// the old schema: then the node replaces it). The live file's bytes are
// proven by the head's signature and the C reader when installed; this
// only decides "the same file as then".
type liveIdentity struct {
	Dev     uint64 `json:"dev"`
	Ino     uint64 `json:"ino"`
	Size    int64  `json:"size"`
	CtimeN  int64  `json:"ctime_ns"`
	SHA256  string `json:"sha256"`
	Serial  int64  `json:"serial"`
	Users   int    `json:"users"`
	Groups  int    `json:"groups"`
	Version string `json:"version,omitempty"`
}

func (l *liveIdentity) id() fileID {
	return fileID{dev: l.Dev, ino: l.Ino, size: l.Size, ctime: l.CtimeN}
}

// kept is the state file's record of the live file if the file still
// has the identity it had then, under this version.
func (n *Node) kept(id fileID) *liveIdentity {
	a := n.accepted()
	if a == nil || a.Live == nil || a.Live.id() != id || id.ctime%int64(time.Second) == 0 ||
		len(a.Live.SHA256) != 64 || a.Live.Serial < 1 || a.Live.Version != n.Version {
		return nil
	}
	return a.Live
}

func (n *Node) statePath() string { return n.Live + ".mirror.json" }

func (n *Node) accepted() *accepted {
	b, err := os.ReadFile(n.statePath())
	if err != nil {
		return nil
	}
	var a accepted
	if json.Unmarshal(b, &a) != nil || a.Serial < 1 {
		return nil
	}
	return &a
}

// accept records m as the last accepted manifest (temp file, rename).
func (n *Node) accept(m *publish.Manifest) {
	floor := m.Serial
	a := n.accepted()
	if a != nil {
		floor = max(floor, a.Floor, a.Serial)
	}
	signed, seen := signatureSeen(a, m, time.Now().UTC())
	var live *liveIdentity
	if n.liveSum != "" && n.liveMeta.Serial > 0 && n.liveID.ctime%int64(time.Second) != 0 {
		live = &liveIdentity{Dev: n.liveID.dev, Ino: n.liveID.ino, Size: n.liveID.size, CtimeN: n.liveID.ctime, SHA256: n.liveSum,
			Serial: n.liveMeta.Serial, Users: n.liveMeta.Users, Groups: n.liveMeta.Groups, Version: n.Version}
	}
	b, _ := json.Marshal(accepted{Serial: m.Serial, SHA256: m.SHA256, SourceContact: m.SourceContact, From: n.src.Name(), Floor: floor,
		Signed: signed, SignedSeen: seen, PollSeconds: m.PollSeconds, Live: live})
	tmp := n.statePath() + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err == nil {
		if err := os.Rename(tmp, n.statePath()); err == nil {
			return
		}
	}
	os.Remove(tmp)
	n.Log.Warn("mirror: cannot record the accepted manifest in " + n.statePath())
}

type liveState struct {
	meta  snapshot.Meta
	sum   string
	mtime time.Time
}

// liveState reads the live snapshot's serial (through the C reader), hash
// (cached while the file's identity is unchanged) and mtime.
func (n *Node) liveState() (liveState, error) {
	var s liveState
	fi, err := os.Stat(n.Live)
	if err != nil {
		return s, err
	}
	id := idOf(fi)
	s.mtime = fi.ModTime()
	if id != n.liveID || n.liveSum == "" || n.liveMeta.Serial < 1 {
		n.liveID, n.liveSum, n.liveMeta = fileID{}, "", snapshot.Meta{}
		var sum string
		var meta snapshot.Meta
		if k := n.kept(id); k != nil {
			sum, meta = k.SHA256, snapshot.Meta{Serial: k.Serial, Users: k.Users, Groups: k.Groups}
		} else {
			if meta, err = readLiveMeta(n.Live); err != nil {
				return s, err
			}
			if sum, _, err = publish.HashFile(n.Live); err != nil {
				return s, err
			}
		}
		n.liveID, n.liveSum, n.liveMeta = id, sum, meta
	}
	s.meta, s.sum = n.liveMeta, n.liveSum
	return s, nil
}

// readLiveMeta opens the live snapshot through the C reader (its checks:
// header, schema, the NSS index linked page by page) and reads its serial
// and counts.
func readLiveMeta(path string) (snapshot.Meta, error) {
	var m snapshot.Meta
	r, err := cache.Open(path)
	if err != nil {
		return m, err
	}
	defer r.Close()
	for k, dst := range map[string]*int{"users": &m.Users, "groups": &m.Groups} {
		var v int
		if str, err := r.Meta(k); err == nil {
			fmt.Sscan(str, &v)
		}
		*dst = v
	}
	ser, err := r.Meta("serial")
	if err != nil {
		return m, err
	}
	if _, err := fmt.Sscan(ser, &m.Serial); err != nil || m.Serial < 1 {
		return m, fmt.Errorf("live snapshot serial %q", ser)
	}
	return m, nil
}

// record writes the poll into the status file, the head's shape: last
// attempt, result, last success (a manifest accepted), last commit (a
// snapshot installed), last error, failures in a row, serial and counts.
func (n *Node) record(started time.Time, r *Result) {
	st, err := commit.ReadStatus(n.StatusPath)
	if err != nil {
		st = &commit.Status{}
	}
	st.Version, st.Source, st.CachePath = n.Version, "mirror "+n.followingName(), n.Live
	st.LastAttempt, st.LastResult, st.Full = started, r.Outcome, false
	st.AfterCommitError = ""
	st.Added, st.Changed, st.Removed, st.Rejected, st.Filtered, st.RejectedReason = 0, 0, 0, 0, 0, nil
	if r.Err != nil {
		st.LastError = r.Err.Error()
		st.ConsecutiveFailures++
		n.Log.WithError(r.Err).WithField("result", r.Outcome).Error("mirror: keeping the live snapshot")
	} else {
		st.LastError, st.ConsecutiveFailures = "", 0
		st.LastSuccess = started
		if r.Outcome == commit.Committed {
			st.LastCommit = started
		}
	}
	if r.Meta.Serial > 0 {
		st.Serial, st.Users, st.Groups = r.Meta.Serial, r.Meta.Users, r.Meta.Groups
	}
	if a := n.accepted(); a != nil {
		st.HeadSerial, st.LastSourceContact = a.Serial, a.SourceContact
	}
	st.HeadSigned, st.SignatureSeen = r.HeadSigned, r.SignatureSeen
	st.StaleAfterSeconds = int64(r.StaleAfter / time.Second)
	st.LocalConflicts = r.LocalConflicts
	st.FetchSeconds = time.Since(started).Seconds()
	if err := commit.WriteStatus(n.StatusPath, st); err != nil {
		n.Log.WithError(err).Error("mirror: cannot write the status file")
	}
}

// touch sets path's mtime to t, the head's last successful contact with
// the identity source (snapshot.Touch: the shared freshness contract).
func touch(path string, t time.Time) error {
	if t.IsZero() {
		return nil
	}
	return snapshot.Touch(path, t)
}
