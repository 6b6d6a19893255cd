package receiver

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/names"
)

// storeSchema is the receiver's own database. Users and groups keep the
// document the identity provider sent (doc, JSON, without id, meta and
// members); the columns beside it are what uniqueness, filters and the
// snapshot need. ids is the allocation ledger: one row per POSIX name
// that ever got a number, never deleted (a tombstone keeps the number
// after the user or group is gone, so it is never handed to anyone else
// and comes back to the same name).
const storeSchema = `
CREATE TABLE IF NOT EXISTS local_holds(
  posix_name TEXT PRIMARY KEY,
  since TEXT NOT NULL,
  by TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS users(
  id TEXT PRIMARY KEY,
  user_name TEXT NOT NULL,
  user_name_lc TEXT NOT NULL UNIQUE,
  posix_name TEXT NOT NULL UNIQUE,
  external_id TEXT,
  active INTEGER NOT NULL DEFAULT 1,
  doc TEXT NOT NULL,
  created TEXT NOT NULL,
  modified TEXT NOT NULL,
  version INTEGER NOT NULL DEFAULT 1,
  scope TEXT
);
CREATE INDEX IF NOT EXISTS users_external ON users(external_id);
CREATE TABLE IF NOT EXISTS groups(
  id TEXT PRIMARY KEY,
  display_name TEXT NOT NULL,
  display_name_lc TEXT NOT NULL UNIQUE,
  external_id TEXT,
  doc TEXT NOT NULL,
  created TEXT NOT NULL,
  modified TEXT NOT NULL,
  version INTEGER NOT NULL DEFAULT 1,
  scope TEXT
);
CREATE INDEX IF NOT EXISTS groups_external ON groups(external_id);
CREATE TABLE IF NOT EXISTS members(
  group_id TEXT NOT NULL,
  member_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  PRIMARY KEY(group_id, member_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS members_member ON members(member_id);
CREATE INDEX IF NOT EXISTS members_seq ON members(group_id, seq);
CREATE TABLE IF NOT EXISTS ids(
  kind TEXT NOT NULL,
  name TEXT NOT NULL,
  num INTEGER NOT NULL,
  created TEXT NOT NULL,
  released TEXT,
  source TEXT,
  PRIMARY KEY(kind, name),
  UNIQUE(kind, num)
);
CREATE TABLE IF NOT EXISTS ssh_keys(
  posix_name TEXT PRIMARY KEY,
  keys TEXT NOT NULL,
  modified TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS audit(
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  at TEXT NOT NULL,
  client TEXT NOT NULL,
  remote TEXT NOT NULL,
  method TEXT NOT NULL,
  path TEXT NOT NULL,
  status INTEGER NOT NULL,
  target TEXT NOT NULL DEFAULT '',
  detail TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL);
INSERT OR IGNORE INTO meta(key, value) VALUES ('generation', 0);
`

// Store is the receiver's durable copy of the directory.
//
// Every write is committed by an IMMEDIATE transaction in WAL mode with
// synchronous=FULL before its handler returns: a 2xx is on disk and
// survives kill -9 or a power cut. Concurrent writes share a transaction
// and its fsync (group commit, write), each in its own savepoint. Writes are serialised in the process
// (wmu) and across processes (SQLite's write lock with a busy timeout:
// `syncd users add` may run while `syncd receive` serves).
type Store struct {
	db   *sql.DB // writes: IMMEDIATE transactions
	rdb  *sql.DB // reads: deferred, query-only (never blocks writers in WAL)
	path string
	wmu  sync.Mutex
	opts Options
	// reserved is opts.ReservedNames compiled.
	reserved *config.Reserved

	changed chan struct{} // non-blocking notification of a committed write
	// committed is the generation the last write through this Store
	// committed (Committed).
	committed atomic.Int64

	wscope string // the scope of the write in progress (under wmu): whose quota a new number uses
	// wnext is the batch's view of meta's next_uid and next_gid (under
	// wmu; nextCache).
	wnext nextCache

	qmu   sync.Mutex
	queue []*writeJob // writes waiting for the next batch (write)
	// arrived is signalled (without blocking) when a write queues;
	// lastWriters and lastEnd (under wmu) are the last commit's writers
	// and when it ended (awaitRejoin).
	arrived     chan struct{}
	lastWriters int
	lastEnd     time.Time
	// commits and batched count transactions committed and the writes
	// they carried (tests and benchmarks: writes per fsync).
	commits, batched atomic.Int64

	quotaMu sync.Mutex
	issued  map[string][]time.Time // kind/scope -> when each new number of the last hour was given
}

