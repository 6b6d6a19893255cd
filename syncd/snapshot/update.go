package snapshot

// The incremental writer (issue 18): Update changes a copy of the live
// file in place for what differs between prev and next, and renames it
// over the live file exactly as Write does. Decisions:
//
//   - Copy, then change: the live file is cloned into a temp file in its
//     directory (FICLONE when the file system shares extents, else
//     copy_file_range through io.Copy; ext4 here has no reflink) and the
//     temp file is changed in ONE SQLite transaction of row updates
//     (users, ssh_keys, groups, memberships, user_groups,
//     slurm_associations, meta). No VACUUM, no rebuild: pages SQLite does
//     not write stay byte-identical to the live file's, which is what
//     keeps syncd/publish's page deltas proportional to the change. The
//     live file is never opened for writing: readers map it with
//     immutable=1, and a kill -9 at any point leaves it whole (the temp
//     file is not live until the rename, after fsync, as with Write).
//   - prev must be what the live file holds: Write and Update record a
//     hash of the contents (meta contents_sha256, canonical: users and
//     groups by name, members sorted); Update hashes prev and compares.
//     A file changed under us (another writer, a rollback, a file written
//     before this key existed) is written whole instead.
//   - The NSS index (index.go) is rebuilt in memory under the live blob's
//     geometry: the same seed, bucket counts, chunk 0 and length (a new
//     blob ends with a few spare chunks for that, spareChunks). The blob
//     is then written page by page (indexio.go): after the row
//     transaction, into the private copy, only the overflow pages whose
//     bytes differ, where SQLite's own overwrite of a same-size payload
//     (btreeOverwriteContent) would write them. Until issue 18's fourth
//     session that was one `UPDATE nss_index SET data = ?`, which handed
//     SQLite all 31 MB at 100,000 users to compare page by page; the live
//     blob is likewise read from its pages, not through SQL. That the
//     file then holds what SQLite would have written is not assumed:
//     verification compares the pages (below). A blob that
//     does not fit the geometry (a bucket that cannot list its keys, more
//     packed or large records than the spare chunks hold) falls back to
//     Write.
//   - Verification is proportional and complete in meaning: every page of
//     the copy is compared with the live file; the index's overflow pages
//     that differ must be exactly the chunks that differ in memory (so
//     the chain was overwritten in place and stays contiguous), and the
//     other pages that differ are bounded by the number of row changes.
//     Every page that did not change is the live file's, which passed
//     verification when it was written. Through the C reader: meta, the
//     row counts of every table (SQL count), every added, changed or
//     removed user and group by name and by id (from the index),
//     initgroups and keys of every touched user, the associations of
//     every touched user, and the spread of sample lookups Write makes.
//     No enumeration of the whole directory.
//   - Free pages: deleted rows and replaced member lists leave free pages
//     that later changes reuse (secure_delete=FAST: deleted cells are
//     zeroed within pages written anyway, freed overflow pages are not
//     rewritten just to clear them). A live file more than a quarter
//     free is written whole, compacted.
//   - Any failure on the incremental path (a hash that does not match,
//     a geometry that does not fit, a verification that fails, an I/O
//     error) falls back to a whole Write of next, logged once on stderr
//     with the reason and returned in UpdateInfo. Nothing half-applied is
//     ever renamed over the live file.

// Why full writes churn (measured, TestWhyFullWriteChurns-style, on the
// generated 100,000 users / 10,000 groups): adding one member to one
// small group and writing the whole file again changed 8,470 of 19,860
// pages: all 7,529 pages of the NSS index and 937 of user_groups, though
// only 2 of the index's 7,588 chunks differ in content. user_groups is
// inserted in the directory's order, not its key order, so its B-tree's
// page boundaries depend on every row inserted before; one row a few
// bytes longer moved the boundaries after it and the table ended one page
// longer. The index, inserted last, then started one page later (page
// 12,274 instead of 12,273): every overflow page's number and link
// changed. At 20,000 users the same change happened not to add a page
// (15 pages changed), hence "stable only while the directory is small".
// Update never rebuilds: the index's pages keep their numbers, and the
// rows that change are changed where they are.
//
// What cost in proportion to the directory: CPU. At 100,000 users an
// in-place update took 2.1-3.3 s of CPU (TestBenchUpdate phases): laying
// out the whole index in memory (now patched bucket by bucket,
// patch.go), reading the live blob and digesting prev (now from the
// kept sums, nextHash), handing the 31 MB blob to SQLite (now only the
// differing pages, indexio.go) and the row diff, which put every user and
// group of both directories into maps (0.29 s per change, pprof over
// BenchmarkChangeToManifest; commit.Compute did the same again, 0.18 s).
// The diff now walks only the records TouchedOf finds: both lists merged
// in uid and gid order (validation's order and Load's), records equal in
// every field skipped without a map; lists in another order (a caller's
// own Contents) are diffed whole, as TestTouchedDiffEqualsWholeDiff and
// TestUpdateEqualsWriteInIDOrder check against each other and against a
// whole write. Still whole, and cheap beside the rest: the copy of the
// file (copy_file_range, about 90 ms of kernel CPU per change at 100,000
// users), the page comparison with the live file (which also tells the
// publisher which pages to hash again: PageChange), and the row counts
// the verification reads through SQL. Since issue 18's fifth session the
// live blob is not read from the file nor copied per change: the blob
// this process installed is kept (liveindex.go) and the patch lays its
// chunks over it (newIndex); a user in many groups, whose record is kept
// outside its bucket, is rewritten in its own chunks (largeInPlace).
//
// Large bursts (issue 18, push10: the receiver's load adds 15,000-40,000
// users per commit): the new rows of an update go in 256 to an INSERT
// (insertBatch, the whole write's INSERT text from rows.go), each
// table's in the order a statement per row put them, deletions and
// changes still a statement each. Measured (scratch test: 35,000 users
// with a group each added in place to 60,000; the tree before and after
// built as two test binaries and run alternately, twice, load 4-5): the
// row transaction 2.59 and 1.50 s before, 0.52 and 0.70 s batched. The
// rows are the same (TestLargeBurstInPlaceIsAWholeWrite
// and the equality tests); which free or new page a table takes may
// differ, within verifyPages' bound (every row still counts as a
// statement there). The whole update then took 3.6-4.8 s of CPU and a
// whole write of the same 95,000 users (room 2) 2.7-4.8 s: in place is
// no longer dearer than whole for such a burst, but not clearly cheaper,
// so room planned into the first write of a load (for its last burst
// not to be the outgrown whole write) was not done for it.
//
// What grew with the directory in pages until schema version 3: a
// group's member list was stored whole, comma-separated, in
// groups.members and in the index's group record, so a change to
// slurm-users (90% of the generated directory: every new, deleted or
// renamed user) rewrote that list from the changed name on: about 240
// pages at 100,000 users, 45-90 at 20,000. Since version 3 a list of more
// than 1,000 bytes is NULL in groups.members (its memberships rows are
// the list) and kept in pieces in the index (index.go): such a change
// rewrites one memberships leaf and the few chunks of the pieces around
// the name, whatever the group's size (TestUpdatePagesPerKind).

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"weak"

	"golang.org/x/sys/unix"

	"github.com/scimbridge/scimbridge/syncd/cache"
)

// metaContentsHash is the meta key holding contentsHash of the contents.
const metaContentsHash = "contents_sha256"

