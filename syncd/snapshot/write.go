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
package snapshot

import (
	"database/sql"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	_ "github.com/mattn/go-sqlite3"
	"syscall"
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
	return write(path, c, time.Time{})
}

// WriteWithSlurmSync is Write for the Slurm step: it also records when
// associations were read back from slurmdbd.
func WriteWithSlurmSync(path string, c *Contents, syncedAt time.Time) (Meta, error) {
	return write(path, c, syncedAt)
}

func write(path string, c *Contents, slurmSyncedAt time.Time) (Meta, error) {
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

	if err := build(tmpPath, c, &meta); err != nil {
		return Meta{}, fmt.Errorf("snapshot: build %s: %w", tmpPath, err)
	}
	if err := syncFile(tmpPath); err != nil {
		return Meta{}, err
	}
	if err := os.Chmod(tmpPath, 0o644); err != nil {
		return Meta{}, fmt.Errorf("snapshot: chmod %s: %w", tmpPath, err)
	}
	if err := Verify(tmpPath, c, meta); err != nil {
		return Meta{}, fmt.Errorf("snapshot: refusing to publish %s: %w", path, err)
	}
	if err := carryFreshness(path, tmpPath); err != nil {
		return Meta{}, err
	}
	// The install step every snapshot goes through (Install, for mirror
	// downloads, ends here too).
	if err := install(tmpPath, path); err != nil {
		return Meta{}, err
	}
	published = true
	return meta, nil
}

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
	tmp := prev + ".tmp"
	os.Remove(tmp)
	if err := os.Link(path, tmp); err != nil {
		return fmt.Errorf("snapshot: keep previous snapshot as %s: %w", prev, err)
	}
	if err := os.Rename(tmp, prev); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("snapshot: keep previous snapshot as %s: %w", prev, err)
	}
	return nil
}

func build(path string, c *Contents, meta *Meta) error {
	// A private, unshared connection that nothing else reads until rename:
	// no fsync per statement (the file is synced once, whole, afterwards).
	db, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=DELETE&_synchronous=OFF&_foreign_keys=off")
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(schemaSQL); err != nil {
		return fmt.Errorf("create schema: %w", err)
	}
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := insertAll(tx, c, meta); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	usable, err := insertIndex(db, c)
	if err != nil {
		return err
	}
	meta.NSSIndex = usable
	// Readers open with immutable=1 and never look for a journal; make
	// sure none is needed.
	if _, err := db.Exec(`PRAGMA journal_mode=DELETE`); err != nil {
		return err
	}
	return db.Close()
}