// Options are the allocation rules.
type Options struct {
	UIDMin, UIDMax, GIDMin, GIDMax int64
	// PrimaryGID 0: a private group per user, allocated from the gid range.
	PrimaryGID int64
	// UserNameFrom is "userName" or "email"; UserNameDomains are cut from
	// email-style names (merged into UserNames.Domains).
	UserNameFrom    string
	UserNameDomains []string
	// UserNames maps the userName (or email) to the POSIX name (zero:
	// names.DefaultUsers).
	UserNames names.Users
	// ReservedNames (nil: config.DefaultReservedNames) and LocalNames
	// (the node's /etc/passwd and /etc/group names) are refused as Linux
	// names at push time (400), as validation would leave them out.
	ReservedNames []string
	LocalNames    map[string]bool
	// SSHKeysAttribute is the path of the keys attribute in a user.
	SSHKeysAttribute string
	// QuotaAttribute is the path of the optional home quota attribute;
	// ProjectQuotaAttribute the group's project quota one.
	QuotaAttribute, ProjectQuotaAttribute string
	// Reserved are numbers never to allocate (local accounts and groups).
	ReservedUIDs, ReservedGIDs map[int64]bool
	// GroupNames maps displayNames to Linux names (zero: names.Default):
	// a group whose name cannot be mapped, or maps to another group's
	// Linux name, is refused at push time, so the IdP shows it.
	GroupNames names.Policy
	// MaxNewIDsPerHour bounds new numbers of each kind per hour (0: half
	// the range, at least 1,000): see quota.
	MaxNewIDsPerHour int
}

// stmtCache is how many prepared statements each connection keeps: the
// write path uses about 25 distinct ones.
const stmtCache = "64"

// Open opens (creating if needed) the store at path.
func Open(path string, o Options) (*Store, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("receiver store: %w", err)
	}
	// The store holds the directory (emails, names): root-only. SQLite
	// gives the -wal and -shm files the database file's mode, so the file
	// is created 0600 before SQLite opens it.
	if f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600); err != nil {
		return nil, fmt.Errorf("receiver store: %w", err)
	} else {
		f.Close()
	}
	if err := os.Chmod(path, 0o600); err != nil {
		return nil, fmt.Errorf("receiver store: %w", err)
	}
	// _stmt_cache_size: each connection keeps its prepared statements
	// (the driver's cache, keyed by the SQL text). Without it every query
	// of a write was parsed and planned again: a third of a POST's CPU
	// (BenchmarkCreate, pprof: sqlite3_prepare_v2).
	keepArenaTops()
	dsn := "file:" + path + "?_journal_mode=WAL&_synchronous=FULL&_busy_timeout=10000&_txlock=immediate&_foreign_keys=on&_stmt_cache_size=" + stmtCache
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return nil, fmt.Errorf("receiver store %s: %w", path, err)
	}
	db.SetMaxOpenConns(4)
	if _, err := db.Exec(storeSchema); err != nil {
		db.Close()
		return nil, fmt.Errorf("receiver store %s: %w", path, err)
	}
	if err := migrateScope(db); err != nil {
		db.Close()
		return nil, fmt.Errorf("receiver store %s: %w", path, err)
	}
	var mode string
	if err := db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		db.Close()
		return nil, fmt.Errorf("receiver store %s: journal mode %q, want wal (%v)", path, mode, err)
	}
	rdb, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=10000&_txlock=deferred&_query_only=1&_stmt_cache_size="+stmtCache)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("receiver store %s: %w", path, err)
	}
	rdb.SetMaxOpenConns(8)
	for _, p := range []string{path + "-wal", path + "-shm"} {
		if _, err := os.Stat(p); err == nil {
			os.Chmod(p, 0o600)
		}
	}
	if o.UserNameFrom == "" {
		o.UserNameFrom = "userName"
	}
	o.UserNames = o.UserNames.OrDefault()
	for _, d := range o.UserNameDomains {
		if !slices.Contains(o.UserNames.Domains, d) {
			o.UserNames.Domains = append(slices.Clip(o.UserNames.Domains), d)
		}
	}
	if o.ReservedNames == nil {
		o.ReservedNames = config.DefaultReservedNames
	}
	s := &Store{db: db, rdb: rdb, path: path, opts: o, reserved: config.CompileReserved(o.ReservedNames), changed: make(chan struct{}, 1), arrived: make(chan struct{}, 1)}
	return s, nil
}

