package snapshot

import (
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"
)

// openReadOnly opens a published snapshot the way nodes do: read-only and
// immutable, so it takes no locks and never writes a journal.
func openReadOnly(path string) (*sql.DB, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro&immutable=1")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

// Load reads the snapshot at path back into Contents and Meta: for diffs,
// the commit policy, and the Slurm step that adds associations. The error
// wraps fs.ErrNotExist when there is no snapshot yet.
func Load(path string) (*Contents, Meta, error) {
	db, err := openReadOnly(path)
	if err != nil {
		return nil, Meta{}, fmt.Errorf("snapshot: load %s: %w", path, err)
	}
	defer db.Close()
	c, meta, err := load(db)
	if err != nil {
		return nil, Meta{}, fmt.Errorf("snapshot: load %s: %w", path, err)
	}
	return c, meta, nil
}

// ReadMeta is the meta of the snapshot at path, from its meta table
// alone (Load reads every row as well): for a caller that needs the
// serial, times and counts of a file another step may have rewritten.
func ReadMeta(path string) (Meta, error) {
	db, err := openReadOnly(path)
	if err != nil {
		return Meta{}, fmt.Errorf("snapshot: read meta of %s: %w", path, err)
	}
	defer db.Close()
	kv, err := loadMeta(db)
	if err != nil {
		return Meta{}, fmt.Errorf("snapshot: read meta of %s: %w", path, err)
	}
	meta := metaHead(kv)
	for key, n := range map[string]*int{"users": &meta.Users, "groups": &meta.Groups, "memberships": &meta.Memberships,
		"ssh_keys": &meta.SSHKeys, "associations": &meta.Associations} {
		*n, _ = strconv.Atoi(kv[key])
	}
	return meta, nil
}

func load(db *sql.DB) (*Contents, Meta, error) {
	var meta Meta
	kv, err := loadMeta(db)
	if err != nil {
		return nil, meta, err
	}
	if err := schemaOK(kv); err != nil {
		return nil, meta, err
	}
	meta = metaHead(kv)
	c := &Contents{Source: meta.Source}

	keys := make(map[string][]string)
	if err := each(db, `SELECT user_name, key FROM ssh_keys ORDER BY user_name, seq`, func(r *sql.Rows) error {
		var name, key string
		if err := r.Scan(&name, &key); err != nil {
			return err
		}
		keys[name] = append(keys[name], key)
		meta.SSHKeys++
		return nil
	}); err != nil {
		return nil, meta, err
	}
	if err := each(db, `SELECT uid, name, gid, gecos, home, shell, active, scim_id FROM users ORDER BY uid`, func(r *sql.Rows) error {
		var u User
		var active int
		if err := r.Scan(&u.UID, &u.Name, &u.GID, &u.GECOS, &u.Home, &u.Shell, &active, &u.SCIMID); err != nil {
			return err
		}
		u.Active = active == 1
		u.SSHKeys = keys[u.Name]
		c.Users = append(c.Users, u)
		return nil
	}); err != nil {
		return nil, meta, err
	}
	members := make(map[uint32][]string)
	if err := each(db, `SELECT gid, user_name FROM memberships ORDER BY gid, user_name`, func(r *sql.Rows) error {
		var gid uint32
		var name string
		if err := r.Scan(&gid, &name); err != nil {
			return err
		}
		members[gid] = append(members[gid], name)
		meta.Memberships++
		return nil
	}); err != nil {
		return nil, meta, err
	}
	if err := each(db, `SELECT gid, name, scim_id FROM groups ORDER BY gid`, func(r *sql.Rows) error {
		var g Group
		if err := r.Scan(&g.GID, &g.Name, &g.SCIMID); err != nil {
			return err
		}
		g.Members = members[g.GID]
		c.Groups = append(c.Groups, g)
		return nil
	}); err != nil {
		return nil, meta, err
	}
	if err := each(db, `SELECT user_name, account, qos, default_qos, is_default, blocked FROM slurm_associations ORDER BY user_name, account`, func(r *sql.Rows) error {
		var a Association
		var qos string
		var def, blocked int
		if err := r.Scan(&a.User, &a.Account, &qos, &a.DefaultQOS, &def, &blocked); err != nil {
			return err
		}
		if qos != "" {
			a.QOS = strings.Split(qos, ",")
		}
		a.IsDefault, a.Blocked = def == 1, blocked == 1
		c.Associations = append(c.Associations, a)
		return nil
	}); err != nil {
		return nil, meta, err
	}
	if err := loadQuotas(db, c); err != nil {
		return nil, meta, err
	}
	meta.Users, meta.Groups, meta.Associations = len(c.Users), len(c.Groups), len(c.Associations)
	return c, meta, nil
}

// metaHead is the serial, times and source of a meta table (kv).
func metaHead(kv map[string]string) Meta {
	var meta Meta
	meta.Serial, _ = strconv.ParseInt(kv["serial"], 10, 64)
	meta.CreatedAt, _ = time.Parse(time.RFC3339, kv["created_at"])
	meta.SlurmSyncedAt, _ = time.Parse(time.RFC3339, kv["slurm_synced_at"])
	meta.Source = kv["source"]
	return meta
}

// schemaOK: the meta table (kv) is of the schema this syncd writes.
func schemaOK(kv map[string]string) error {
	if v := kv["schema_version"]; v != strconv.Itoa(SchemaVersion) {
		return fmt.Errorf("schema version %q, this syncd writes %d", v, SchemaVersion)
	}
	return nil
}

func loadMeta(db *sql.DB) (map[string]string, error) {
	kv := make(map[string]string)
	err := each(db, `SELECT key, value FROM meta`, func(r *sql.Rows) error {
		var k, v string
		if err := r.Scan(&k, &v); err != nil {
			return err
		}
		kv[k] = v
		return nil
	})
	if err != nil {
		return nil, err
	}
	return kv, nil
}

func each(db *sql.DB, query string, row func(*sql.Rows) error) error {
	rows, err := db.Query(query)
	if err != nil {
		return fmt.Errorf("%s: %w", query, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := row(rows); err != nil {
			return fmt.Errorf("%s: %w", query, err)
		}
	}
	return rows.Err()
}

// IsNotExist reports whether err means there is no snapshot yet.
func IsNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
