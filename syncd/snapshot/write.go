// Package snapshot writes and reads the cache snapshot: one SQLite file
// that every process on a node reads through the C reader (c/, behind include/scimcache.h).
//
// The live file is never changed in place. Write builds a new file next
// to the live one, syncs it, checks it through the very reader the nodes
// run, and renames it over the live file; readers notice the new inode
// and reopen. Update (update.go, issue 18) makes the new file from a copy
// of the live one changed by row updates for one change, so that pages
// outside the change stay byte-identical and a node's page delta is the
// change's size; it ends in the same install step, and falls back to
// Write whenever it cannot apply the change safely.
//
// Why a whole Write moved half the file for one membership at 100,000
// users (8,827 of 19,834 pages): see update.go, "Why full writes churn".
//
// The whole write's cost (issue 18, sync --once of 100,000 users into an
// empty cache; pprof, and the heap and VmHWM after each stage). Rows go
// in 256 to an INSERT (rows.go), not one statement each (4.4 s of CPU,
// mostly database/sql's and cgo's per call, and 140 MB of garbage). The
// NSS index row is inserted as a zeroblob and its pages filled after the
// connection is closed (insertIndex, fillIndex): the 31 MB blob bound as
// a value was copied twice in C, and that was the whole sync's peak
// (VmHWM rose from 236 to 372 MB while the index went in). The build keeps its journal in memory (the file
// starts empty; pages past its size are never journaled) and syncs the
// file once: crash safety is the rename of a file verified first, and a
// killed writer's temp file is removed by the next. Each user's gids are
// made once for the rows, the index and Verify (three times before);
// Verify walks the reader's enumeration against the contents in uid and
// gid order instead of holding a map of every user and the reader's
// whole list beside the writer's. The index's buckets are filled as
// slices of one array counted first (layout), and Verify compares member
// lists already in name order without sorting copies (sixth session:
// 48 MB of garbage and three sorts of the largest group fewer).
// The index's blob is never made whole (eighth session): the layout
// (indexPlan) hands its bytes in blob order to fillIndex, which writes
// each overflow page as it fills, and the entries' keys go once the
// buckets are chosen. At the index's stage the process held 262 MB of
// anonymous memory, 226 MB after (SYNCD_PPROF's stages.txt, 100,000
// users); the bytes are the ones the blob held (TestWholeWriteIndexIsTheBlob
// compares them with the in-memory layout an in-place update patches).
// Each user's gids are a table by position (gidTable, 3 MB), not a map
// by name (12 MB). The peak was then the verification (verifyLean): the
// heap's pages kept from the index stage (RssAnon ~205 MB, the soft
// limit) beside 64 MB of the file the C reader maps; they are returned
// before it and the collector runs at GOGC 25 while it reads (peak RSS
// 293-299 -> 259-262 MB, sync --once of 100,000 users).
// The build's page cache is 8 MiB, not SQLite's 2 MiB (buildCacheKiB,
// Dec 2): the indexes by name take rows at random leaves, and with
// 2 MiB a 100,000-user write made 365,000 page-sized pread and pwrite
// calls; with 8 MiB 35,000. The file's bytes do not change.
//
// Where a full sync's CPU goes after validation (Dec 2, pprof of `syncd
// sync --once` of 100,000 users / 10,000 groups from scim-testserver
// into an empty cache, main at cac0f65, load 4.5; 16 s of samples): the
// write 6.2 s (rows 3.8: users 2.1, ssh_keys 0.7, memberships 0.4,
// user_groups 0.4; the NSS index 0.9; Verify 1.2), the explain record
// 1.9 (encoding 1.5), the read 4.4 and validation 1.0 (not this
// package's), the collector's workers 2.8 spread over all of them. perf
// put only 6% of the process in SQLite's own code: most of the rows'
// cgo time is the kernel's (page faults, which are dear on this VM) and
// libc's. The nothing-changed run (8 s of samples) writes nothing: the
// read, validation 1.8 and Load 1.0. Kept from that (BenchmarkWrite100k,
// cpu-s/op and B/op, old and new back to back; the CPU figures are
// within the shared machine's noise, the bytes are exact): the index's
// partitions sized before they are filled (indexParts; growslice was
// 0.3 s of a write), the rows inserted on the driver's connection
// (rows.go; 245 -> 187 MB allocated per write), a group's member list
// counted before it is filled in the reader's Go side (177 MB), and
// Verify's lookups by name and uid through the index no longer ask each
// user's activity again (the enumeration asks it once per user: the
// same call on the same bytes; 5.02M -> 4.82M allocations per write).
// In `sync --once` side by side (5 runs each of cac0f65 and this, load
// 5-13) the empty-cache run's collections went from 35-39 to 29-32,
// its CPU 13.9-23.1 s old, 15.5-21.8 s new: no difference the load lets
// one see; the files are byte for byte the same but for the meta page
// (created_at), and `sqlite3 .dump` of both equal. Tried and
// dropped: the build connection opened without SQLite's mutexes
// (_mutex=no; 2.2/2.2 -> 2.4/3.1 cpu-s, no gain) and glibc keeping its
// arenas' tops (trim_threshold 4 MiB, as the receiver does: 2.0/2.2 ->
// 2.0/2.3, no gain: the write does not churn an arena's top).
package snapshot

