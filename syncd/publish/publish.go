package publish

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/scimbridge/scimbridge/syncd/atomicfile"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync/atomic"
	"syscall"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/scimbridge/scimbridge/syncd/snapshot"
)

// Uploader copies published files somewhere else as well (an S3 bucket).
type Uploader interface {
	Put(ctx context.Context, name, path string) error
	Remove(ctx context.Context, name string) error
	Name() string
}

// Publisher publishes the head's live snapshot into Dir.
type Publisher struct {
	Dir      string
	Key      ed25519.PrivateKey
	Compress string // auto, zstd or none
	Keep     int    // snapshot files kept besides the current one
	// Deltas is how many recent snapshots get a page delta to the new one
	// (0: none).
	Deltas int
	Upload Uploader
	// Interval is the head's poll_interval, signed into every manifest
	// (PollSeconds): nodes derive how old a signature may grow from it.
	Interval time.Duration

	lru *lru.Cache[string, [][32]byte] // page hashes of recent snapshots

	// The last published file's identity (device, inode, size; not its
	// mtime, which freshness touches) and what it hashed to: an
	// unchanged live file is not copied or hashed again.
	last    fileID
	lastObj *Manifest
	// frames: the last .db.zst this publisher wrote, frame by frame
	// (frames.go). FramesReused of the last object's FramesWritten
	// frames were copied from the one before.
	frames                      frames
	FramesReused, FramesWritten int
	// Linked: the last object was read from a hard link to the live
	// file this process verified, not from a copy (link).
	Linked bool
	// lastSrc: the live file the last object was made from (as opened),
	// lastSum its SHA-256: the base of the next object's page hashes
	// when the writer says which pages changed since (pages.go).
	lastSrc fileID
	lastSum string
	// PagesHashed: pages of the last object whose hash was computed
	// (the others were the previous object's).
	PagesHashed int
}

// fileID is a file's device, inode and size, as the snapshot writer
// names the files it changed (snapshot.PageChange).
type fileID = snapshot.FileIdentity

// Result is what one Publish did.
type Result struct {
	Manifest *Manifest
	// NewObject: a snapshot file was written (a new snapshot);
	// Resigned: only the manifest was re-signed (a new source_contact);
	// neither: nothing to do.
	NewObject, Resigned bool
	// Bytes written into Dir (snapshot file and manifest).
	Bytes int64
}

