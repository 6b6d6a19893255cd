package snapshot

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
)

// Per-user and per-team storage limits from the identity provider travel
// in the snapshot's quotas table (schema.sql), so that a storage node that only
// mirrors the head gets them with everything else, signed and verified
// the same way. Compatibility: the table is optional. The C reader never
// reads it (nor does it check for it); Load of a file without it (an
// older writer's) gives no limits; an older syncd ignores it. A live file
// without it is written whole once (Update's in-place path cannot add a
// table), after which updates are in place again. Only users with a limit
// have a row, and only those limits enter the contents digest, so the
// digest of contents without limits is what older writers stored.
//
// Cost, measured (Dec 1, this 2-core machine under load, generated
// directories): one user's limit set is an in-place update of 3 pages,
// none of them the NSS index (a GECOS change: 6, 2 of the index), 32 ms
// at 2,000 users and 262 ms at 20,000 (the GECOS change 45 and 218 ms).

// hasQuotaTable reports whether the database has the quotas table.
func hasQuotaTable(q interface {
	QueryRow(string, ...any) *sql.Row
}) (bool, error) {
	var n int
	err := q.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'quotas'`).Scan(&n)
	return n == 1, err
}

// quotaRow is one row of the quotas table; hard 0 in a diff: removed.
type quotaRow struct {
	kind, name string
	hard       uint64
}

// quotaRows are c's limits: users' then groups'.
func quotaRows(c *Contents) []quotaRow {
	var rows []quotaRow
	for _, u := range c.Users {
		if u.Quota > 0 {
			rows = append(rows, quotaRow{"user", u.Name, u.Quota})
		}
	}
	for _, g := range c.Groups {
		if g.Quota > 0 {
			rows = append(rows, quotaRow{"group", g.Name, g.Quota})
		}
	}
	return rows
}

// insertQuotas writes c's limits (Write), batched like the other
// tables (rows.go).
func insertQuotas(conn driver.Conn, c *Contents) error {
	b := newRowBatch(conn, "quotas", []string{"kind", "name", "hard"},
		func(r []any) string { return fmt.Sprintf("quota of %s %q", r[0], r[1]) })
	for _, q := range quotaRows(c) {
		if err := b.add(q.kind, q.name, int64(q.hard)); err != nil {
			b.close()
			return err
		}
	}
	return b.close()
}

// loadQuotas sets the Quota of c's users and groups from the table, when
// the file has one.
func loadQuotas(db *sql.DB, c *Contents) error {
	if ok, err := hasQuotaTable(db); err != nil || !ok {
		return err
	}
	lim := map[string]uint64{}
	if err := each(db, `SELECT kind, name, hard FROM quotas`, func(r *sql.Rows) error {
		var kind, name string
		var hard int64
		if err := r.Scan(&kind, &name, &hard); err != nil {
			return err
		}
		if hard > 0 {
			lim[kind+":"+name] = uint64(hard)
		}
		return nil
	}); err != nil {
		return err
	}
	for i := range c.Users {
		c.Users[i].Quota = lim["user:"+c.Users[i].Name]
	}
	for i := range c.Groups {
		c.Groups[i].Quota = lim["group:"+c.Groups[i].Name]
	}
	return nil
}

// quotaPart lists the quota rows that change: set, changed, cleared, or
// gone with their user or group (hard 0: the row is removed).
func (d *rowDiff) quotaPart(prev, next *Contents) {
	d.quotas = quotaChanges(d.quotas, "user", prev.Users, next.Users, d.prevUsers, d.nextUsers,
		func(u *User) (string, uint64) { return u.Name, u.Quota })
	d.quotas = quotaChanges(d.quotas, "group", prev.Groups, next.Groups, d.prevGroups, d.nextGroups,
		func(g *Group) (string, uint64) { return g.Name, g.Quota })
}

// quotaChanges appends to rows the quota rows of kind that differ
// between prev and next (prevBy, nextBy: the same records by name).
func quotaChanges[T any](rows []quotaRow, kind string, prev, next []T, prevBy, nextBy map[string]*T, of func(*T) (string, uint64)) []quotaRow {
	for i := range next {
		name, q := of(&next[i])
		var was uint64
		if o := prevBy[name]; o != nil {
			_, was = of(o)
		}
		if was != q {
			rows = append(rows, quotaRow{kind, name, q})
		}
	}
	for i := range prev {
		if name, q := of(&prev[i]); q != 0 && nextBy[name] == nil {
			rows = append(rows, quotaRow{kind, name, 0})
		}
	}
	return rows
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
	for _, q := range d.quotas {
		query, args := `DELETE FROM quotas WHERE kind = ? AND name = ?`, []any{q.kind, q.name}
		if q.hard > 0 {
			query, args = `INSERT OR REPLACE INTO quotas (kind, name, hard) VALUES (?, ?, ?)`, []any{q.kind, q.name, int64(q.hard)}
		}
		if err := exec("quota of "+q.kind+" "+q.name, query, args...); err != nil {
			return err
		}
	}
	return nil
}

// verifyQuotas checks the quota rows of the file at path against next:
// their count, and each changed row.
func verifyQuotas(path string, d *rowDiff, next *Contents) error {
	want := len(quotaRows(next))
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
	for _, q := range d.quotas {
		var hard int64
		err := db.QueryRow(`SELECT hard FROM quotas WHERE kind = ? AND name = ?`, q.kind, q.name).Scan(&hard)
		if q.hard == 0 && !errors.Is(err, sql.ErrNoRows) || q.hard > 0 && (err != nil || uint64(hard) != q.hard) {
			return fmt.Errorf("verify: quota of %s %q is %d, %v; want %d", q.kind, q.name, hard, err, q.hard)
		}
	}
	return nil
}