// checkFree refuses (400) a Linux name validation would refuse as
// reserved or local, naming the IdP's name and the option.
func (s *Store) checkFree(kind, idpName, linux string) error {
	if r := s.reserved.Match(linux); r != "" {
		return invalid("%s %q becomes the Linux name %q, which is reserved (%q in reserved_names; set %s.rename)", kind, idpName, linux, r, map[string]string{"userName": "user_names", "displayName": "group_names"}[kind])
	}
	if s.opts.LocalNames[linux] {
		return invalid("%s %q becomes the Linux name %q, a local account or group on this host (/etc/passwd, /etc/group; the local one wins): rename it in the IdP or set %s.rename", kind, idpName, linux, map[string]string{"userName": "user_names", "displayName": "group_names"}[kind])
	}
	return nil
}

// Close closes the database.
func (s *Store) Close() error {
	s.rdb.Close()
	return s.db.Close()
}

// Path is the database file.
func (s *Store) Path() string { return s.path }

// Changed is signalled (without blocking) after each committed write made
// through this Store. Writes by other processes are seen by Generation.
func (s *Store) Changed() <-chan struct{} { return s.changed }

// Committed is the generation the last write through this Store
// committed (0: none yet), without a query: what Changed signalled. A
// write by another process since is seen only by Generation.
func (s *Store) Committed() int64 { return s.committed.Load() }

// Generation counts committed changes to the directory, across processes.
func (s *Store) Generation(ctx context.Context) (int64, error) {
	var g int64
	err := s.rdb.QueryRowContext(ctx, "SELECT value FROM meta WHERE key='generation'").Scan(&g)
	return g, err
}