import (
	"context"
	"database/sql"
	"database/sql/driver"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/scimbridge/scimbridge/syncd/cache"
)

//go:embed schema.sql
var schemaSQL string

// Schema returns the SQL that creates an empty snapshot.
func Schema() string { return schemaSQL }

//go:embed derive.sql
var deriveSQL string

// Derive returns the SQL that fills the derived table user_groups of a
// snapshot made by hand (test fixtures); the writer fills it itself.
func Derive() string { return deriveSQL }

// PrevSuffix names the previous live snapshot, kept for rollback.
const PrevSuffix = ".prev"

// Write publishes c as the new live snapshot at path and returns its meta.
// On any error the live snapshot is left exactly as it was.
func Write(path string, c *Contents) (Meta, error) {
	return write(path, c, time.Time{}, false)
}

// WriteWithSlurmSync is Write for the Slurm step: it also records when
// associations were read back from slurmdbd.
func WriteWithSlurmSync(path string, c *Contents, syncedAt time.Time) (Meta, error) {
	return write(path, c, syncedAt, false)
}

// write is Write; keepIndex keeps the NSS index blob it wrote as the
// live one (liveindex.go), for a caller that updates the file in place
// next (UpdateOptions.KeepIndex).
func write(path string, c *Contents, slurmSyncedAt time.Time, keepIndex bool) (Meta, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Meta{}, fmt.Errorf("snapshot: create directory %s: %w", dir, err)
	}
	created := time.Now().UTC().Truncate(time.Second)
	meta := Meta{
		Serial:        assignSerial(path, created),
		CreatedAt:     created,
		Source:        c.Source,
		SlurmSyncedAt: slurmSyncedAt.UTC().Truncate(time.Second),
	}
	tmpPath, err := tempBeside(path)
	if err != nil {
		return Meta{}, fmt.Errorf("snapshot: %w", err)
	}
	published := false
	defer func() {
		if !published {
			removeTemp(tmpPath)
		}
	}()

	// Each user's gids, made once for the rows, the index and Verify.
	memberOf := c.userGIDTable()
	blob, err := build(tmpPath, c, &meta, memberOf, keepIndex)
	if err != nil {
		return Meta{}, fmt.Errorf("snapshot: build %s: %w", tmpPath, err)
	}
	MarkStage("built")
	if err := syncFile(tmpPath); err != nil {
		return Meta{}, err
	}
	MarkStage("fsynced")
	if err := os.Chmod(tmpPath, 0o644); err != nil {
		return Meta{}, fmt.Errorf("snapshot: chmod %s: %w", tmpPath, err)
	}
	if err := verifyLean(tmpPath, c, meta, memberOf); err != nil {
		return Meta{}, fmt.Errorf("snapshot: refusing to publish %s: %w", path, err)
	}
	MarkStage("verified")
	if err := carryFreshness(path, tmpPath); err != nil {
		return Meta{}, err
	}
	// The install step every snapshot goes through (Install, for mirror
	// downloads, ends here too).
	if err := install(tmpPath, path, 0); err != nil {
		return Meta{}, err
	}
	published = true
	MarkStage("installed")
	if blob != nil {
		// The digest as the file stores it (its meta alone, milliseconds):
		// what the next update compares before it uses the blob.
		if d, err := StoredDigest(path); err == nil && d != "" {
			keepLiveIndex(path, meta.Serial, d, blob)
		}
	}
	return meta, nil
}