// UpdateOptions are Update's optional inputs.
type UpdateOptions struct {
	// SlurmSyncedAt: as WriteWithSlurmSync (zero: not recorded).
	SlurmSyncedAt time.Time
	// PrevDigest, when set, is ContentsDigest(prev) as the caller keeps
	// it (the daemon digests the contents it keeps once, not on every
	// commit: about 0.2 s of CPU at 100,000 users). It must be prev's:
	// Update still compares it with the live file's stored digest.
	PrevDigest string
	// WholeIndex lays the whole NSS index out in memory instead of
	// patching the changed buckets (the path before patch.go; for the
	// benchmark's side-by-side).
	WholeIndex bool
	// KeepIndex: the caller updates this file again (the daemon, the
	// receiver). A whole write then keeps the NSS index blob it wrote as
	// the live one, as an in-place update always does (liveindex.go), so
	// that the next update does not read it back from the file's pages.
	KeepIndex bool
	// Ctx, when set, stops an in-place update between its steps once it
	// is done (SIGTERM): the temp file is removed, the live snapshot
	// stays, and no whole write follows.
	Ctx context.Context
}

// UpdateInfo says how Update wrote the snapshot.
type UpdateInfo struct {
	Incremental bool
	// Fallback is why the file was written whole ("" when in place).
	Fallback string
	// PagesChanged: pages of the new file that differ from the live one
	// (in place only); IndexPages of them hold the NSS index.
	PagesChanged, IndexPages int
	// Copy is how the live file was copied: "reflink" or "copy".
	Copy string
	// IndexLayout: "patched" (only the changed keys' buckets), or
	// "whole: " and why the index was laid out again in memory.
	IndexLayout string
	// Phases is where the time went, in order (in place only).
	Phases []Phase
}

// Phase is one step of an in-place update and its wall time.
type Phase struct {
	Name string
	Took time.Duration
}

// Update publishes next as the new live snapshot at path, where prev is
// what the live snapshot holds (nil: no live snapshot): in place when it
// can (package comment above), else as Write.
func Update(path string, prev, next *Contents) (Meta, error) {
	m, _, err := UpdateWith(path, prev, next, UpdateOptions{})
	return m, err
}

// UpdateWith is Update with options, and reports how it wrote.
func UpdateWith(path string, prev, next *Contents, opt UpdateOptions) (Meta, UpdateInfo, error) {
	if prev == nil {
		m, err := write(path, next, opt.SlurmSyncedAt, opt.KeepIndex)
		return m, UpdateInfo{Fallback: "no live snapshot"}, err
	}
	m, info, err := updateInPlace(path, prev, next, opt)
	if err == nil {
		return m, info, nil
	}
	if opt.Ctx != nil && opt.Ctx.Err() != nil {
		return Meta{}, info, fmt.Errorf("snapshot: stopped before %s was replaced (the live snapshot stays): %w", path, opt.Ctx.Err())
	}
	dropLiveIndex() // the whole write's file is not the kept blob's
	info = UpdateInfo{Fallback: err.Error()}
	if _, seen := fallbackLogged.LoadOrStore(info.Fallback, true); !seen {
		fmt.Fprintf(os.Stderr, "snapshot: writing %s whole instead of in place: %s\n", path, info.Fallback)
	}
	if errors.Is(err, ErrIndexOutgrown) {
		// The directory grew past the live index's buckets: the whole
		// write sizes them for growthRoom times the entries, so that the
		// updates after it fit in place until it grows that much again
		// (index.go, "Room to grow").
		grown := *next
		grown.indexRoom = roomFor(prev, next)
		m, err = write(path, &grown, opt.SlurmSyncedAt, opt.KeepIndex)
		if sum, ok := remembered(&grown); ok {
			remember(next, sum) // the caller keeps next, not the copy
		}
		return m, info, err
	}
	m, err = write(path, next, opt.SlurmSyncedAt, opt.KeepIndex)
	return m, info, err
}

// fallbackLogged: each reason for a whole write is logged once per
// process (a directory whose names crowd the index would otherwise log
// it on every commit); UpdateInfo always carries it.
var fallbackLogged sync.Map

func updateInPlace(path string, prev, next *Contents, opt UpdateOptions) (Meta, UpdateInfo, error) {
	var info UpdateInfo
	t0 := time.Now()
	var stopped error
	phase := func(name string) {
		now := time.Now()
		info.Phases = append(info.Phases, Phase{name, now.Sub(t0)})
		t0 = now
		if opt.Ctx != nil && stopped == nil {
			stopped = opt.Ctx.Err()
		}
	}
	live, err := readLive(path)
	if err != nil {
		dropLiveIndex()
		return Meta{}, info, err
	}
	want := opt.PrevDigest
	if want == "" {
		want = contentsHash(prev)
	}
	if live.hash != want {
		return Meta{}, info, fmt.Errorf("the live snapshot does not hold what the caller read from it (contents hash %.12s, expected %.12s): it changed in between or predates the hash", live.hash, want)
	}
	phase("read live + digest prev")
	if stopped != nil {
		return Meta{}, info, stopped
	}
	geo, err := geometryOf(live.index, live.pageSize)
	if err != nil {
		return Meta{}, info, err
	}
	if why := outgrownBySize(geo, live.pageSize, next); why != "" {
		return Meta{}, info, fmt.Errorf("%w: %s", ErrIndexOutgrown, why)
	}
	d := diffContents(prev, next)
	phase("diff")
	if stopped != nil {
		return Meta{}, info, stopped
	}
	// The changed keys' buckets patched into a copy of the live blob
	// (patch.go); the whole layout in memory when the patch cannot.
	var blob *newIndex
	why := "asked for (UpdateOptions.WholeIndex)"
	if !opt.WholeIndex {
		blob, why = patchIndex(geo, live.pageSize, live.index, d)
	}
	if blob == nil {
		info.IndexLayout = "whole: " + why
		users, groups := indexOf(next, next.userGIDTable())
		whole, err := buildIndexIn(geo, live.pageSize, users, groups)
		if err != nil {
			return Meta{}, info, err
		}
		blob = &newIndex{base: whole}
	} else {
		info.IndexLayout = "patched"
	}
	phase("index in memory")
	if stopped != nil {
		return Meta{}, info, stopped
	}

	created := time.Now().UTC().Truncate(time.Second)
	meta := Meta{
		Serial:        max(assignSerial(path, created), live.serial+1),
		CreatedAt:     created,
		Source:        next.Source,
		SlurmSyncedAt: opt.SlurmSyncedAt.UTC().Truncate(time.Second),
		Users:         len(next.Users),
		Groups:        len(next.Groups),
		Associations:  len(next.Associations),
		NSSIndex:      true,
	}
	for _, u := range next.Users {
		meta.SSHKeys += len(u.SSHKeys)
	}
	for _, g := range next.Groups {
		meta.Memberships += len(g.Members)
	}

	tmpPath, err := tempBeside(path)
	if err != nil {
		return Meta{}, info, err
	}
	published := false
	defer func() {
		if !published {
			removeTemp(tmpPath)
		}
	}()
	if info.Copy, err = CloneFile(path, tmpPath); err != nil {
		return Meta{}, info, err
	}
	phase("copy")
	if stopped != nil {
		return Meta{}, info, stopped
	}
	if err := applyRows(tmpPath, d, prev, next, &meta); err != nil {
		return Meta{}, info, fmt.Errorf("apply the change to %s: %w", tmpPath, err)
	}
	if _, err := writeIndexPages(tmpPath, live.pageSize, live.index, blob); err != nil {
		return Meta{}, info, fmt.Errorf("write the NSS index into %s: %w", tmpPath, err)
	}
	phase("apply")
	if stopped != nil {
		return Meta{}, info, stopped
	}
	if err := syncFile(tmpPath); err != nil {
		return Meta{}, info, err
	}
	if err := os.Chmod(tmpPath, 0o644); err != nil {
		return Meta{}, info, fmt.Errorf("chmod %s: %w", tmpPath, err)
	}
	phase("fsync")
	if stopped != nil {
		return Meta{}, info, stopped
	}
	pages, ixPages, changed, err := verifyPages(path, tmpPath, live, blob, d)
	if err != nil {
		return Meta{}, info, fmt.Errorf("refusing to publish %s in place: %w", path, err)
	}
	phase("compare pages")
	if stopped != nil {
		return Meta{}, info, stopped
	}
	if err := verifyUpdate(tmpPath, d, next, meta); err != nil {
		return Meta{}, info, fmt.Errorf("refusing to publish %s in place: %w", path, err)
	}
	phase("verify C reader")
	if stopped != nil {
		return Meta{}, info, stopped
	}
	if err := carryFreshness(path, tmpPath); err != nil {
		return Meta{}, info, err
	}
	if err := install(tmpPath, path, 0); err != nil {
		dropLiveIndex()
		return Meta{}, info, err
	}
	// The blob written is the new live file's (liveindex.go), and the
	// pages that differ from the file it copied are known (PageChange).
	keepLiveIndex(path, meta.Serial, d.wroteHash, blob.flatten())
	if live.idOK {
		rememberChange(live.id, path, live.pageSize, changed)
	}
	phase("install")
	published = true
	info.Incremental, info.PagesChanged, info.IndexPages = true, pages, ixPages
	return meta, info, nil
}