// write runs fn in an IMMEDIATE transaction, bumps the generation when
// fn reports a change, commits (fsync) and notifies; it returns once the
// commit is on disk (or fn's error).
//
// Group commit: writes that arrive while another batch is being written
// wait for the write lock, and the first of them to get it runs all the
// writes waiting by then in one transaction, each inside its own
// SAVEPOINT (a write that fails is rolled back to its savepoint and
// answered with its error; the others go on, as if each had been its own
// transaction, one after another in arrival order), then commits once.
// Every write in the batch returns only after that one commit, so a 2xx
// still means the change is on disk; several concurrent requests share
// one fsync and the WAL frames of the pages they share (the users
// table's last leaf, its indexes, the ledger, meta). If the commit or a
// rollback to a savepoint fails, every write of the batch fails: none is
// answered as written.
func (s *Store) write(ctx context.Context, fn func(tx *sql.Tx) (changed bool, err error)) error {
	j := &writeJob{ctx: ctx, fn: fn, background: ctx.Value(backgroundWrite{}) != nil}
	s.qmu.Lock()
	s.queue = append(s.queue, j)
	s.qmu.Unlock()
	select {
	case s.arrived <- struct{}{}:
	default:
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	// Holding the write lock: j was either written by the batch of the
	// leader before us (done), or is still queued and goes in ours.
	for !j.done {
		s.awaitRejoin()
		s.qmu.Lock()
		n := min(len(s.queue), maxBatch)
		batch := s.queue[:n:n]
		s.queue = s.queue[n:]
		s.qmu.Unlock()
		s.writeBatch(batch)
	}
	return j.err
}

// awaitRejoin (under wmu, before a batch is taken) waits, at most
// until rejoinWait after the last commit ended, for the writers that
// commit answered to come back: the writes in a stream are those of
// clients each waiting for its answer, and without the wait the clients
// split into two halves taking turns (the writes that queued during a
// commit form the next batch while the ones just answered are on their
// way back). The number waited for is the clients' writes of the last
// batch and those that queued while it ran (the audit log's batch is
// no client's: writeJob.background); a lone writer (a batch of one, nothing
// queued) never waits, nor does a write after a pause.
func (s *Store) awaitRejoin() {
	want := min(s.lastWriters, maxBatch)
	if want < 2 {
		return
	}
	deadline := s.lastEnd.Add(rejoinWait)
	for {
		s.qmu.Lock()
		n := len(s.queue)
		s.qmu.Unlock()
		d := time.Until(deadline)
		if n >= want || d <= 0 {
			return
		}
		t := time.NewTimer(d)
		select {
		case <-s.arrived:
			t.Stop()
		case <-t.C:
			return
		}
	}
}

// rejoinWait bounds awaitRejoin's wait, from the end of the last commit.
const rejoinWait = 1 * time.Millisecond

// maxBatch bounds the writes one transaction takes (at 4 to 64 concurrent
// clients a batch is a few writes; the bound keeps a flood from holding
// SQLite's write lock, which `syncd users` waits on, for long).
const maxBatch = 64

// writeJob is one write waiting for, or done by, a batch. done and err
// are set under wmu by the batch's leader, and read under wmu.
type writeJob struct {
	ctx  context.Context
	fn   func(tx *sql.Tx) (bool, error)
	done bool
	err  error
	// background: not a client's write (the audit log's batch): no
	// client waits to send the next one, so awaitRejoin does not count it.
	background bool
}

// backgroundWrite is the context key marking a write no client waits
// for (writeJob.background).
type backgroundWrite struct{}

// writers counts the jobs of clients (not background) in jobs.
func writers(jobs []*writeJob) int {
	n := 0
	for _, j := range jobs {
		if !j.background {
			n++
		}
	}
	return n
}

// writeBatch runs the jobs in one transaction (see write). Called with
// wmu held.
func (s *Store) writeBatch(batch []*writeJob) {
	finish := func(err error) {
		for _, j := range batch {
			if !j.done {
				j.done, j.err = true, err
			}
		}
	}
	// Not a request's context: one client going away must not roll back
	// the others' writes. Each fn queries with its own request's context.
	tx, err := s.db.BeginTx(context.WithoutCancel(batch[0].ctx), nil)
	if err != nil {
		finish(fmt.Errorf("receiver store: begin: %w", err))
		return
	}
	savepoints := len(batch) > 1
	var ok []*writeJob // written, waiting for the commit
	changes := 0
	s.wnext = nextCache{}
	for _, j := range batch {
		if err := j.ctx.Err(); err != nil {
			j.done, j.err = true, err // the client went away before its write began
			continue
		}
		s.wscope = scopeOf(j.ctx).name
		before := s.wnext // what a refused write's counters go back to
		if savepoints {
			if _, err := tx.Exec("SAVEPOINT w"); err != nil {
				tx.Rollback()
				finish(fmt.Errorf("receiver store: savepoint: %w", err))
				return
			}
		}
		changed, err := j.fn(tx)
		if err != nil {
			j.done, j.err = true, err
			if !savepoints {
				tx.Rollback()
				return
			}
			if _, rerr := tx.Exec("ROLLBACK TO w; RELEASE w"); rerr != nil {
				tx.Rollback()
				finish(fmt.Errorf("receiver store: undoing a failed write (%v): %w", err, rerr))
				return
			}
			s.wnext = before
			continue
		}
		if savepoints {
			if _, err := tx.Exec("RELEASE w"); err != nil {
				tx.Rollback()
				finish(fmt.Errorf("receiver store: savepoint: %w", err))
				return
			}
		}
		ok = append(ok, j)
		if changed {
			changes++
		}
	}
	if len(ok) == 0 {
		tx.Rollback()
		finish(nil)
		return
	}
	if err := s.wnext.flush(tx); err != nil {
		tx.Rollback()
		finish(fmt.Errorf("receiver store: %w", err))
		return
	}
	var gen int64
	if changes > 0 {
		if err := tx.QueryRow("UPDATE meta SET value = value + ? WHERE key='generation' RETURNING value", changes).Scan(&gen); err != nil {
			tx.Rollback()
			finish(fmt.Errorf("receiver store: %w", err))
			return
		}
	}
	if err := tx.Commit(); err != nil {
		finish(fmt.Errorf("receiver store: commit: %w", err))
		return
	}
	// The writers of this batch, and those that queued meanwhile: how
	// many the next batch waits for (awaitRejoin).
	s.qmu.Lock()
	s.lastWriters = writers(batch) + writers(s.queue)
	s.qmu.Unlock()
	s.lastEnd = time.Now()
	if gen > 0 {
		s.committed.Store(gen)
	}
	s.commits.Add(1)
	s.batched.Add(int64(len(ok)))
	finish(nil)
	if changes > 0 {
		select {
		case s.changed <- struct{}{}:
		default:
		}
	}
}

// newID is a new resource id: a version 7 UUID (RFC 9562), the
// creation time in milliseconds followed by 74 random bits. The ids of
// new rows sort after the ones before, so the users and groups id
// indexes take each insert on their last page, as the table does,
// instead of on a random one of a page per 100 rows (version 4 ids: a
// page more to write and checkpoint per create at 100,000 users). The
// time is no secret: meta.created says it to whoever may read the id.
func newID() string {
	var b [16]byte
	rand.Read(b[:])
	ms := uint64(time.Now().UnixMilli())
	for i := range 6 {
		b[i] = byte(ms >> (40 - 8*i))
	}
	b[6] = b[6]&0x0f | 0x70
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func now() string { return time.Now().UTC().Format(time.RFC3339Nano) }

// errNoNumber is an exhausted range.
var errNoNumber = errors.New("no free number left in the configured range")

// errNumberTaken is an identity provider sending a number the ledger
// already gave to another name.
var errNumberTaken = errors.New("already belongs to another name")

// allocate returns the number recorded for (kind, name), or records the
// next free one. kind is "uid" or "gid"; names of user-private groups are
// "user:NAME" and of SCIM groups "group:NAME" in the gid ledger, so a
// user and a group with the same name never share an entry.
//
// sent is the number the identity provider sent, if any: it is recorded
// for the name (the number the name had before stays in the ledger as a
// retired row, so it is never handed to anyone else).
//
// New numbers come from a counter per kind that only goes up, skipping
// numbers already in the ledger and reserved ones (local accounts): a
// number is never given to a second name.
func (s *Store) allocate(tx *sql.Tx, kind, name string, sent *int64) (int64, error) {
	return s.allocatePrefer(tx, kind, name, sent, 0)
}

// allocatePrefer is allocate that takes prefer for a new name when that
// number is free (a private group gets its user's uid as gid when it can).
func (s *Store) allocatePrefer(tx *sql.Tx, kind, name string, sent *int64, prefer int64) (int64, error) {
	e, err := lookupID(tx, kind, name)
	if err != nil {
		return 0, err
	}
	n, _, err := s.allocateFrom(tx, kind, name, sent, prefer, e, "")
	return n, err
}

// ledgerEntry is a (kind, name) row of the ledger as lookupID read it.
type ledgerEntry struct {
	found    bool
	num      int64
	released bool
	source   sql.NullString
}

// lookupID reads the ledger row of (kind, name), if any.
func lookupID(tx *sql.Tx, kind, name string) (ledgerEntry, error) {
	var e ledgerEntry
	err := tx.QueryRow("SELECT num, released IS NOT NULL, source FROM ids WHERE kind=? AND name=?", kind, name).Scan(&e.num, &e.released, &e.source)
	if errors.Is(err, sql.ErrNoRows) {
		return ledgerEntry{}, nil
	}
	e.found = err == nil
	return e, err
}

// allocateFrom is allocatePrefer with the name's ledger row already read
// (e, by lookupID in the same transaction). source, when not empty, is
// recorded on a row it inserts (ids.source: users.go inheritsUID);
// inserted says whether it did, so the caller need not write it again.
func (s *Store) allocateFrom(tx *sql.Tx, kind, name string, sent *int64, prefer int64, e ledgerEntry, source string) (n int64, inserted bool, err error) {
	var src any
	if source != "" {
		src = source
	}
	insert := func(num int64) error {
		_, err := tx.Exec("INSERT INTO ids(kind, name, num, created, source) VALUES(?,?,?,?,?)", kind, name, num, now(), src)
		return err
	}
	switch {
	case e.found && (sent == nil || *sent == e.num):
		if e.released {
			if _, err := tx.Exec("UPDATE ids SET released=NULL WHERE kind=? AND name=? AND released IS NOT NULL", kind, name); err != nil {
				return 0, false, err
			}
		}
		return e.num, false, nil
	case e.found:
		if owner := numOwner(tx, kind, *sent); owner != "" {
			return 0, false, fmt.Errorf("%s %d for %q: %w (%s)", kind, *sent, name, errNumberTaken, owner)
		}
		retired := fmt.Sprintf("retired:%s:%d", name, e.num)
		if _, err := tx.Exec("UPDATE ids SET name=?, released=? WHERE kind=? AND name=?", retired, now(), kind, name); err != nil {
			return 0, false, err
		}
		if err := insert(*sent); err != nil {
			return 0, false, err
		}
		return *sent, true, nil
	case sent != nil:
		if owner := numOwner(tx, kind, *sent); owner != "" {
			return 0, false, fmt.Errorf("%s %d for %q: %w (%s)", kind, *sent, name, errNumberTaken, owner)
		}
		if err := insert(*sent); err != nil {
			return 0, false, err
		}
		return *sent, true, nil
	}
	lo, hi, reserved := s.opts.UIDMin, s.opts.UIDMax, s.opts.ReservedUIDs
	if kind == "gid" {
		lo, hi, reserved = s.opts.GIDMin, s.opts.GIDMax, s.opts.ReservedGIDs
	}
	if err := s.quota(kind, lo, hi); err != nil {
		return 0, false, err
	}
	// The name has no row (e), so the insert can only meet the number's
	// uniqueness: no row inserted means another name holds it. One
	// statement instead of a numOwner query and an insert.
	if prefer >= lo && prefer <= hi && !reserved[prefer] {
		if ok, err := s.insertFree(tx, kind, name, prefer, src); err != nil || ok {
			return prefer, ok, err
		}
	}
	next, err := s.wnext.get(tx, kind)
	if err != nil {
		return 0, false, err
	}
	for n = max(next, lo); n <= hi; n++ {
		if reserved[n] {
			continue
		}
		ok, err := s.insertFree(tx, kind, name, n, src)
		if err != nil {
			return 0, false, err
		}
		if ok {
			break
		}
	}
	if n > hi {
		return 0, false, fmt.Errorf("%s for %q: %w (%d-%d); widen uid_max/gid_max", kind, name, errNoNumber, lo, hi)
	}
	s.wnext.set(kind, n+1)
	return n, true, nil
}

// nextCache is a batch's view of the counters new numbers come from
// (meta's next_uid and next_gid): read once per batch, written once
// before its commit (flush), instead of a SELECT and an UPDATE of meta
// for every number given (issue 18, recv2: two of a create's eleven
// statements, under the write lock). The batch's transaction holds
// SQLite's write lock, so no other process moves a counter meanwhile; a
// write undone to its savepoint puts the cache back as it was before
// that write (writeBatch), so a refused write uses up no number, as
// before. Under wmu.
type nextCache struct {
	have, dirty [2]bool
	val         [2]int64
}

func nextSlot(kind string) int {
	if kind == "gid" {
		return 1
	}
	return 0
}

// get is the counter of kind (0 when meta has none yet).
func (c *nextCache) get(tx *sql.Tx, kind string) (int64, error) {
	i := nextSlot(kind)
	if !c.have[i] {
		var next int64
		if err := tx.QueryRow("SELECT value FROM meta WHERE key=?", "next_"+kind).Scan(&next); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return 0, err
		}
		c.have[i], c.val[i] = true, next
	}
	return c.val[i], nil
}

// set moves the counter of kind to next (written by flush).
func (c *nextCache) set(kind string, next int64) {
	i := nextSlot(kind)
	c.have[i], c.dirty[i], c.val[i] = true, true, next
}

// flush writes the counters the batch moved into meta, in the batch's
// transaction, before its commit.
func (c *nextCache) flush(tx *sql.Tx) error {
	for i, kind := range [2]string{"uid", "gid"} {
		if !c.dirty[i] {
			continue
		}
		if _, err := tx.Exec("INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value=excluded.value", "next_"+kind, c.val[i]); err != nil {
			return err
		}
		c.dirty[i] = false
	}
	return nil
}

// insertFree records num for (kind, name) when no name holds num yet
// (the caller knows name has no row); false when another name holds it.
func (s *Store) insertFree(tx *sql.Tx, kind, name string, num int64, src any) (bool, error) {
	res, err := tx.Exec("INSERT INTO ids(kind, name, num, created, source) VALUES(?,?,?,?,?) ON CONFLICT DO NOTHING", kind, name, num, now(), src)
	if err != nil {
		return false, err
	}
	k, err := res.RowsAffected()
	return k == 1, err
}

// numOwner is the ledger name holding n, or "".
func numOwner(tx *sql.Tx, kind string, n int64) string {
	var name string
	if tx.QueryRow("SELECT name FROM ids WHERE kind=? AND num=?", kind, n).Scan(&name) != nil {
		return ""
	}
	return name
}

// release marks (kind, name) as belonging to nobody now; the row and its
// number stay.
func release(tx *sql.Tx, kind, name string) error {
	_, err := tx.Exec("UPDATE ids SET released=? WHERE kind=? AND name=? AND released IS NULL", now(), kind, name)
	return err
}

// rename moves an allocation to a new name when the new name has none:
// a renamed user keeps its uid.
func rename(tx *sql.Tx, kind, from, to string) error {
	if from == to {
		return nil
	}
	var x int
	if tx.QueryRow("SELECT 1 FROM ids WHERE kind=? AND name=?", kind, to).Scan(&x) == nil {
		return nil
	}
	_, err := tx.Exec("UPDATE ids SET name=? WHERE kind=? AND name=?", to, kind, from)
	return err
}

var sqlReadOnly = sql.TxOptions{ReadOnly: true}

// quota takes one new number of kind from the hourly allowance, or says
// when one is free again. Numbers are never reused (the ledger), so
// a token holder creating users in a loop would otherwise use up the
// range for good (issue 20: 10,000 uids in about 100 s at the default
// rate limit). The allowance is the process's own (a restart resets it)
// and each client scope has its own (shared_scope or not: one IdP's
// token cannot use up another's allowance; local commands share one);
// numbers an IdP sends are not counted.
func (s *Store) quota(kind string, lo, hi int64) error {
	limit := s.opts.MaxNewIDsPerHour
	if limit <= 0 {
		limit = int(max(1000, (hi-lo+1)/2))
	}
	now := time.Now()
	s.quotaMu.Lock()
	defer s.quotaMu.Unlock()
	if s.issued == nil {
		s.issued = map[string][]time.Time{}
	}
	key := kind + "/" + s.wscope
	times := s.issued[key]
	i := 0
	for i < len(times) && now.Sub(times[i]) >= time.Hour {
		i++
	}
	times = times[i:]
	if len(times) >= limit {
		s.issued[key] = times
		// A plain error: the library answers 500 with this detail (it
		// allows no 429 on a create), and identity providers retry 5xx.
		return fmt.Errorf("%d new %ss given to scope %q in the last hour, the most receiver.max_new_ids_per_hour allows (%d; numbers are never reused): the next is free in %s",
			len(times), kind, s.wscope, limit, times[0].Add(time.Hour).Sub(now).Round(time.Second))
	}
	s.issued[key] = append(times, now)
	return nil
}
