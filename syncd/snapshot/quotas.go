package snapshot

import (
	"database/sql"
	"errors"
	"fmt"
)

// Per-user storage limits from the identity provider travel in the
// snapshot's quotas table (schema.sql), so that a storage node that only
// mirrors the head gets them with everything else, signed and verified
// the same way. Compatibility: the table is optional. The C reader never
// reads it (nor does it check for it); Load of a file without it (an
// older writer's) gives no limits; an older syncd ignores it. A live file
// without it is written whole once (Update's in-place path cannot add a
// table), after which updates are in place again. Only users with a limit
// have a row, and only those limits enter the contents digest, so the
// digest of contents without limits is what older writers stored.

// hasQuotaTable reports whether the database has the quotas table.
func hasQuotaTable(q interface {
	QueryRow(string, ...any) *sql.Row
}) (bool, error) {
	var n int
	err := q.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'quotas'`).Scan(&n)
	return n == 1, err
}

// insertQuotas writes the limits of c's users (Write).
func insertQuotas(tx *sql.Tx, c *Contents) error {
	stmt, err := tx.Prepare(`INSERT INTO quotas (kind, name, hard) VALUES ('user', ?, ?)`)
	if err != nil {
		return fmt.Errorf("prepare quotas: %w", err)
	}
	defer stmt.Close()
	for _, u := range c.Users {
		if u.Quota == 0 {
			continue
		}
		if _, err := stmt.Exec(u.Name, int64(u.Quota)); err != nil {
			return fmt.Errorf("quota of %q: %w", u.Name, err)
		}
	}
	return nil
}

// loadQuotas sets the Quota of c's users from the table, when the file
// has one.
func loadQuotas(db *sql.DB, c *Contents) error {
	if ok, err := hasQuotaTable(db); err != nil || !ok {
		return err
	}
	lim := map[string]uint64{}
	if err := each(db, `SELECT name, hard FROM quotas WHERE kind = 'user'`, func(r *sql.Rows) error {
		var name string
		var hard int64
		if err := r.Scan(&name, &hard); err != nil {
			return err
		}
		if hard > 0 {
			lim[name] = uint64(hard)
		}
		return nil
	}); err != nil {
		return err
	}
	for i := range c.Users {
		c.Users[i].Quota = lim[c.Users[i].Name]
	}
	return nil
}

// quotaPart lists the users whose quota row changes: set, changed,
// cleared, or gone with the user (Quota 0: the row is removed).
func (d *rowDiff) quotaPart(prev, next *Contents) {
	for i := range next.Users {
		n := &next.Users[i]
		var was uint64
		if o := d.prevUsers[n.Name]; o != nil {
			was = o.Quota
		}
		if was != n.Quota {
			d.quotas = append(d.quotas, User{Name: n.Name, Quota: n.Quota})
		}
	}
	for i := range prev.Users {
		if o := &prev.Users[i]; o.Quota != 0 && d.nextUsers[o.Name] == nil {
			d.quotas = append(d.quotas, User{Name: o.Name})
		}
	}
}

// errNoQuotaTable sends Update to a whole write.
var errNoQuotaTable = errors.New("the live snapshot has no quotas table (an older syncd wrote it): written whole once to add it")

// applyQuotas changes the quota rows d lists, in applyRows' transaction.
func applyQuotas(tx *sql.Tx, d *rowDiff, exec func(what, query string, args ...any) error) error {
	if len(d.quotas) == 0 {
		return nil
	}
	if ok, err := hasQuotaTable(tx); err != nil {
		return err
	} else if !ok {
		return errNoQuotaTable
	}
	for _, u := range d.quotas {
		q, args := `DELETE FROM quotas WHERE kind = 'user' AND name = ?`, []any{u.Name}
		if u.Quota > 0 {
			q, args = `INSERT OR REPLACE INTO quotas (kind, name, hard) VALUES ('user', ?, ?)`, []any{u.Name, int64(u.Quota)}
		}
		if err := exec("quota of "+u.Name, q, args...); err != nil {
			return err
		}
	}
	return nil
}

// verifyQuotas checks the quota rows of the file at path against next:
// their count, and each changed row.
func verifyQuotas(path string, d *rowDiff, next *Contents) error {
	want := 0
	for _, u := range next.Users {
		if u.Quota > 0 {
			want++
		}
	}
	db, err := openReadOnly(path)
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	defer db.Close()
	ok, err := hasQuotaTable(db)
	if err != nil || !ok {
		if err == nil && want > 0 {
			err = errNoQuotaTable
		}
		return err
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM quotas`).Scan(&n); err != nil || n != want {
		return fmt.Errorf("verify: quotas has %d rows, %v; want %d", n, err, want)
	}
	for _, u := range d.quotas {
		var hard int64
		err := db.QueryRow(`SELECT hard FROM quotas WHERE kind = 'user' AND name = ?`, u.Name).Scan(&hard)
		if u.Quota == 0 && !errors.Is(err, sql.ErrNoRows) || u.Quota > 0 && (err != nil || uint64(hard) != u.Quota) {
			return fmt.Errorf("verify: quota of %q is %d, %v; want %d", u.Name, hard, err, u.Quota)
		}
	}
	return nil
}