// liveFile is what Update reads of the live snapshot.
type liveFile struct {
	id       fileID // the file read (idOK: known)
	idOK     bool
	hash     string
	serial   int64
	pageSize int
	index    []byte
}

func readLive(path string) (liveFile, error) {
	var l liveFile
	id, idOK := statFile(path)
	l.id, l.idOK = id, idOK
	db, err := openReadOnly(path)
	if err != nil {
		return l, fmt.Errorf("open the live snapshot: %w", err)
	}
	defer db.Close()
	kv, err := loadMeta(db)
	if err != nil {
		return l, fmt.Errorf("read the live snapshot's meta: %w", err)
	}
	if v := kv["schema_version"]; v != strconv.Itoa(SchemaVersion) {
		return l, fmt.Errorf("the live snapshot has schema version %q, this writer makes %d", v, SchemaVersion)
	}
	l.hash = kv[metaContentsHash]
	l.serial, _ = strconv.ParseInt(kv["serial"], 10, 64)
	var pages, free int
	if err := db.QueryRow(`PRAGMA page_size`).Scan(&l.pageSize); err != nil {
		return l, fmt.Errorf("read the live snapshot's page size: %w", err)
	}
	if db.QueryRow(`PRAGMA page_count`).Scan(&pages) == nil && db.QueryRow(`PRAGMA freelist_count`).Scan(&free) == nil &&
		free > 64 && free*4 > pages {
		// Deleted rows and replaced member lists leave free pages that
		// later changes reuse; past a quarter of the file, compact it.
		return l, fmt.Errorf("%d of the live snapshot's %d pages are free: writing it compacted", free, pages)
	}
	// Its length through SQL (SQLite reads no overflow page for it), its
	// bytes from the file's pages (indexio.go).
	var n int
	if err := db.QueryRow(`SELECT length(data) FROM nss_index WHERE id = 1`).Scan(&n); err != nil {
		return l, fmt.Errorf("read the live snapshot's NSS index: %w", err)
	}
	if idOK {
		if l.index = keptLiveIndex(path, id, l.serial, l.hash, l.pageSize, n); l.index != nil {
			return l, nil
		}
	}
	if l.index, err = readIndex(path, l.pageSize, n); err != nil {
		return l, fmt.Errorf("read the live snapshot's NSS index: %w", err)
	}
	return l, nil
}