// verifyLean is verify with the heap's pages returned first and the
// collector run more often while it reads: the whole sync's peak RSS was
// the verification (issue 18, 100,000 users, SYNCD_PPROF stages): the Go
// heap kept the pages of the index stage's peak (about 200 MB, the soft
// limit) while the C reader mapped 64 MB of the file, and the reader's
// answers are garbage as soon as compared. The collector's setting is
// put back after. The C heap is trimmed too (malloc_trim: the build's
// SQLite page cache and statements, freed but kept by glibc): with the
// Go heap held lower through the write (issue 18, Dec 2) the
// verification, the file's 64 MB mapped beside the heap, set the full
// sync's peak; the trim took 10-20 MB off its RssAnon at 100,000 users
// (/proc sampled every 50 ms: 120 -> 98-109 MB).
func verifyLean(path string, c *Contents, meta Meta, memberOf gidTable) error {
	// GOGC is the process's: whole verifications take turns, so that one
	// never puts back the 25 another set (the pipeline's file lock makes
	// them one at a time per cache already; this holds for any caller).
	leanMu.Lock()
	defer leanMu.Unlock()
	if old := debug.SetGCPercent(verifyGCPercent); old >= 0 && old < verifyGCPercent {
		debug.SetGCPercent(old) // already leaner (or off: the admin's GOGC)
	} else {
		defer debug.SetGCPercent(old)
	}
	debug.FreeOSMemory()
	cache.TrimMalloc()
	return verify(path, c, meta, memberOf)
}

// verifyGCPercent is GOGC while a whole write verifies its file.
const verifyGCPercent = 25

// leanMu makes verifyLean's GOGC change and its restore one at a time.
var leanMu sync.Mutex

// ClockSerials makes the writer's serials at least the commit's unix time
// in seconds (serial.go). syncd sets it on a head that publishes.
var ClockSerials bool

// nextSerial is one more than the live snapshot's serial, so that nodes
// and `syncd status` can tell snapshots apart; 1 if there is none.
func nextSerial(path string) int64 {
	db, err := openReadOnly(path)
	if err != nil {
		return 1
	}
	defer db.Close()
	var v string
	if db.QueryRow(`SELECT value FROM meta WHERE key = 'serial'`).Scan(&v) != nil {
		return 1
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 1
	}
	return n + 1
}

// keepPrevious hard-links the live snapshot to path.prev, so an admin can
// roll back with one rename. A missing live file is not an error.
func keepPrevious(path string) error {
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	prev := path + PrevSuffix
	if err := LinkAs(path, prev); err != nil {
		return fmt.Errorf("snapshot: keep previous snapshot as %s: %w", prev, err)
	}
	return nil
}