func insertAll(tx *sql.Tx, c *Contents, meta *Meta) error {
	ins := func(query string, rows func(stmt *sql.Stmt) error) error {
		stmt, err := tx.Prepare(query)
		if err != nil {
			return fmt.Errorf("prepare %q: %w", query, err)
		}
		defer stmt.Close()
		return rows(stmt)
	}
	err := ins(`INSERT INTO users (uid, name, gid, gecos, home, shell, active, scim_id) VALUES (?,?,?,?,?,?,?,?)`,
		func(s *sql.Stmt) error {
			for _, u := range c.Users {
				if _, err := s.Exec(u.UID, u.Name, u.GID, u.GECOS, u.Home, u.Shell, boolInt(u.Active), u.SCIMID); err != nil {
					return fmt.Errorf("user %q (uid %d): %w", u.Name, u.UID, err)
				}
			}
			return nil
		})
	if err != nil {
		return err
	}
	err = ins(`INSERT INTO ssh_keys (user_name, seq, key) VALUES (?,?,?)`, func(s *sql.Stmt) error {
		for _, u := range c.Users {
			for i, k := range u.SSHKeys {
				if _, err := s.Exec(u.Name, i, k); err != nil {
					return fmt.Errorf("ssh key %d of %q: %w", i, u.Name, err)
				}
				meta.SSHKeys++
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	err = ins(`INSERT INTO groups (gid, name, scim_id, members) VALUES (?,?,?,?)`, func(s *sql.Stmt) error {
		for _, g := range c.Groups {
			if _, err := s.Exec(g.GID, g.Name, g.SCIMID, membersColumn(g.Members)); err != nil {
				return fmt.Errorf("group %q (gid %d): %w", g.Name, g.GID, err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	err = ins(`INSERT INTO memberships (gid, user_name) VALUES (?,?)`, func(s *sql.Stmt) error {
		for _, g := range c.Groups {
			for _, m := range g.Members {
				if _, err := s.Exec(g.GID, m); err != nil {
					return fmt.Errorf("member %q of group %q: %w", m, g.Name, err)
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
	memberOf := c.userGIDs()
	err = ins(`INSERT INTO user_groups (name, uid, gid, gids) VALUES (?,?,?,?)`, func(s *sql.Stmt) error {
		var b strings.Builder
		for _, u := range c.Users {
			gids := memberOf[u.Name]
			b.Reset()
			for i, g := range gids {
				if i > 0 {
					b.WriteByte(',')
				}
				b.WriteString(strconv.FormatUint(uint64(g), 10))
			}
			if _, err := s.Exec(u.Name, u.UID, u.GID, b.String()); err != nil {
				return fmt.Errorf("groups of user %q: %w", u.Name, err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	err = ins(`INSERT INTO slurm_associations (user_name, account, qos, default_qos, is_default, blocked) VALUES (?,?,?,?,?,?)`,
		func(s *sql.Stmt) error {
			for _, a := range c.Associations {
				if _, err := s.Exec(a.User, a.Account, strings.Join(a.QOS, ","), a.DefaultQOS, boolInt(a.IsDefault), boolInt(a.Blocked)); err != nil {
					return fmt.Errorf("association %s/%s: %w", a.User, a.Account, err)
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
	return ins(`INSERT INTO meta (key, value) VALUES (?,?)`, func(s *sql.Stmt) error {
		for k, v := range kv {
			if _, err := s.Exec(k, v); err != nil {
				return fmt.Errorf("meta %s: %w", k, err)
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

// insertIndex writes the NSS index (index.go) as the file's last row. Its
// overflow pages must follow one another: SQLite takes new pages from the
// free list first, so a file that has free pages (none so far: the
// tables are only inserted into) is vacuumed before.
func insertIndex(db *sql.DB, c *Contents) (usable bool, err error) {
	var free int
	if err := db.QueryRow(`PRAGMA freelist_count`).Scan(&free); err != nil {
		return false, fmt.Errorf("nss index: %w", err)
	}
	if free > 0 {
		if _, err := db.Exec(`VACUUM`); err != nil {
			return false, fmt.Errorf("nss index: vacuum: %w", err)
		}
	}
	pageSize := 4096
	if err := db.QueryRow(`PRAGMA page_size`).Scan(&pageSize); err != nil {
		return false, fmt.Errorf("nss index: %w", err)
	}
	users, groups := IndexOf(c)
	blob := buildIndexRoom(SchemaVersion, pageSize, users, groups, max(1, c.indexRoom))
	if _, err := db.Exec(`INSERT INTO nss_index (id, data) VALUES (1, ?)`, blob); err != nil {
		return false, fmt.Errorf("nss index: %w", err)
	}
	return IndexUsable(blob), nil
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
func IndexOf(c *Contents) ([]IndexUser, []IndexGroup) { return indexOf(c, c.userGIDs()) }

// indexOf is IndexOf with c.userGIDs() already computed.
func indexOf(c *Contents, memberOf map[string][]uint32) ([]IndexUser, []IndexGroup) {
	groups := make([]IndexGroup, len(c.Groups))
	for i, g := range c.Groups {
		members := slices.Clone(g.Members)
		slices.Sort(members)
		groups[i] = IndexGroup{Name: g.Name, GID: g.GID, Members: strings.Join(members, ",")}
	}
	users := make([]IndexUser, len(c.Users))
	for i, u := range c.Users {
		users[i] = IndexUser{Name: u.Name, UID: u.UID, GID: u.GID, GECOS: u.GECOS,
			Home: u.Home, Shell: u.Shell, GIDs: memberOf[u.Name], Active: u.Active}
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