// Publish makes Dir describe the snapshot at live, last in contact with
// the source at contact: a new snapshot gets a content-addressed file and
// a manifest naming it; an unchanged snapshot with a newer contact only
// gets a re-signed manifest. The snapshot file is written and synced
// before the manifest that names it, so a node never sees a manifest
// whose file is missing.
func (p *Publisher) Publish(ctx context.Context, live string, contact time.Time) (*Result, error) {
	if err := os.MkdirAll(p.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("publish: %w", err)
	}
	unlock, err := p.lockDir(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	prev := p.current()
	id, err := statID(live)
	if err != nil {
		return nil, fmt.Errorf("publish: %w", err)
	}
	res := &Result{}
	obj := p.lastObj
	if obj == nil || id != p.last || !p.exists(obj.Object) {
		obj, err = p.writeObject(live, prev)
		if err != nil {
			return nil, err
		}
		p.last, p.lastObj = id, obj
		res.NewObject = prev == nil || prev.SHA256 != obj.SHA256
		res.Bytes += obj.ObjectSize
	}
	m := *obj
	if contact.IsZero() {
		contact = m.Created // never in contact since: as old as the snapshot
	}
	m.SourceContact = contact.UTC().Truncate(time.Millisecond)
	if prev != nil && prev.SHA256 == m.SHA256 && prev.Serial == m.Serial && !m.SourceContact.After(prev.SourceContact) {
		res.Manifest, res.NewObject = prev, false
		return res, nil // nothing new to say
	}
	if prev != nil && m.Serial < prev.Serial {
		return nil, fmt.Errorf("publish: the live snapshot's serial %d is lower than the published %d: nodes would refuse it as a replay; commit a new snapshot (syncd sync --once --force) instead of renaming an old one in", m.Serial, prev.Serial)
	}
	m.Signed = time.Now().UTC().Truncate(time.Millisecond)
	m.PollSeconds = int64(p.Interval / time.Second)
	b, err := Sign(&m, p.Key)
	if err != nil {
		return nil, fmt.Errorf("publish: sign: %w", err)
	}
	if p.Upload != nil && res.NewObject {
		names := []string{m.Object}
		for _, d := range m.Deltas {
			names = append(names, d.Object)
		}
		for _, name := range names {
			if err := p.Upload.Put(ctx, name, filepath.Join(p.Dir, name)); err != nil {
				return nil, fmt.Errorf("publish: upload %s to %s: %w", name, p.Upload.Name(), err)
			}
		}
	}
	if err := writeAtomic(filepath.Join(p.Dir, ManifestName), b); err != nil {
		return nil, err
	}
	res.Bytes += int64(len(b))
	if p.Upload != nil {
		if err := p.Upload.Put(ctx, ManifestName, filepath.Join(p.Dir, ManifestName)); err != nil {
			return nil, fmt.Errorf("publish: upload %s to %s: %w", ManifestName, p.Upload.Name(), err)
		}
	}
	res.Manifest, res.Resigned = &m, !res.NewObject
	if res.NewObject {
		p.prune(ctx, &m)
	}
	return res, nil
}

// current is the manifest now in Dir, if it is ours and readable.
func (p *Publisher) current() *Manifest {
	b, err := os.ReadFile(filepath.Join(p.Dir, ManifestName))
	if err != nil {
		return nil
	}
	m, err := Open(b, p.Key.Public().(ed25519.PublicKey))
	if err != nil {
		return nil
	}
	return m
}

func (p *Publisher) exists(name string) bool {
	_, err := os.Stat(filepath.Join(p.Dir, name))
	return err == nil
}

// writeObject copies live into Dir (hashing it on the way), checks the
// copy through the C reader, compresses it when that pays, and renames
// it to its content address. The copy is what gets verified and hashed,
// so a snapshot renamed in meanwhile cannot mix two files. The file this
// process's writer verified is hard-linked instead of copied (link): the
// same inode, never changed once in place, hashed through the one open
// descriptor.
func (p *Publisher) writeObject(live string, prev *Manifest) (*Manifest, error) {
	src, err := os.Open(live)
	if err != nil {
		return nil, fmt.Errorf("publish: %w", err)
	}
	defer src.Close()
	// The file this process's writer just verified and renamed into
	// place (the usual case after a commit): the copy's meta is checked
	// through the C reader, not the whole directory a second time.
	verified := snapshot.VerifiedHere(src)
	srcID, _ := fileIDOf(src)
	// What the in-place writer changed since the file the last object
	// was made from (pages.go): nil when unknown.
	change := p.changeSince(src, verified)
	// That very file is linked, not copied (below); any other is copied.
	tmpPath, linked := "", false
	if verified {
		tmpPath, linked = p.link(live, src)
	}
	p.Linked = linked
	h := sha256.New()
	var n int64
	if linked {
		defer os.Remove(tmpPath)
		if n, err = io.Copy(h, src); err != nil {
			return nil, fmt.Errorf("publish: read %s: %w", live, err)
		}
	} else {
		if tmpPath, n, err = p.copyTemp(src, h); tmpPath != "" {
			defer os.Remove(tmpPath)
		}
		if err != nil {
			return nil, fmt.Errorf("publish: copy %s: %w", live, err)
		}
	}
	verify := snapshot.VerifyFile
	if verified {
		verify = snapshot.VerifyMeta
	}
	meta, err := verify(tmpPath)
	if err != nil {
		return nil, fmt.Errorf("publish: the live snapshot %s: %w", live, err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	m := &Manifest{
		Format: Format, Serial: meta.Serial, SHA256: sum, Size: n, Created: meta.CreatedAt,
		Users: meta.Users, Groups: meta.Groups, Associations: meta.Associations,
		Object: sum + ".db", ObjectSize: n, ObjectSHA256: sum, Compression: "none",
	}
	// The full file's compression and the page deltas read the same
	// verified copy and share nothing else: they run side by side (on a
	// head with two cores the slower of the two, not their sum, is on the
	// path from the commit to the signed manifest).
	var zdone chan zipped
	// The compressed object's size, once known: a delta still being
	// written stops at half of it (writeDeltas), as the manifest would
	// drop it below.
	var object atomic.Int64
	if p.Compress != "none" {
		zdone = make(chan zipped, 1)
		last := p.frames
		same := unchangedRange(change, last.src)
		go func() {
			var z zipped
			z, z.frames, z.reused, z.err = compressFile(tmpPath, last, same)
			if z.err == nil && (p.Compress == "zstd" || z.size*10 <= n*9) {
				object.Store(z.size)
			}
			zdone <- z
		}()
	}
	if p.Deltas > 0 {
		if err := p.addDeltas(m, tmpPath, prev, change, &object); err != nil {
			if zdone != nil {
				if z := <-zdone; z.err == nil {
					os.Remove(z.path)
				}
			}
			return nil, err
		}
	}
	objPath := tmpPath
	var zframes frames // the frames of the object, once published
	if zdone != nil {
		z := <-zdone
		if z.err != nil {
			return nil, z.err
		}
		defer os.Remove(z.path)
		p.FramesReused, p.FramesWritten = z.reused, len(z.frames.at)
		if p.Compress == "zstd" || z.size*10 <= n*9 {
			objPath, m.Object, m.ObjectSize, m.ObjectSHA256, m.Compression = z.path, sum+".db.zst", z.size, z.sum, "zstd"
			zframes = z.frames
		}
	}
	if p.Deltas > 0 {
		// A delta is only worth it when much smaller than the full file.
		kept := m.Deltas[:0]
		for _, d := range m.Deltas {
			if d.Size*2 <= m.ObjectSize {
				kept = append(kept, d)
			}
		}
		m.Deltas = kept
	}
	dst := filepath.Join(p.Dir, m.Object)
	if linked && objPath == tmpPath {
		// Served uncompressed: the object gets an inode of its own (the
		// live file's mtime is the source's contact time, touched on
		// every poll).
		if _, err := src.Seek(0, io.SeekStart); err != nil {
			return nil, fmt.Errorf("publish: %w", err)
		}
		own, _, err := p.copyTemp(src, io.Discard)
		if own != "" {
			defer os.Remove(own)
		}
		if err != nil {
			return nil, fmt.Errorf("publish: copy %s: %w", live, err)
		}
		objPath = own
	}
	if err := os.Chmod(objPath, 0o644); err != nil {
		return nil, fmt.Errorf("publish: %w", err)
	}
	p.lastSrc, p.lastSum = srcID, sum
	if _, err := os.Stat(dst); err == nil {
		return m, nil // the same content is already there (content-addressed)
	}
	if err := os.Rename(objPath, dst); err != nil {
		return nil, fmt.Errorf("publish: %w", err)
	}
	// The frames of the file this publisher wrote, for the next commit
	// (frames.go); a file found there already is never copied from.
	p.frames = frames{}
	if zframes.at != nil {
		if id, err := statID(dst); err == nil {
			p.frames = frames{path: dst, id: id, at: zframes.at, src: srcID, seq: zframes.seq}
		}
	}
	return m, syncDir(p.Dir)
}

// addDeltas records the new snapshot's page hashes and publishes deltas
// to it from the previous manifest's snapshot and the bases of its
// deltas (the last Deltas snapshots).
func (p *Publisher) addDeltas(m *Manifest, path string, prev *Manifest, change *snapshot.PageChange, object *atomic.Int64) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	hashes, err := p.hashPages(f, change)
	f.Close()
	if err != nil {
		return fmt.Errorf("publish: page hashes: %w", err)
	}
	p.pages().Add(m.SHA256, hashes)
	m.PageRoot = PageRoot(hashes)
	if prev == nil {
		return nil
	}
	if prev.SHA256 == m.SHA256 {
		m.Deltas = prev.Deltas // the same snapshot again (a restart)
		return nil
	}
	bases := []string{prev.SHA256}
	for _, d := range prev.Deltas {
		bases = append(bases, d.From)
	}
	m.Deltas = p.writeDeltas(path, m.SHA256, hashes, m.Size, m.Size, bases, object)
	return nil
}

func (p *Publisher) pages() *lru.Cache[string, [][32]byte] {
	if p.lru == nil {
		p.lru, _ = lru.New[string, [][32]byte](p.Deltas + 2)
	}
	return p.lru
}

// zipped is compressFile's answer.
type zipped struct {
	path   string
	size   int64
	sum    string
	err    error
	frames frames
	reused int
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

// prune removes published snapshot files beyond the Keep newest besides
// current. Files are content-addressed, so one still named by a manifest
// a node fetched a moment ago stays for Keep more publishes.
func (p *Publisher) prune(ctx context.Context, m *Manifest) {
	ents, err := os.ReadDir(p.Dir)
	if err != nil {
		return
	}
	current := m.Object
	inUse := map[string]bool{}
	for _, d := range m.Deltas {
		inUse[d.Object] = true
	}
	type obj struct {
		name string
		mod  time.Time
	}
	var objs []obj
	for _, e := range ents {
		if e.Name() == current || inUse[e.Name()] || !isPublishedFile(e.Name()) {
			continue
		}
		if deltaName.MatchString(e.Name()) {
			// Not named by the current manifest: a node that read the
			// previous one falls back to its (kept) full file.
			os.Remove(filepath.Join(p.Dir, e.Name()))
			if p.Upload != nil {
				p.Upload.Remove(ctx, e.Name())
			}
			continue
		}
		if fi, err := e.Info(); err == nil {
			objs = append(objs, obj{e.Name(), fi.ModTime()})
		}
	}
	sort.Slice(objs, func(i, j int) bool { return objs[i].mod.After(objs[j].mod) })
	for i, o := range objs {
		if i < p.Keep {
			continue
		}
		os.Remove(filepath.Join(p.Dir, o.name))
		if p.Upload != nil {
			p.Upload.Remove(ctx, o.name)
		}
	}
}

// isPublishedFile: a content-addressed snapshot or delta file.
func isPublishedFile(name string) bool {
	return objectName.MatchString(name) || deltaName.MatchString(name)
}

// link makes a temp name in Dir for the open live snapshot src: a hard
// link to its inode, when the file system allows one and the path still
// names src's inode (a commit may rename another file over it between
// the open and the link). The snapshot writers never change a file once
// renamed into place (they write a temp file and rename it), so the
// link holds the bytes src holds, the bytes this process verified
// (snapshot.VerifiedHere): copying 80 MB at 100,000 users and fsyncing
// the copy cost 0.5-1.5 s of wall time per commit on the path to the
// signed manifest. ok false: copy instead.
func (p *Publisher) link(live string, src *os.File) (string, bool) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", false
	}
	name := filepath.Join(p.Dir, ".snapshot-"+hex.EncodeToString(b[:])+".tmp")
	if os.Link(live, name) != nil {
		return "", false
	}
	a, errA := src.Stat()
	l, errL := os.Stat(name)
	if errA != nil || errL != nil || !os.SameFile(a, l) {
		os.Remove(name)
		return "", false
	}
	return name, true
}

// copyTemp copies src into a new temp file in Dir, also into h, and
// syncs it; it returns the temp file's path (to remove) and the size.
func (p *Publisher) copyTemp(src io.Reader, h io.Writer) (string, int64, error) {
	tmp, err := os.CreateTemp(p.Dir, ".snapshot-*.tmp")
	if err != nil {
		return "", 0, err
	}
	n, err := io.Copy(io.MultiWriter(tmp, h), src)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	return tmp.Name(), n, err
}

// fileIDOf is the open file's identity.
func fileIDOf(f *os.File) (fileID, error) {
	fi, err := f.Stat()
	return idOfInfo(fi, err)
}

func statID(path string) (fileID, error) {
	fi, err := os.Stat(path)
	return idOfInfo(fi, err)
}

func idOfInfo(fi os.FileInfo, err error) (fileID, error) {
	if err != nil {
		return fileID{}, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, errors.New("no stat")
	}
	return fileID{Dev: uint64(st.Dev), Ino: st.Ino, Size: fi.Size()}, nil
}

// writeAtomic replaces path with b, world-readable (served files).
func writeAtomic(path string, b []byte) error {
	if err := atomicfile.Write(path, b, 0o644); err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	return nil
}

func syncDir(dir string) error {
	if err := atomicfile.SyncDir(dir); err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	return nil
}

// HashFile returns the SHA-256 of the file at path, in hex.
func HashFile(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}