// LinkAs makes dst a hard link of src, replacing dst in one rename (a
// link at dst.tmp first): dst names the old file or src, never nothing.
func LinkAs(src, dst string) error {
	tmp := dst + ".tmp"
	os.Remove(tmp)
	if err := os.Link(src, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, dst); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// SyncDir fsyncs a directory: the renames and removals in it are durable.
func SyncDir(dir string) error { return syncDir(dir) }

// build writes c into the new file at path; with keepIndex it returns
// the NSS index blob it wrote (nil when the index is inline or absent).
func build(path string, c *Contents, meta *Meta, memberOf gidTable, keepIndex bool) ([]byte, error) {
	// A private, unshared connection that nothing else reads until rename:
	// no journal file and no fsync per statement. The file is synced
	// once, whole, afterwards; crash safety is the rename of a verified
	// file, and a failed build leaves a temp file that is removed. The
	// journal is kept in memory, not off: it holds next to nothing (the
	// file starts empty, and pages past its size are not journaled), and
	// a failed batch of rows is undone as a statement (rows.go).
	//
	// The page cache is 8 MiB (buildCacheKiB), not SQLite's 2 MiB: rows
	// go in uid order, so the indexes by name (users, user_groups,
	// ssh_keys) take them at random leaves, and with 2 MiB most inserts
	// evicted a dirty page to the file and read another back.
	db, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=MEMORY&_synchronous=OFF&_foreign_keys=off&_cache_size=-"+strconv.Itoa(buildCacheKiB))
	if err != nil {
		return nil, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(schemaSQL); err != nil {
		return nil, fmt.Errorf("create schema: %w", err)
	}
	// The rows go in on the driver's connection (rows.go: no argument
	// lists made and converted per statement by database/sql).
	conn, err := db.Conn(context.Background())
	if err != nil {
		return nil, err
	}
	err = conn.Raw(func(dc any) error {
		dconn, ok := dc.(driver.Conn)
		if !ok {
			return fmt.Errorf("the SQLite driver's connection is a %T", dc)
		}
		tx, err := dconn.Begin() //nolint:staticcheck // the driver's own; database/sql is not in between here
		if err != nil {
			return err
		}
		if err := insertAll(dconn, c, meta, memberOf); err != nil {
			tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("commit: %w", err)
		}
		return nil
	})
	if cerr := conn.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	MarkStage("rows")
	x, usable, ps, err := insertIndex(db, c, memberOf)
	if err != nil {
		return nil, err
	}
	meta.NSSIndex = usable
	// Readers open with immutable=1 and never look for a journal; make
	// sure none is needed.
	if _, err := db.Exec(`PRAGMA journal_mode=DELETE`); err != nil {
		return nil, err
	}
	if err := db.Close(); err != nil {
		return nil, err
	}
	if x == nil {
		return nil, nil
	}
	return fillIndex(path, ps, x, keepIndex)
}

// buildCacheKiB is the whole write's page cache. Measured (Dec 2,
// strace -c of `syncd sync --once` into an empty cache): at 100,000
// users the 2 MiB default made 196,872 pwrite and 168,659 pread calls
// (4 KiB each, every one a syscall and a copy); 8 MiB made 31,866 and
// 3,224, 16 MiB 30,287 and 1,844 (50,000 users: 86,895 -> 16,013). The
// file's bytes are the same (the cache decides when a page is written,
// not what it holds: a 100,000-user write with either size differed
// only in the meta page's created_at).
const buildCacheKiB = 8 << 10

func insertAll(tx driver.Conn, c *Contents, meta *Meta, memberOf gidTable) error {
	// each inserts one table's rows, batched (rows.go).
	each := func(table string, cols []string, name func(row []any) string, rows func(add func(row ...any) error) error) error {
		b := newRowBatch(tx, table, cols, name)
		if err := rows(b.add); err != nil {
			b.close()
			return err
		}
		return b.close()
	}
	err := each("users", []string{"uid", "name", "gid", "gecos", "home", "shell", "active", "scim_id"},
		func(r []any) string { return fmt.Sprintf("user %q (uid %d)", r[1], r[0]) },
		func(add func(...any) error) error {
			for _, u := range c.Users {
				if err := add(u.UID, u.Name, u.GID, u.GECOS, u.Home, u.Shell, boolInt(u.Active), u.SCIMID); err != nil {
					return err
				}
			}
			return nil
		})
	if err != nil {
		return err
	}
	err = each("ssh_keys", []string{"user_name", "seq", "key"},
		func(r []any) string { return fmt.Sprintf("ssh key %d of %q", r[1], r[0]) },
		func(add func(...any) error) error {
			for _, u := range c.Users {
				for i, k := range u.SSHKeys {
					if err := add(u.Name, i, k); err != nil {
						return err
					}
					meta.SSHKeys++
				}
			}
			return nil
		})
	if err != nil {
		return err
	}
	err = each("groups", []string{"gid", "name", "scim_id", "members"},
		func(r []any) string { return fmt.Sprintf("group %q (gid %d)", r[1], r[0]) },
		func(add func(...any) error) error {
			for _, g := range c.Groups {
				if err := add(g.GID, g.Name, g.SCIMID, membersColumn(g.Members)); err != nil {
					return err
				}
			}
			return nil
		})
	if err != nil {
		return err
	}
	err = each("memberships", []string{"gid", "user_name"},
		func(r []any) string { return fmt.Sprintf("member %q of gid %d", r[1], r[0]) },
		func(add func(...any) error) error {
			for _, g := range c.Groups {
				for _, m := range g.Members {
					if err := add(g.GID, m); err != nil {
						return err
					}
					meta.Memberships++
				}
			}
			return nil
		})
	if err != nil {
		return err
	}
	// user_groups: each user's gids, ascending, in one row (schema.sql).
	// In c.Users order, like users: the same contents give the same pages.
	err = each("user_groups", []string{"name", "uid", "gid", "gids"},
		func(r []any) string { return fmt.Sprintf("groups of user %q", r[0]) },
		func(add func(...any) error) error {
			var b []byte
			for i, u := range c.Users {
				b = appendGIDList(b[:0], memberOf.of(i))
				if err := add(u.Name, u.UID, u.GID, string(b)); err != nil {
					return err
				}
			}
			return nil
		})
	if err != nil {
		return err
	}
	err = each("slurm_associations", []string{"user_name", "account", "qos", "default_qos", "is_default", "blocked"},
		func(r []any) string { return fmt.Sprintf("association %s/%s", r[0], r[1]) },
		func(add func(...any) error) error {
			for _, a := range c.Associations {
				if err := add(a.User, a.Account, strings.Join(a.QOS, ","), a.DefaultQOS, boolInt(a.IsDefault), boolInt(a.Blocked)); err != nil {
					return err
				}
			}
			return nil
		})
	if err != nil {
		return err
	}
	if err := insertQuotas(tx, c); err != nil {
		return err
	}
	meta.Users, meta.Groups, meta.Associations = len(c.Users), len(c.Groups), len(c.Associations)
	kv := metaValues(meta, contentsHash(c))
	return each("meta", []string{"key", "value"},
		func(r []any) string { return fmt.Sprintf("meta %s", r[0]) },
		func(add func(...any) error) error {
			for k, v := range kv {
				if err := add(k, v); err != nil {
					return err
				}
			}
			return nil
		})
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// SyncFile fsyncs the file at path (its contents; SyncDir makes a rename
// durable).
func SyncFile(path string) error { return syncFile(path) }

func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("snapshot: open %s for fsync: %w", path, err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("snapshot: fsync %s: %w", path, err)
	}
	return nil
}

// syncDir makes the rename itself durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("snapshot: open %s for fsync: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("snapshot: fsync directory %s: %w", dir, err)
	}
	return nil
}