// CloneFile copies src over dst (an existing file), sharing extents when
// the file system can (FICLONE), else with copy_file_range; it says which.
func CloneFile(src, dst string) (string, error) {
	in, err := os.Open(src)
	if err != nil {
		return "", fmt.Errorf("open %s to copy it: %w", src, err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return "", fmt.Errorf("open %s to copy into: %w", dst, err)
	}
	defer out.Close()
	how := "reflink"
	if unix.IoctlFileClone(int(out.Fd()), int(in.Fd())) != nil {
		how = "copy"
		if _, err := io.Copy(out, in); err != nil { // copy_file_range
			return how, fmt.Errorf("copy %s to %s: %w", src, dst, err)
		}
	}
	return how, out.Close()
}

// rowDiff is what changes between prev and next, row by row.
type rowDiff struct {
	// Users: removed (old rows), re-keyed (uid changed: deleted, then
	// inserted), added, changed in place (same name and uid).
	delUsers, addUsers, modUsers []User
	keysOf                       []User // users whose keys are rewritten
	ugOf                         []User // user_groups rows to (re)write
	ugNew                        map[string]bool
	delGroups, addGroups         []Group
	modGroups                    []Group // same name and gid: scim_id, members
	memDel, memAdd               []membership
	assocDel, assocAdd           []Association
	quotas                       []quotaRow          // quota rows to set or remove (quotas.go)
	nextGIDs, prevGIDs           map[string][]uint32 // of the users named below
	// walkPrev, walkNext: the records the walk by name read (TouchedOf's,
	// or prev and next whole).
	walkPrev, walkNext *Contents
	// Every user and group of walkPrev and walkNext by name.
	prevUsers, nextUsers   map[string]*User
	prevGroups, nextGroups map[string]*Group
	inChangedGroup         map[string]bool
	// Names and ids to look up after the change (old ones too).
	userNames, groupNames map[string]bool
	uids, gids            map[uint32]bool
	assocUsers            map[string]bool
	// assocUnique: no two associations of prev, nor of next, share a
	// user and account (nextHash relies on it).
	assocUnique bool
	// What applyRows wrote: statements, and bytes of text (a long
	// member list spills into overflow pages, all of them rewritten).
	statements, rowBytes int
	// wroteHash: the contents digest applyRows stored in meta.
	wroteHash string
}

type membership struct {
	gid  uint32
	name string
}

// diffContents compares prev with next. The walk by name looks only at
// the records TouchedOf finds (both lists in id order, as validation and
// Load make them), else at every record.
func diffContents(prev, next *Contents) *rowDiff {
	d := &rowDiff{userNames: map[string]bool{}, groupNames: map[string]bool{},
		uids: map[uint32]bool{}, gids: map[uint32]bool{}, assocUsers: map[string]bool{}, ugNew: map[string]bool{}}
	wp, wn := prev, next // what the walk by name reads
	t, touched := TouchedOf(prev, next)
	if touched {
		wp, wn = &t.Prev, &t.Next
	}
	d.walkPrev, d.walkNext = wp, wn
	d.groupPart(wp, wn)
	// The groups of a user change only through a group that changed:
	// only those users' gids are gathered (not all 100,000).
	d.inChangedGroup = d.memberNames()
	// With the touched users' names too (their gids are asked for
	// below): one pass over both directories' groups, each member list
	// shared by prev and next searched once (gidsOfPair).
	var gidsFor map[string]bool
	if touched {
		gidsFor = maps.Clone(d.inChangedGroup)
		for _, l := range [][]User{wp.Users, wn.Users} {
			for i := range l {
				gidsFor[l[i].Name] = true
			}
		}
		d.prevGIDs, d.nextGIDs = gidsOfPair(prev, next, gidsFor)
		// prev's are read for the changed groups' members only.
		maps.DeleteFunc(d.prevGIDs, func(n string, _ []uint32) bool { return !d.inChangedGroup[n] })
	} else {
		d.prevGIDs = prev.gidsOf(d.inChangedGroup)
		d.nextGIDs = next.gidsOf(d.inChangedGroup)
	}
	if touched {
		// A user whose record is the same but whose groups changed (a
		// member added to a group) is walked too: one pass over next
		// for the few such names, no map of every user.
		addGroupOnly(wp, wn, next, d)
	}
	old := byNameOf(wp).users
	if old == nil {
		old = make(map[string]*User, len(wp.Users))
		for i := range wp.Users {
			old[wp.Users[i].Name] = &wp.Users[i]
		}
	}
	d.prevUsers = old
	seen := make(map[string]*User, len(wn.Users))
	d.nextUsers = seen
	var unchangedGIDs map[string]bool // changed rows, same groups
	for i := range wn.Users {
		n := &wn.Users[i]
		seen[n.Name] = n
		o, ok := old[n.Name]
		switch {
		case !ok || o.UID != n.UID:
			if ok {
				d.delUsers = append(d.delUsers, *o)
				d.uids[o.UID] = true
			}
			d.addUsers = append(d.addUsers, *n)
		case !sameRow(o, n):
			d.modUsers = append(d.modUsers, *n)
		}
		switch {
		case !ok:
			d.ugOf = append(d.ugOf, *n)
			d.ugNew[n.Name] = true
		case o.UID != n.UID || o.GID != n.GID || d.groupsChanged(n.Name):
			d.ugOf = append(d.ugOf, *n)
		}
		if ok && o.UID == n.UID && !slices.Equal(o.SSHKeys, n.SSHKeys) {
			d.keysOf = append(d.keysOf, *n)
		}
		if !ok || o.UID != n.UID || !sameRow(o, n) || !slices.Equal(o.SSHKeys, n.SSHKeys) ||
			d.groupsChanged(n.Name) {
			d.userNames[n.Name] = true
			d.uids[n.UID] = true
		}
	}
	for i := range wp.Users {
		if o := &wp.Users[i]; seen[o.Name] == nil {
			d.delUsers = append(d.delUsers, *o)
			d.userNames[o.Name], d.uids[o.UID] = true, true
		}
	}
	// Users whose row changed but not their groups: their gids too (for
	// user_groups, the index record and the verification).
	for name := range d.userNames {
		if !d.inChangedGroup[name] && !gidsFor[name] && seen[name] != nil {
			if unchangedGIDs == nil {
				unchangedGIDs = map[string]bool{}
			}
			unchangedGIDs[name] = true
		}
	}
	if unchangedGIDs != nil {
		for name, gids := range next.gidsOf(unchangedGIDs) {
			d.nextGIDs[name] = gids
		}
	}

	d.quotaPart(wp, wn)
	if !touched {
		keepByName(next, byName{seen, d.nextGroups})
	}
	key := func(a Association) string { return a.User + "\x00" + a.Account }
	oldA := make(map[string]Association, len(prev.Associations))
	for _, a := range prev.Associations {
		oldA[key(a)] = a
	}
	nextA := make(map[string]bool, len(next.Associations))
	defer func() { d.assocUnique = len(oldA) == len(prev.Associations) && len(nextA) == len(next.Associations) }()
	for _, a := range next.Associations {
		nextA[key(a)] = true
		o, ok := oldA[key(a)]
		if ok && sameAssociation(o, a) {
			continue
		}
		if ok {
			d.assocDel = append(d.assocDel, o)
		}
		d.assocAdd = append(d.assocAdd, a)
		d.assocUsers[a.User] = true
	}
	for _, a := range prev.Associations {
		if !nextA[key(a)] {
			d.assocDel = append(d.assocDel, a)
			d.assocUsers[a.User] = true
		}
	}
	return d
}

// addGroupOnly appends to wp and wn (TouchedOf's records) each user of
// next whose record is the same in prev and next but whose groups
// changed: the whole walk saw them among every user.
func addGroupOnly(wp, wn, next *Contents, d *rowDiff) {
	in := make(map[string]bool, len(wn.Users)+len(wp.Users))
	for _, l := range [][]User{wp.Users, wn.Users} {
		for i := range l {
			in[l[i].Name] = true
		}
	}
	var want map[string]bool
	for name := range d.inChangedGroup {
		if !in[name] && !slices.Equal(d.prevGIDs[name], d.nextGIDs[name]) {
			if want == nil {
				want = map[string]bool{}
			}
			want[name] = true
		}
	}
	if want == nil {
		return
	}
	for i := range next.Users {
		if u := &next.Users[i]; want[u.Name] {
			// Untouched: prev holds this very record.
			wp.Users, wn.Users = append(wp.Users, *u), append(wn.Users, *u)
		}
	}
}

// byName is a diff's maps of next's users and groups by name, kept for
// the next diff, whose prev is this one's next (the daemon's live
// contents): at 100,000 users building the map of prev again cost about a
// fifth of the diff. Weak: it never keeps contents alive, and it is used
// only for the very contents it was made of (never changed once written).
type byName struct {
	users  map[string]*User
	groups map[string]*Group
}

var byNameMemo struct {
	sync.Mutex
	of weak.Pointer[Contents]
	m  byName
}

func keepByName(c *Contents, m byName) {
	byNameMemo.Lock()
	byNameMemo.of, byNameMemo.m = weak.Make(c), m
	byNameMemo.Unlock()
}

// byNameOf is c's maps when kept (zero: build them).
func byNameOf(c *Contents) byName {
	byNameMemo.Lock()
	defer byNameMemo.Unlock()
	if c == nil || byNameMemo.of.Value() != c {
		return byName{}
	}
	return byNameMemo.m
}

// groupPart diffs the groups and their memberships.
func (d *rowDiff) groupPart(prev, next *Contents) {
	oldG := byNameOf(prev).groups
	if oldG == nil {
		oldG = make(map[string]*Group, len(prev.Groups))
		for i := range prev.Groups {
			oldG[prev.Groups[i].Name] = &prev.Groups[i]
		}
	}
	seenG := make(map[string]*Group, len(next.Groups))
	d.prevGroups, d.nextGroups = oldG, seenG
	for i := range next.Groups {
		n := &next.Groups[i]
		seenG[n.Name] = n
		o, ok := oldG[n.Name]
		switch {
		case !ok || o.GID != n.GID:
			if ok {
				d.delGroups = append(d.delGroups, *o)
				d.gids[o.GID] = true
			}
			d.addGroups = append(d.addGroups, *n)
		default:
			if o.SCIMID == n.SCIMID && slices.Equal(o.Members, n.Members) {
				continue
			}
			was, is := sortedMembers(o.Members), sortedMembers(n.Members)
			if o.SCIMID == n.SCIMID && slices.Equal(was, is) {
				continue
			}
			d.modGroups = append(d.modGroups, *n)
			for _, m := range setMinus(was, is) {
				d.memDel = append(d.memDel, membership{n.GID, m})
			}
			for _, m := range setMinus(is, was) {
				d.memAdd = append(d.memAdd, membership{n.GID, m})
			}
		}
		d.groupNames[n.Name], d.gids[n.GID] = true, true
	}
	for i := range prev.Groups {
		if o := &prev.Groups[i]; seenG[o.Name] == nil {
			d.delGroups = append(d.delGroups, *o)
			d.groupNames[o.Name], d.gids[o.GID] = true, true
		}
	}

}

// memberNames is every user in a group that was added, removed or
// changed, in prev or in next: the only users whose groups can differ.
func (d *rowDiff) memberNames() map[string]bool {
	names := map[string]bool{}
	for _, gs := range [][]Group{d.delGroups, d.addGroups} {
		for _, g := range gs {
			for _, m := range g.Members {
				names[m] = true
			}
		}
	}
	for _, m := range d.memDel {
		names[m.name] = true
	}
	for _, m := range d.memAdd {
		names[m.name] = true
	}
	return names
}

// groupsChanged: the user's supplementary gids differ.
func (d *rowDiff) groupsChanged(name string) bool {
	return d.inChangedGroup[name] && !slices.Equal(d.prevGIDs[name], d.nextGIDs[name])
}

func sameRow(o, n *User) bool {
	return o.GID == n.GID && o.GECOS == n.GECOS && o.Home == n.Home && o.Shell == n.Shell &&
		o.Active == n.Active && o.SCIMID == n.SCIMID
}

func sameAssociation(a, b Association) bool {
	return a.User == b.User && a.Account == b.Account && slices.Equal(a.QOS, b.QOS) &&
		a.DefaultQOS == b.DefaultQOS && a.IsDefault == b.IsDefault && a.Blocked == b.Blocked
}

func sortedMembers(m []string) []string {
	s := slices.Clone(m)
	slices.Sort(s)
	return s
}

// setMinus is a without b, both sorted.
func setMinus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if _, found := slices.BinarySearch(b, x); !found {
			out = append(out, x)
		}
	}
	return out
}

