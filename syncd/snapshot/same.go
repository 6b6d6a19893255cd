package snapshot

import (
	"cmp"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// EachID calls group for every group of the snapshot at path, in gid
// order, then user for every user, in uid order, with only what
// validation's live index reads filled in (validate.LiveIDs: a user's
// name, uid, primary gid, home and SCIM id; a group's name, gid and SCIM
// id; no GECOS, shell, keys, members or quotas), one row at a time: the
// records passed are reused. For `sync --once` into a live cache
// (pipeline/sync.go), whose nothing-changed case then compares the rest
// with the file row by row (Matches) instead of loading it. size, first,
// gets the counts the meta table states (a size hint). Its Meta has
// Load's serial, times, source and user and group counts (the other
// counts are Matches'). The error wraps fs.ErrNotExist when there is no
// snapshot; the callbacks may have been called before another error.
func EachID(path string, size func(users, groups int), group func(*Group), user func(*User)) (Meta, error) {
	db, err := openReadOnly(path)
	if err != nil {
		return Meta{}, fmt.Errorf("snapshot: load %s: %w", path, err)
	}
	defer db.Close()
	meta, err := eachID(db, size, group, user)
	if err != nil {
		return Meta{}, fmt.Errorf("snapshot: load %s: %w", path, err)
	}
	return meta, nil
}

func eachID(db *sql.DB, size func(users, groups int), group func(*Group), user func(*User)) (Meta, error) {
	kv, err := loadMeta(db)
	if err != nil {
		return Meta{}, err
	}
	if err := schemaOK(kv); err != nil {
		return Meta{}, err
	}
	meta := metaHead(kv)
	users, _ := strconv.Atoi(kv["users"])
	groups, _ := strconv.Atoi(kv["groups"])
	size(users, groups)
	var g Group
	if err := each(db, `SELECT gid, name, scim_id FROM groups ORDER BY gid`, func(r *sql.Rows) error {
		if err := r.Scan(&g.GID, &g.Name, &g.SCIMID); err != nil {
			return err
		}
		meta.Groups++
		group(&g)
		return nil
	}); err != nil {
		return Meta{}, err
	}
	var u User
	if err := each(db, `SELECT uid, name, gid, home, scim_id FROM users ORDER BY uid`, func(r *sql.Rows) error {
		if err := r.Scan(&u.UID, &u.Name, &u.GID, &u.Home, &u.SCIMID); err != nil {
			return err
		}
		meta.Users++
		user(&u)
		return nil
	}); err != nil {
		return Meta{}, err
	}
	return meta, nil
}

// Matches reports whether Load(path) would give users and groups equal,
// field by field and in order, to next's (SameUser, SameGroup: keys and
// members in order, quotas), reading the file's rows one at a time
// instead of holding them; with the Meta Load would give. True means
// commit.Compute of the two finds nothing. It never says true for
// contents that differ: next's lists out of uid or gid order, a field, a
// key, a member or a quota that differs, a row more or fewer, each make
// it false (the caller then loads the file and computes the diff). It
// reads the rows, not the digest the file stores, so a file changed
// behind syncd's back (its digest not updated) is still found to differ.
// Associations and the source's name are not compared (the diff does not
// compare them either); their count is in the Meta.
func Matches(path string, next *Contents) (bool, Meta, error) {
	db, err := openReadOnly(path)
	if err != nil {
		return false, Meta{}, fmt.Errorf("snapshot: compare with %s: %w", path, err)
	}
	defer db.Close()
	same, meta, err := matches(db, next)
	if err != nil {
		return false, Meta{}, fmt.Errorf("snapshot: compare with %s: %w", path, err)
	}
	return same, meta, nil
}

func matches(db *sql.DB, next *Contents) (bool, Meta, error) {
	kv, err := loadMeta(db)
	if err != nil {
		return false, Meta{}, err
	}
	if err := schemaOK(kv); err != nil {
		return false, Meta{}, err
	}
	meta := metaHead(kv)
	// Load's lists are in uid and gid order (its queries'); next's must
	// be too for a walk in step (validation makes them so).
	if next == nil || !slices.IsSortedFunc(next.Users, func(a, b User) int { return cmp.Compare(a.UID, b.UID) }) ||
		!slices.IsSortedFunc(next.Groups, func(a, b Group) int { return cmp.Compare(a.GID, b.GID) }) {
		return false, meta, nil
	}
	same := true
	// Scanned into the types Load scans into, so that a row Load could
	// not read (an id beyond 32 bits) is an error here too.
	var name, gecos, home, shell, scimID string
	var uid, gid uint32
	var active int

	if err := rowsMatch(db, `SELECT uid, name, gid, gecos, home, shell, active, scim_id FROM users ORDER BY uid`,
		len(next.Users), &meta.Users, &same, func(r *sql.Rows, i int) (bool, error) {
			err := r.Scan(&uid, &name, &gid, &gecos, &home, &shell, &active, &scimID)
			u := &next.Users[i]
			return u.UID == uid && u.GID == gid && (active == 1) == u.Active && u.Name == name &&
				u.GECOS == gecos && u.Home == home && u.Shell == shell && u.SCIMID == scimID, err
		}); err != nil {
		return false, meta, err
	}
	// Keys by user name: the users are next's (else same is false and
	// nothing more is compared), merged with them in name order.
	byName := make([]int32, len(next.Users))
	for k := range byName {
		byName[k] = int32(k)
	}
	if same {
		slices.SortFunc(byName, func(a, b int32) int { return strings.Compare(next.Users[a].Name, next.Users[b].Name) })
	}
	if err := listsMatch(db, `SELECT user_name, key FROM ssh_keys ORDER BY user_name, seq`, len(byName),
		func(j int) string { return next.Users[byName[j]].Name },
		func(j int) []string { return next.Users[byName[j]].SSHKeys }, &meta.SSHKeys, &same); err != nil {
		return false, meta, err
	}
	if err := rowsMatch(db, `SELECT gid, name, scim_id FROM groups ORDER BY gid`,
		len(next.Groups), &meta.Groups, &same, func(r *sql.Rows, i int) (bool, error) {
			err := r.Scan(&gid, &name, &scimID)
			g := &next.Groups[i]
			return g.GID == gid && g.Name == name && g.SCIMID == scimID, err
		}); err != nil {
		return false, meta, err
	}
	if err := listsMatch(db, `SELECT gid, user_name FROM memberships ORDER BY gid, user_name`, len(next.Groups),
		func(j int) uint32 { return next.Groups[j].GID }, func(j int) []string { return next.Groups[j].Members },
		&meta.Memberships, &same); err != nil {
		return false, meta, err
	}

	// Associations: not compared, but read as Load reads them (a row it
	// could not read is an error here too) and counted.
	var account, qos, defQOS string
	var def, blocked int
	if err := each(db, `SELECT user_name, account, qos, default_qos, is_default, blocked FROM slurm_associations`, func(r *sql.Rows) error {
		meta.Associations++
		return r.Scan(&name, &account, &qos, &defQOS, &def, &blocked)
	}); err != nil {
		return false, meta, err
	}
	if same {
		if err := quotasMatch(db, next, byName, &same); err != nil {
			return false, meta, err
		}
	}
	return same, meta, nil
}

// rowsMatch walks query's rows beside n records in the same order: row
// scans the row and says whether it is record i; there must be as many
// rows as records. It counts every row in counted (the Meta), compared
// or not, and sets *same false at the first difference; after that rows
// are only counted.
func rowsMatch(db *sql.DB, query string, n int, counted *int, same *bool, row func(r *sql.Rows, i int) (bool, error)) error {
	i := 0
	err := each(db, query, func(r *sql.Rows) error {
		*counted++
		if !*same {
			return nil
		}
		if i == n {
			*same = false
			return nil
		}
		ok, err := row(r, i)
		*same, i = ok, i+1
		return err
	})
	if i != n {
		*same = false
	}
	return err
}

// listsMatch walks query's rows of (key, value), in key and list order,
// beside n records in key order (key(j)): the values of record j's key
// must be its list (list(j)), in order. A row of a key no record has is
// skipped, as Load skips it. Rows are counted in counted; *same becomes
// false at the first difference.
func listsMatch[K cmp.Ordered](db *sql.DB, query string, n int, key func(j int) K, list func(j int) []string, counted *int, same *bool) error {
	j, k := 0, 0 // record j, its k-th value
	var rk K
	var v string
	err := each(db, query, func(r *sql.Rows) error {
		*counted++
		if !*same {
			return nil
		}
		if err := r.Scan(&rk, &v); err != nil {
			return err
		}
		for ; j < n && key(j) < rk; j, k = j+1, 0 {
			if k != len(list(j)) {
				*same = false
				return nil
			}
		}
		if j == n || key(j) != rk {
			return nil
		}
		if l := list(j); k >= len(l) || l[k] != v {
			*same = false
			return nil
		}
		k++
		return nil
	})
	for ; err == nil && *same && j < n; j, k = j+1, 0 {
		*same = k == len(list(j))
	}
	return err
}

// quotasMatch: the quota rows are next's Quota fields (Load's
// loadQuotas: a user or group without a row has none; a limit is one
// row, read here in decimal). byName is next.Users in name order.
func quotasMatch(db *sql.DB, next *Contents, byName []int32, same *bool) error {
	has, err := hasQuotaTable(db)
	if err != nil || !has {
		*same = *same && !slices.ContainsFunc(next.Users, func(u User) bool { return u.Quota != 0 }) &&
			!slices.ContainsFunc(next.Groups, func(g Group) bool { return g.Quota != 0 })
		return err
	}
	limit := func(q uint64) []string {
		if q == 0 {
			return nil
		}
		return []string{strconv.FormatUint(q, 10)}
	}
	groups := make([]int32, len(next.Groups))
	for k := range groups {
		groups[k] = int32(k)
	}
	slices.SortFunc(groups, func(a, b int32) int { return strings.Compare(next.Groups[a].Name, next.Groups[b].Name) })
	var rows int // not in the Meta
	if err := listsMatch(db, `SELECT name, hard FROM quotas WHERE kind = 'user' ORDER BY name`, len(byName),
		func(j int) string { return next.Users[byName[j]].Name }, func(j int) []string { return limit(next.Users[byName[j]].Quota) },
		&rows, same); err != nil {
		return err
	}
	return listsMatch(db, `SELECT name, hard FROM quotas WHERE kind = 'group' ORDER BY name`, len(groups),
		func(j int) string { return next.Groups[groups[j]].Name }, func(j int) []string { return limit(next.Groups[groups[j]].Quota) },
		&rows, same)
}