// insertIndex inserts the NSS index's row (index.go) as the file's last
// row, as zeros of the blob's length, and returns the index's layout for
// fillIndex to write into those pages once the connection is closed. Its
// overflow pages must follow one another: SQLite takes new pages from the
// free list first, so a file that has free pages (none so far: the
// tables are only inserted into) is vacuumed before.
//
// Why zeros, then pages (issue 18): bound as a value, the 31 MB blob of
// 100,000 users was copied twice in C (the driver's argument buffer,
// then SQLite's record) on top of the Go copy: the whole write's peak.
// SQLite writes a zeroblob's pages without making it in memory, and the
// file after fillIndex is byte for byte the one the bound blob made (the
// record header of a blob depends on its length only); Verify then reads
// every key back through the C reader, which checks every overflow link.
// The blob itself is never made (indexPlan): fillIndex writes it page by
// page as the layout makes its bytes (31 MB less at the write's peak).
func insertIndex(db *sql.DB, c *Contents, memberOf gidTable) (fill *indexPlan, usable bool, pageSize int, err error) {
	var free int
	if err := db.QueryRow(`PRAGMA freelist_count`).Scan(&free); err != nil {
		return nil, false, 0, fmt.Errorf("nss index: %w", err)
	}
	if free > 0 {
		if _, err := db.Exec(`VACUUM`); err != nil {
			return nil, false, 0, fmt.Errorf("nss index: vacuum: %w", err)
		}
	}
	pageSize = 4096
	if err := db.QueryRow(`PRAGMA page_size`).Scan(&pageSize); err != nil {
		return nil, false, 0, fmt.Errorf("nss index: %w", err)
	}
	users, groups := indexOf(c, memberOf)
	x := planIndexRoom(SchemaVersion, pageSize, users, groups, max(1, c.indexRoom))
	users, groups = nil, nil
	MarkStage("index-planned")
	var inline []byte
	switch {
	case x == nil:
		inline = unusableIndex()
	case x.size < pageSize/2:
		inline = x.bytes()
	}
	if inline != nil {
		// Small enough to stay in page 2 (an unusable index's header):
		// no overflow pages to fill.
		if _, err := db.Exec(`INSERT INTO nss_index (id, data) VALUES (1, ?)`, inline); err != nil {
			return nil, false, 0, fmt.Errorf("nss index: %w", err)
		}
		return nil, x != nil, pageSize, nil
	}
	if _, err := db.Exec(`INSERT INTO nss_index (id, data) VALUES (1, zeroblob(?))`, x.size); err != nil {
		return nil, false, 0, fmt.Errorf("nss index: %w", err)
	}
	return x, true, pageSize, nil
}