// gidList is the user_groups.gids column: gids, ascending, comma-separated.
func gidList(gids []uint32) string { return string(appendGIDList(nil, gids)) }

// appendGIDList appends gidList(gids) to b (a whole write reuses b).
func appendGIDList(b []byte, gids []uint32) []byte {
	for i, g := range gids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(b, uint64(g), 10)
	}
	return b
}

// applyRows changes the copy at path in one transaction.
func applyRows(path string, d *rowDiff, prev, next *Contents, meta *Meta) error {
	db, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=DELETE&_synchronous=OFF&_foreign_keys=off")
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	// FAST: deleted cells are zeroed within pages that are written anyway;
	// freed overflow pages (a group's old member list) are not rewritten
	// just to clear them (Debian's SQLite defaults to zeroing them, which
	// put 42 pages more into the delta of a new user at 20,000 users).
	if _, err := db.Exec(`PRAGMA secure_delete = FAST`); err != nil {
		return err
	}
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	exec := func(what, query string, args ...any) error {
		d.statements++
		for _, a := range args {
			if v, ok := a.(string); ok {
				d.rowBytes += len(v)
			}
		}
		if _, err := tx.Exec(query, args...); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	}
	// New rows go in batchRows to a statement (insertBatch), each
	// table's in the order a statement per row put them.
	users := newInsertBatch(tx, d, "users", "uid", "name", "gid", "gecos", "home", "shell", "active", "scim_id")
	keys := newInsertBatch(tx, d, "ssh_keys", "user_name", "seq", "key")
	insertKeys := func(u User) error {
		for i, k := range u.SSHKeys {
			if err := keys.add(u.Name, i, k); err != nil {
				return err
			}
		}
		return nil
	}
	// Deletions first: a removed user's uid or name may be an added one's.
	for _, u := range d.delUsers {
		if err := exec("remove user "+u.Name, `DELETE FROM users WHERE uid = ?`, u.UID); err != nil {
			return err
		}
		if err := exec("remove keys of "+u.Name, `DELETE FROM ssh_keys WHERE user_name = ?`, u.Name); err != nil {
			return err
		}
		if err := exec("remove groups of "+u.Name, `DELETE FROM user_groups WHERE name = ?`, u.Name); err != nil {
			return err
		}
	}
	for _, g := range d.delGroups {
		if err := exec("remove group "+g.Name, `DELETE FROM groups WHERE gid = ?`, g.GID); err != nil {
			return err
		}
		if err := exec("remove members of "+g.Name, `DELETE FROM memberships WHERE gid = ?`, g.GID); err != nil {
			return err
		}
	}
	for _, m := range d.memDel {
		if err := exec("remove member "+m.name, `DELETE FROM memberships WHERE gid = ? AND user_name = ?`, m.gid, m.name); err != nil {
			return err
		}
	}
	for _, a := range d.assocDel {
		if err := exec("remove association "+a.User+"/"+a.Account, `DELETE FROM slurm_associations WHERE user_name = ? AND account = ?`, a.User, a.Account); err != nil {
			return err
		}
	}
	for _, u := range d.addUsers {
		if err := users.add(u.UID, u.Name, u.GID, u.GECOS, u.Home, u.Shell, boolInt(u.Active), u.SCIMID); err != nil {
			return err
		}
		if err := insertKeys(u); err != nil {
			return err
		}
		d.ugNew[u.Name] = true // a re-keyed user's row was removed above
	}
	if err := users.flush(); err != nil {
		return err
	}
	if err := keys.flush(); err != nil {
		return err
	}
	for _, u := range d.modUsers {
		if err := exec("change user "+u.Name, `UPDATE users SET gid = ?, gecos = ?, home = ?, shell = ?, active = ?, scim_id = ? WHERE uid = ?`,
			u.GID, u.GECOS, u.Home, u.Shell, boolInt(u.Active), u.SCIMID, u.UID); err != nil {
			return err
		}
	}
	// Replaced keys: every old set out, then the new ones in.
	for _, u := range d.keysOf {
		if err := exec("replace keys of "+u.Name, `DELETE FROM ssh_keys WHERE user_name = ?`, u.Name); err != nil {
			return err
		}
	}
	for _, u := range d.keysOf {
		if err := insertKeys(u); err != nil {
			return err
		}
	}
	if err := keys.flush(); err != nil {
		return err
	}
	ug := newInsertBatch(tx, d, "user_groups", "uid", "gid", "gids", "name")
	for _, u := range d.ugOf {
		if d.ugNew[u.Name] {
			if err := ug.add(u.UID, u.GID, gidList(d.nextGIDs[u.Name]), u.Name); err != nil {
				return err
			}
			continue
		}
		if err := exec("groups of "+u.Name, `UPDATE user_groups SET uid = ?, gid = ?, gids = ? WHERE name = ?`,
			u.UID, u.GID, gidList(d.nextGIDs[u.Name]), u.Name); err != nil {
			return err
		}
	}
	if err := ug.flush(); err != nil {
		return err
	}
	groups := newInsertBatch(tx, d, "groups", "gid", "name", "scim_id", "members")
	for _, g := range d.addGroups {
		if err := groups.add(g.GID, g.Name, g.SCIMID, membersColumn(g.Members)); err != nil {
			return err
		}
		for _, m := range g.Members {
			d.memAdd = append(d.memAdd, membership{g.GID, m})
		}
	}
	if err := groups.flush(); err != nil {
		return err
	}
	for _, g := range d.modGroups {
		if err := exec("change group "+g.Name, `UPDATE groups SET scim_id = ?, members = ? WHERE gid = ?`,
			g.SCIMID, membersColumn(g.Members), g.GID); err != nil {
			return err
		}
	}
	members := newInsertBatch(tx, d, "memberships", "gid", "user_name")
	for _, m := range d.memAdd {
		if err := members.add(m.gid, m.name); err != nil {
			return err
		}
	}
	if err := members.flush(); err != nil {
		return err
	}
	assocs := newInsertBatch(tx, d, "slurm_associations", "user_name", "account", "qos", "default_qos", "is_default", "blocked")
	for _, a := range d.assocAdd {
		if err := assocs.add(a.User, a.Account, strings.Join(a.QOS, ","), a.DefaultQOS, boolInt(a.IsDefault), boolInt(a.Blocked)); err != nil {
			return err
		}
	}
	if err := assocs.flush(); err != nil {
		return err
	}
	if err := applyQuotas(tx, d, exec); err != nil {
		return err
	}
	// The index's pages are written after this transaction, only those
	// that differ (writeIndexPages); verifyPages checks them.
	d.wroteHash = d.nextHash(prev, next)
	for k, v := range metaValues(meta, d.wroteHash) {
		if err := exec("meta "+k, `INSERT OR REPLACE INTO meta (key, value) VALUES (?,?)`, k, v); err != nil {
			return err
		}
	}
	if meta.SlurmSyncedAt.IsZero() {
		if err := exec("meta slurm_synced_at", `DELETE FROM meta WHERE key = 'slurm_synced_at'`); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return db.Close()
}

// insertBatch inserts an in-place update's new rows of one table
// batchRows to a statement (rows.go's INSERT text), in the order added.
// A statement per row was most of the row time of a burst of thousands
// of new users (issue 18, push10: 35,000 users added to 60,000, 2.4 s of
// 4.1 s of CPU). Each row still counts as a statement (and its text as
// row bytes) for verifyPages' bound on the pages that may differ.
type insertBatch struct {
	tx   *sql.Tx
	d    *rowDiff
	text *rowBatch // the INSERT's text (query); it runs nothing here
	full *sql.Stmt // the INSERT of batchRows rows, once prepared
	args []any
}

func newInsertBatch(tx *sql.Tx, d *rowDiff, table string, cols ...string) *insertBatch {
	return &insertBatch{tx: tx, d: d, text: newRowBatch(nil, table, cols, nil)}
}

// add queues one row; a full batch is run.
func (b *insertBatch) add(row ...any) error {
	b.d.statements++
	for _, a := range row {
		if v, ok := a.(string); ok {
			b.d.rowBytes += len(v)
		}
	}
	b.args = append(b.args, row...)
	if len(b.args) < batchRows*b.text.cols {
		return nil
	}
	if b.full == nil {
		st, err := b.tx.Prepare(b.text.query(batchRows))
		if err != nil {
			return fmt.Errorf("%s...: %w", b.text.head, err)
		}
		b.full = st
	}
	return b.run(b.full)
}

func (b *insertBatch) run(st *sql.Stmt) error {
	_, err := st.Exec(b.args...)
	if err != nil {
		return fmt.Errorf("%s... (%d rows from %v): %w", b.text.head, len(b.args)/b.text.cols, b.args[:b.text.cols], err)
	}
	b.args = b.args[:0]
	return nil
}

// flush runs the rows queued and releases the statements.
func (b *insertBatch) flush() error {
	if b.full != nil {
		defer func() { b.full.Close(); b.full = nil }()
	}
	if len(b.args) == 0 {
		return nil
	}
	st, err := b.tx.Prepare(b.text.query(len(b.args) / b.text.cols))
	if err != nil {
		return fmt.Errorf("%s...: %w", b.text.head, err)
	}
	defer st.Close()
	return b.run(st)
}

// metaValues is the meta table of a snapshot with meta and contents hash.
func metaValues(meta *Meta, hash string) map[string]string {
	kv := map[string]string{
		"schema_version": strconv.Itoa(SchemaVersion),
		"serial":         strconv.FormatInt(meta.Serial, 10),
		"created_at":     meta.CreatedAt.Format(time.RFC3339),
		"source":         meta.Source,
		"users":          strconv.Itoa(meta.Users),
		"groups":         strconv.Itoa(meta.Groups),
		"memberships":    strconv.Itoa(meta.Memberships),
		"ssh_keys":       strconv.Itoa(meta.SSHKeys),
		"associations":   strconv.Itoa(meta.Associations),
		metaContentsHash: hash,
	}
	if !meta.SlurmSyncedAt.IsZero() {
		kv["slurm_synced_at"] = meta.SlurmSyncedAt.Format(time.RFC3339)
	}
	return kv
}

// contentsHash is a digest of c as the snapshot stores it, whatever the
// order of users, groups, members and associations (Load of a file
// digests as the Contents it was written from): each record (a user with
// its keys in order, a group with the sum of its members' digests, an
// association) is hashed with SHA-256 and the record digests are summed
// lane by lane, so no sorting is needed (O(records), 100,000 users in
// tens of milliseconds). It tells apart the live file and what a caller
// read from it; it is not a signature.
//
// Because the record digests are summed, the digest of next follows from
// prev's sums and the records a diff names (rowDiff.nextHash): an
// in-place update does not hash 100,000 users again (~0.35 s of CPU per
// change at 100,000 users). The sums of the last contents hashed are kept
// for that (sumsMemo).
func contentsHash(c *Contents) string {
	var r recordHasher
	var sum [4]uint64
	for i := range c.Users {
		r.add(&sum, r.user(&c.Users[i]), 1)
	}
	for i := range c.Groups {
		r.add(&sum, r.group(&c.Groups[i]), 1)
	}
	for i := range c.Associations {
		r.add(&sum, r.association(&c.Associations[i]), 1)
	}
	remember(c, sum)
	return r.final(c, sum)
}

// sumsMemo: the record sums of the contents last hashed (a weak pointer:
// it never keeps contents alive). Contents are not changed once written
// (pipeline/live.go); a digest that came out wrong anyway would only make
// the next update fall back to a whole write (its live hash check).
var sumsMemo struct {
	sync.Mutex
	of  weak.Pointer[Contents]
	sum [4]uint64
}

func remember(c *Contents, sum [4]uint64) {
	sumsMemo.Lock()
	sumsMemo.of, sumsMemo.sum = weak.Make(c), sum
	sumsMemo.Unlock()
}

func remembered(c *Contents) ([4]uint64, bool) {
	sumsMemo.Lock()
	defer sumsMemo.Unlock()
	return sumsMemo.sum, c != nil && sumsMemo.of.Value() == c
}

// recordHasher digests single records for contentsHash.
type recordHasher struct{ buf []byte }

func (r *recordHasher) str(s string) {
	r.buf = binary.AppendUvarint(r.buf, uint64(len(s)))
	r.buf = append(r.buf, s...)
}

func (r *recordHasher) num(v uint64) { r.buf = binary.AppendUvarint(r.buf, v) }

// add adds (sign 1) or subtracts (sign -1) the digest of b lane by lane.
func (r *recordHasher) add(acc *[4]uint64, b []byte, sign int) {
	d := sha256.Sum256(b)
	for i := range acc {
		v := binary.LittleEndian.Uint64(d[8*i:])
		if sign < 0 {
			acc[i] -= v
		} else {
			acc[i] += v
		}
	}
}

func (r *recordHasher) user(u *User) []byte {
	r.buf = append(r.buf[:0], 'u')
	r.str(u.Name)
	r.num(uint64(u.UID))
	r.num(uint64(u.GID))
	r.str(u.GECOS)
	r.str(u.Home)
	r.str(u.Shell)
	r.num(uint64(boolInt(u.Active)))
	r.str(u.SCIMID)
	r.num(uint64(len(u.SSHKeys)))
	for _, k := range u.SSHKeys {
		r.str(k)
	}
	if u.Quota > 0 { // only then: older writers' digests stay valid
		r.buf = append(r.buf, 'q')
		r.num(u.Quota)
	}
	return r.buf
}

func (r *recordHasher) group(g *Group) []byte {
	var members [4]uint64
	for _, m := range g.Members {
		r.add(&members, []byte(m), 1)
	}
	r.buf = append(r.buf[:0], 'g')
	r.str(g.Name)
	r.num(uint64(g.GID))
	r.str(g.SCIMID)
	r.num(uint64(len(g.Members)))
	for _, v := range members {
		r.num(v)
	}
	if g.Quota > 0 { // only then: older writers' digests stay valid
		r.buf = append(r.buf, 'q')
		r.num(g.Quota)
	}
	return r.buf
}

func (r *recordHasher) association(a *Association) []byte {
	r.buf = append(r.buf[:0], 'a')
	r.str(a.User)
	r.str(a.Account)
	r.str(strings.Join(a.QOS, ","))
	r.str(a.DefaultQOS)
	r.num(uint64(boolInt(a.IsDefault)))
	r.num(uint64(boolInt(a.Blocked)))
	return r.buf
}

func (r *recordHasher) final(c *Contents, sum [4]uint64) string {
	r.buf = append(r.buf[:0], 's')
	r.str(c.Source)
	r.num(uint64(len(c.Users)))
	r.num(uint64(len(c.Groups)))
	r.num(uint64(len(c.Associations)))
	for _, v := range sum {
		r.num(v)
	}
	d := sha256.Sum256(r.buf)
	return hex.EncodeToString(d[:])
}

// nextHash is contentsHash(next) from the sums of prev when they are
// remembered: prev's digests of the records d names are taken out and
// next's put in. Else (or when names repeat, so the diff's maps hold
// fewer records than the lists) it is contentsHash(next).
func (d *rowDiff) nextHash(prev, next *Contents) string {
	sum, ok := remembered(prev)
	wp, wn := d.walkPrev, d.walkNext
	if !ok || len(d.prevUsers) != len(wp.Users) || len(d.nextUsers) != len(wn.Users) ||
		len(d.prevGroups) != len(wp.Groups) || len(d.nextGroups) != len(wn.Groups) || !d.assocUnique {
		return contentsHash(next)
	}
	var r recordHasher
	users := map[string]bool{}
	for _, l := range [][]User{d.delUsers, d.addUsers, d.modUsers, d.keysOf} {
		for i := range l {
			users[l[i].Name] = true
		}
	}
	groups := map[string]bool{}
	for _, q := range d.quotas { // a limit alone changes no other row
		if q.kind == "user" {
			users[q.name] = true
		} else {
			groups[q.name] = true
		}
	}
	for name := range users {
		if u := d.prevUsers[name]; u != nil {
			r.add(&sum, r.user(u), -1)
		}
		if u := d.nextUsers[name]; u != nil {
			r.add(&sum, r.user(u), 1)
		}
	}
	for _, l := range [][]Group{d.delGroups, d.addGroups, d.modGroups} {
		for i := range l {
			groups[l[i].Name] = true
		}
	}
	for name := range groups {
		if g := d.prevGroups[name]; g != nil {
			r.add(&sum, r.group(g), -1)
		}
		if g := d.nextGroups[name]; g != nil {
			r.add(&sum, r.group(g), 1)
		}
	}
	for i := range d.assocDel {
		r.add(&sum, r.association(&d.assocDel[i]), -1)
	}
	for i := range d.assocAdd {
		r.add(&sum, r.association(&d.assocAdd[i]), 1)
	}
	remember(next, sum)
	return r.final(next, sum)
}

// verifyPages compares the copy with the live file page by page. The
// index's overflow pages that differ must be exactly those whose bytes
// differ between the live blob and the new one (SQLite overwrote the
// chain in place); the other pages that differ must be few for the rows
// changed. It returns both counts.
func verifyPages(live, tmp string, l liveFile, blob *newIndex, d *rowDiff) (int, int, []int, error) {
	a, err := os.Open(live)
	if err != nil {
		return 0, 0, nil, err
	}
	defer a.Close()
	b, err := os.Open(tmp)
	if err != nil {
		return 0, 0, nil, err
	}
	defer b.Close()
	ps := l.pageSize
	page2 := make([]byte, 2*ps)
	if _, err := b.ReadAt(page2, 0); err != nil {
		return 0, 0, nil, fmt.Errorf("read page 2 of %s: %w", tmp, err)
	}
	first, local, err := indexChain(page2, ps, blob.size())
	if err != nil {
		return 0, 0, nil, err
	}
	// Payload byte q (record header, then the blob) of overflow page i:
	// local + i*(ps-4) + q'.
	hdr := recordHeader(blob.size())
	C := ps - 4
	npages := (hdr + blob.size() - local + C - 1) / C
	want := map[int]bool{}
	for i := 0; i < npages; i++ {
		lo, hi := local+i*C-hdr, min(local+(i+1)*C-hdr, blob.size())
		if !bytes.Equal(l.index[lo:hi], blob.span(lo, hi)) {
			want[first+i] = true
		}
	}
	other, ix := 0, 0
	var changed []int
	const block = 256
	x, y := make([]byte, block*ps), make([]byte, block*ps)
	for p0 := 1; ; p0 += block {
		na, _ := io.ReadFull(io.NewSectionReader(a, int64(p0-1)*int64(ps), int64(len(x))), x)
		nb, _ := io.ReadFull(io.NewSectionReader(b, int64(p0-1)*int64(ps), int64(len(y))), y)
		if na == 0 && nb == 0 {
			break
		}
		for k := 0; k*ps < max(na, nb); k++ {
			p, off := p0+k, k*ps
			same := off+ps <= na && off+ps <= nb && bytes.Equal(x[off:off+ps], y[off:off+ps])
			inIndex := p >= first && p < first+npages
			switch {
			case inIndex && same == want[p]:
				return 0, 0, nil, fmt.Errorf("page %d (NSS index chunk %d) %s, but its chunk %s", p, p-first,
					map[bool]string{true: "is unchanged", false: "changed"}[same], map[bool]string{true: "changed", false: "did not"}[want[p]])
			case inIndex && !same:
				ix++
			case !same:
				other++
			}
			if !same {
				changed = append(changed, p)
			}
		}
	}
	// A row change touches a leaf, at most a split's few siblings and a
	// parent per B-tree it lands in, plus the overflow pages of what it
	// wrote; page 1 and meta change every time.
	if limit := 16 + 12*d.statements + 2*d.rowBytes/C; other > limit {
		return 0, 0, nil, fmt.Errorf("%d pages outside the NSS index changed for %d row changes of %d bytes (at most %d expected)",
			other, d.statements, d.rowBytes, limit)
	}
	return other + ix, ix, changed, nil
}

// indexChain finds the NSS index row in page 2 of the file image f: the
// first overflow page of its payload and how many payload bytes page 2
// keeps, checking that the payload is a blob of n bytes (file format,
// "B-tree Pages"; the C reader finds it the same way).
func indexChain(f []byte, ps, n int) (first, local int, err error) {
	if len(f) < 2*ps {
		return 0, 0, errors.New("the file has no page 2")
	}
	pg := f[ps : 2*ps]
	if pg[0] != 0x0D || binary.BigEndian.Uint16(pg[3:]) != 1 {
		return 0, 0, errors.New("page 2 is not the NSS index's one-row table leaf")
	}
	cell := int(binary.BigEndian.Uint16(pg[8:]))
	if cell <= 0 || cell >= ps {
		return 0, 0, errors.New("page 2's cell pointer is out of the page")
	}
	P, used := sqliteUvarint(pg[cell:])
	_, used2 := sqliteUvarint(pg[cell+used:])
	if used == 0 || used2 == 0 {
		return 0, 0, errors.New("page 2's cell is malformed")
	}
	if int(P) != recordHeader(n)+n {
		return 0, 0, fmt.Errorf("the NSS index payload is %d bytes, want %d", P, recordHeader(n)+n)
	}
	U, X := ps, ps-35
	M := (U-12)*32/255 - 23
	K := M + (int(P)-M)%(U-4)
	local = M
	if K <= X {
		local = K
	}
	at := cell + used + used2 + local
	if at+4 > ps {
		return 0, 0, errors.New("page 2's cell runs past the page")
	}
	return int(binary.BigEndian.Uint32(pg[at:])), local, nil
}

// sqliteUvarint decodes SQLite's big-endian varint.
func sqliteUvarint(b []byte) (uint64, int) {
	var v uint64
	for i := 0; i < 9 && i < len(b); i++ {
		if i == 8 {
			return v<<8 | uint64(b[i]), 9
		}
		v = v<<7 | uint64(b[i]&0x7f)
		if b[i]&0x80 == 0 {
			return v, i + 1
		}
	}
	return 0, 0
}

// verifyUpdate checks the copy through the C reader for what changed:
// meta, each table's row count, every touched user and group by name and
// id, initgroups, keys and associations of touched users, and Write's
// spread of sample lookups.
func verifyUpdate(path string, d *rowDiff, next *Contents, meta Meta) error {
	if err := verifyCounts(path, next, meta); err != nil {
		return err
	}
	if err := verifyQuotas(path, d, next); err != nil {
		return err
	}
	r, err := cache.Open(path)
	if err != nil {
		return fmt.Errorf("verify: C reader cannot open it: %w", err)
	}
	defer r.Close()
	if !r.Indexed() {
		return errors.New("verify: the C reader does not use the updated NSS index")
	}
	for key, want := range map[string]string{
		"schema_version": strconv.Itoa(SchemaVersion),
		"serial":         strconv.FormatInt(meta.Serial, 10),
		"users":          strconv.Itoa(len(next.Users)),
		"groups":         strconv.Itoa(len(next.Groups)),
	} {
		if got, err := r.Meta(key); err != nil || got != want {
			return fmt.Errorf("verify: meta %s is %q, %v; want %q", key, got, err, want)
		}
	}
	byName := map[string]*User{}
	byUID := map[uint32]*User{}
	for i := range next.Users {
		u := &next.Users[i]
		if d.userNames[u.Name] || d.assocUsers[u.Name] {
			byName[u.Name] = u
		}
		if d.uids[u.UID] {
			byUID[u.UID] = u
		}
	}
	for name := range d.userNames {
		got, err := r.User(name)
		u := byName[name]
		if u == nil {
			if !errors.Is(err, cache.ErrNotFound) {
				return fmt.Errorf("verify: removed user %q still answers: %+v, %v", name, got, err)
			}
			continue
		}
		if err != nil || !sameUser(got, *u) {
			return fmt.Errorf("verify: user %q by name: got %+v, %v", name, got, err)
		}
		gids, err := r.UserGroups(name)
		if w := d.nextGIDs[name]; err != nil || !slices.Equal(gids, w) {
			return fmt.Errorf("verify: groups of %q: got %v, %v; want %v", name, gids, err, w)
		}
		keys, err := r.Keys(name)
		if err != nil || !slices.Equal(keys, u.SSHKeys) {
			return fmt.Errorf("verify: ssh keys of %q: got %d keys, %v; want %d", name, len(keys), err, len(u.SSHKeys))
		}
	}
	for uid := range d.uids {
		got, err := r.UserByUID(uid)
		if u := byUID[uid]; u == nil {
			if !errors.Is(err, cache.ErrNotFound) {
				return fmt.Errorf("verify: uid %d of a removed user still answers: %q, %v", uid, got.Name, err)
			}
		} else if err != nil || !sameUser(got, *u) {
			return fmt.Errorf("verify: uid %d: got %+v, %v; want %q", uid, got, err, u.Name)
		}
	}
	gByName := map[string]*Group{}
	gByGID := map[uint32]*Group{}
	for i := range next.Groups {
		g := &next.Groups[i]
		if d.groupNames[g.Name] {
			gByName[g.Name] = g
		}
		if d.gids[g.GID] {
			gByGID[g.GID] = g
		}
	}
	for name := range d.groupNames {
		got, err := r.Group(name)
		if g := gByName[name]; g == nil {
			if !errors.Is(err, cache.ErrNotFound) {
				return fmt.Errorf("verify: removed group %q still answers: gid %d, %v", name, got.GID, err)
			}
		} else if err != nil || got.GID != g.GID || !sameMembers(got.Members, g.Members) {
			return fmt.Errorf("verify: group %q by name: got gid %d, %v; want %d", name, got.GID, err, g.GID)
		}
	}
	for gid := range d.gids {
		got, err := r.GroupByGID(gid)
		if g := gByGID[gid]; g == nil {
			if !errors.Is(err, cache.ErrNotFound) {
				return fmt.Errorf("verify: gid %d of a removed group still answers: %q, %v", gid, got.Name, err)
			}
		} else if err != nil || got.Name != g.Name || !sameMembers(got.Members, g.Members) {
			return fmt.Errorf("verify: gid %d: got %q, %v; want %q", gid, got.Name, err, g.Name)
		}
	}
	want := map[string][]Association{}
	for _, a := range next.Associations {
		if d.assocUsers[a.User] {
			want[a.User] = append(want[a.User], a)
		}
	}
	for user := range d.assocUsers {
		got, err := r.Associations(user)
		if err != nil && !errors.Is(err, cache.ErrNotFound) || len(got) != len(want[user]) {
			return fmt.Errorf("verify: associations of %q: got %d, %v; want %d", user, len(got), err, len(want[user]))
		}
	}
	// Write's spread of sample lookups, over the groups of up to
	// sampleMembers members: a changed group of any size was looked up
	// above, and an unchanged one is on pages verifyPages proved to be
	// the live file's (looking up slurm-users' 90,000 members and sorting
	// two copies of them was 40 ms of CPU per change at 100,000 users).
	sample := &Contents{Users: next.Users}
	for _, g := range spread(next.Groups, 4*sampleLookups) {
		if len(g.Members) <= sampleMembers {
			sample.Groups = append(sample.Groups, g)
		}
	}
	return verifySample(r, sample)
}

// sampleMembers: the largest group verifyUpdate's sample looks up.
const sampleMembers = 1000

// verifyCounts checks every table's row count against next: no row a
// change forgot to remove, none it added twice.
func verifyCounts(path string, next *Contents, meta Meta) error {
	db, err := openReadOnly(path)
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	defer db.Close()
	for table, want := range map[string]int{
		"users": len(next.Users), "user_groups": len(next.Users), "groups": len(next.Groups),
		"memberships": meta.Memberships, "ssh_keys": meta.SSHKeys, "slurm_associations": len(next.Associations),
		"nss_index": 1,
	} {
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM ` + table).Scan(&n); err != nil {
			return fmt.Errorf("verify: count %s: %w", table, err)
		}
		if n != want {
			return fmt.Errorf("verify: %s has %d rows, want %d", table, n, want)
		}
	}
	return nil
}