// fillIndex writes the index x lays out into the index row of the file
// at path (no connection open on it), which holds zeros of its length
// there (insertIndex): the bytes page 2 keeps, then each overflow page's
// payload after its 4-byte link, which stays. The bytes come in blob
// order (indexPlan.emit) and go out one write per page touched. With
// keep, the bytes are also laid into a blob, returned: the live index an
// in-place update patches next (liveindex.go).
func fillIndex(path string, ps int, x *indexPlan, keep bool) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	first, local, at, _, err := indexChainOf(f, ps, x.size)
	if err != nil {
		return nil, err
	}
	hdr := recordHeader(x.size)
	w := &pageWriter{f: f, n: x.size, l0: local - hdr, c: ps - 4, seg: noSegment, ps: int64(ps),
		page2: int64(ps + at + hdr), pages: int64(first-1) * int64(ps)}
	w.buf = make([]byte, max(w.l0, w.c))
	put := w.put
	var blob []byte
	if keep {
		blob = make([]byte, x.size)
		put = func(off int, b []byte) error {
			copy(blob[off:], b)
			return w.put(off, b)
		}
	}
	if err := x.emit(put); err != nil {
		return nil, fmt.Errorf("write the NSS index into %s: %w", path, err)
	}
	if err := w.flush(); err != nil {
		return nil, fmt.Errorf("write the NSS index into %s: %w", path, err)
	}
	return blob, f.Close()
}

// pageWriter writes a blob's bytes, handed in blob order, into its row's
// pages: the first l0 bytes into page 2 (at file offset page2), then c
// bytes into each overflow page after its 4-byte link (the first at file
// offset pages). It stages one page's bytes and writes them when the
// next byte is another page's.
type pageWriter struct {
	f            *os.File
	n, l0, c     int
	page2, pages int64
	ps           int64
	seg          int // staged: -1 page 2, i overflow page i, noSegment none
	buf          []byte
	lo, hi       int // the staged bytes of buf
	end          int // blob offset after the last byte put
}

const noSegment = -2

func (w *pageWriter) put(off int, b []byte) error {
	if off < w.end || off+len(b) > w.n {
		return fmt.Errorf("bytes [%d, %d) of a %d-byte blob after byte %d: not in blob order", off, off+len(b), w.n, w.end)
	}
	w.end = off + len(b)
	for len(b) > 0 {
		seg, in, room := -1, off, w.l0
		if off >= w.l0 {
			seg, in = (off-w.l0)/w.c, (off-w.l0)%w.c
			room = min(w.c, w.n-w.l0-seg*w.c)
		}
		if seg != w.seg {
			if err := w.flush(); err != nil {
				return err
			}
			w.seg, w.lo = seg, in
		}
		k := copy(w.buf[in:room], b)
		w.hi = in + k
		off, b = off+k, b[k:]
	}
	return nil
}

// flush writes the staged bytes of one page.
func (w *pageWriter) flush() error {
	if w.seg == noSegment || w.lo == w.hi {
		return nil
	}
	at := w.page2 + int64(w.lo)
	if w.seg >= 0 {
		at = w.pages + int64(w.seg)*w.ps + 4 + int64(w.lo)
	}
	if _, err := w.f.WriteAt(w.buf[w.lo:w.hi], at); err != nil {
		if w.seg < 0 {
			return fmt.Errorf("write into page 2: %w", err)
		}
		return fmt.Errorf("write overflow page %d: %w", w.seg+1, err)
	}
	clear(w.buf[w.lo:w.hi])
	w.seg, w.lo, w.hi = noSegment, 0, 0
	return nil
}

// membersColumn is groups.members for a group's members: the list in
// name order, or NULL when it is kept in pieces (schema.sql, index.go).
func membersColumn(m []string) any {
	list := strings.Join(sortedMembers(m), ",")
	if Pieced(len(list)) {
		return nil
	}
	return list
}

// IndexOf is what the NSS index holds of c: every user with its
// supplementary gids (as user_groups), every group with its members in
// name order (as groups.members).
func IndexOf(c *Contents) ([]IndexUser, []IndexGroup) { return indexOf(c, c.userGIDTable()) }

// indexOf is IndexOf with c.userGIDTable() already computed.
func indexOf(c *Contents, memberOf gidTable) ([]IndexUser, []IndexGroup) {
	groups := make([]IndexGroup, len(c.Groups))
	for i, g := range c.Groups {
		members := slices.Clone(g.Members)
		slices.Sort(members)
		groups[i] = IndexGroup{Name: g.Name, GID: g.GID, Members: strings.Join(members, ",")}
	}
	users := make([]IndexUser, len(c.Users))
	for i, u := range c.Users {
		users[i] = IndexUser{Name: u.Name, UID: u.UID, GID: u.GID, GECOS: u.GECOS,
			Home: u.Home, Shell: u.Shell, GIDs: memberOf.of(i), Active: u.Active}
	}
	return users, groups
}

// tempBeside creates an empty temp file next to the live snapshot at
// path (same directory, so the rename is atomic) for a writer to fill.
func tempBeside(path string) (string, error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".new-*")
	if err != nil {
		return "", fmt.Errorf("create temp file in %s: %w", dir, err)
	}
	tmp.Close()
	return tmp.Name(), nil
}

// RemoveStaleTemps removes the temp files writers of the snapshot at path
// left behind when they were killed (tempBeside's names, with SQLite's
// rollback journal beside them) and owned by this process's user. Call it
// only while holding the writers' lock (pipeline.LockCache): a temp file
// is then no running writer's. It returns how many it removed.
func RemoveStaleTemps(path string) int {
	prefix := "." + filepath.Base(path) + ".new-"
	n := RemoveOwnTemps(filepath.Dir(path), func(name string) bool { return strings.HasPrefix(name, prefix) })
	if n > 0 {
		fmt.Fprintf(os.Stderr, "snapshot: removed %d temp file(s) a killed writer left beside %s\n", n, path)
	}
	return n
}

// RemoveOwnTemps removes the regular files in dir whose names match and
// that this process's user owns (never a link or another user's file):
// the temp files a killed writer left, for a caller that holds the lock
// its writers take (RemoveStaleTemps; the publisher's). It returns how
// many it removed.
func RemoveOwnTemps(dir string, match func(name string) bool) int {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		if !match(e.Name()) || !e.Type().IsRegular() {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Geteuid() {
			continue
		}
		if os.Remove(filepath.Join(dir, e.Name())) == nil {
			n++
		}
	}
	return n
}

// removeTemp removes a temp file that was not published, and the rollback
// journal SQLite may have left beside it.
func removeTemp(tmpPath string) {
	os.Remove(tmpPath)
	os.Remove(tmpPath + "-journal")
}
