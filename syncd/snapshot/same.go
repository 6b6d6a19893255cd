package snapshot

import (
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
	if next == nil || !slices.IsSortedFunc(next.Users, func(a, b User) int { return cmpU32(a.UID, b.UID) }) ||
		!slices.IsSortedFunc(next.Groups, func(a, b Group) int { return cmpU32(a.GID, b.GID) }) {
		return false, meta, nil
	}
	same := true
	// Scanned into the types Load scans into, so that a row Load could
	// not read (an id beyond 32 bits) is an error here too.
	var raw [6]sql.RawBytes
	var uid, gid uint32
	var active int

	// Users in uid order, every column.
	i := 0
	if err := each(db, `SELECT uid, name, gid, gecos, home, shell, active, scim_id FROM users ORDER BY uid`, func(r *sql.Rows) error {
		meta.Users++
		if !same {
			return nil // counted for the Meta only
		}
		if err := r.Scan(&uid, &raw[0], &gid, &raw[1], &raw[2], &raw[3], &active, &raw[4]); err != nil {
			return err
		}
		if i >= len(next.Users) {
			same = false
			return nil
		}
		u := &next.Users[i]
		i++
		same = u.UID == uid && u.GID == gid && (active == 1) == u.Active &&
			string(raw[0]) == u.Name && string(raw[1]) == u.GECOS && string(raw[2]) == u.Home &&
			string(raw[3]) == u.Shell && string(raw[4]) == u.SCIMID
		return nil
	}); err != nil {
		return false, meta, err
	}
	same = same && i == len(next.Users)

	// Keys by user name (the users are the same: the names are next's),
	// merged with next's users in name order; a key row of a name no
	// user has is not Load's either.
	byName := make([]int32, len(next.Users))
	for k := range byName {
		byName[k] = int32(k)
	}
	if same {
		slices.SortFunc(byName, func(a, b int32) int { return strings.Compare(next.Users[a].Name, next.Users[b].Name) })
	}
	j, k := 0, 0 // next.Users[byName[j]], its k-th key
	if err := each(db, `SELECT user_name, key FROM ssh_keys ORDER BY user_name, seq`, func(r *sql.Rows) error {
		meta.SSHKeys++
		if !same {
			return nil
		}
		if err := r.Scan(&raw[0], &raw[1]); err != nil {
			return err
		}
		for j < len(byName) && next.Users[byName[j]].Name < string(raw[0]) {
			if k != len(next.Users[byName[j]].SSHKeys) {
				same = false
				return nil
			}
			j, k = j+1, 0
		}
		if j == len(byName) || next.Users[byName[j]].Name != string(raw[0]) {
			return nil
		}
		keys := next.Users[byName[j]].SSHKeys
		if k >= len(keys) || keys[k] != string(raw[1]) {
			same = false
			return nil
		}
		k++
		return nil
	}); err != nil {
		return false, meta, err
	}
	for ; same && j < len(byName); j, k = j+1, 0 {
		same = k == len(next.Users[byName[j]].SSHKeys)
	}

	// Groups in gid order, then their members (memberships in gid and
	// name order, as Load lists them); a row of a gid no group has is
	// counted and not compared (Load's too).
	i = 0
	if err := each(db, `SELECT gid, name, scim_id FROM groups ORDER BY gid`, func(r *sql.Rows) error {
		meta.Groups++
		if !same {
			return nil
		}
		if err := r.Scan(&gid, &raw[0], &raw[1]); err != nil {
			return err
		}
		if i >= len(next.Groups) {
			same = false
			return nil
		}
		g := &next.Groups[i]
		i++
		same = g.GID == gid && string(raw[0]) == g.Name && string(raw[1]) == g.SCIMID
		return nil
	}); err != nil {
		return false, meta, err
	}
	same = same && i == len(next.Groups)
	j, k = 0, 0 // next.Groups[j], its k-th member
	if err := each(db, `SELECT gid, user_name FROM memberships ORDER BY gid, user_name`, func(r *sql.Rows) error {
		meta.Memberships++
		if !same {
			return nil
		}
		if err := r.Scan(&gid, &raw[0]); err != nil {
			return err
		}
		for j < len(next.Groups) && next.Groups[j].GID < gid {
			if k != len(next.Groups[j].Members) {
				same = false
				return nil
			}
			j, k = j+1, 0
		}
		if j == len(next.Groups) || next.Groups[j].GID != gid {
			return nil
		}
		m := next.Groups[j].Members
		if k >= len(m) || m[k] != string(raw[0]) {
			same = false
			return nil
		}
		k++
		return nil
	}); err != nil {
		return false, meta, err
	}
	for ; same && j < len(next.Groups); j, k = j+1, 0 {
		same = k == len(next.Groups[j].Members)
	}

	// Associations: not compared, but read as Load reads them (a row it
	// could not read is an error here too) and counted.
	var def, blocked int
	if err := each(db, `SELECT user_name, account, qos, default_qos, is_default, blocked FROM slurm_associations`, func(r *sql.Rows) error {
		meta.Associations++
		return r.Scan(&raw[0], &raw[1], &raw[2], &raw[3], &def, &blocked)
	}); err != nil {
		return false, meta, err
	}
	if same {
		ok, err := quotasMatch(db, next, byName)
		if err != nil {
			return false, meta, err
		}
		same = ok
	}
	return same, meta, nil
}

// quotasMatch: the quota rows are next's Quota fields (Load's
// loadQuotas: a user or group without a row has none). byName is
// next.Users in name order.
func quotasMatch(db *sql.DB, next *Contents, byName []int32) (bool, error) {
	has, err := hasQuotaTable(db)
	if err != nil {
		return false, err
	}
	if !has {
		for i := range next.Users {
			if next.Users[i].Quota != 0 {
				return false, nil
			}
		}
		for i := range next.Groups {
			if next.Groups[i].Quota != 0 {
				return false, nil
			}
		}
		return true, nil
	}
	groups := make([]int32, len(next.Groups))
	for k := range groups {
		groups[k] = int32(k)
	}
	slices.SortFunc(groups, func(a, b int32) int { return strings.Compare(next.Groups[a].Name, next.Groups[b].Name) })
	for _, kind := range []string{"user", "group"} {
		order, n := byName, len(byName)
		quota := func(k int32) uint64 { return next.Users[k].Quota }
		name := func(k int32) string { return next.Users[k].Name }
		if kind == "group" {
			order, n = groups, len(groups)
			quota = func(k int32) uint64 { return next.Groups[k].Quota }
			name = func(k int32) string { return next.Groups[k].Name }
		}
		same, j := true, 0
		var raw sql.RawBytes
		var hard int64
		if err := each(db, `SELECT name, hard FROM quotas WHERE kind = '`+kind+`' ORDER BY name`, func(r *sql.Rows) error {
			if !same {
				return nil
			}
			if err := r.Scan(&raw, &hard); err != nil {
				return err
			}
			if hard <= 0 { // not Load's (the table's CHECK forbids it)
				return nil
			}
			for ; j < n && name(order[j]) < string(raw); j++ {
				if quota(order[j]) != 0 {
					same = false
					return nil
				}
			}
			if j == n || name(order[j]) != string(raw) {
				return nil // a row of no such user or group
			}
			same = quota(order[j]) == uint64(hard)
			j++
			return nil
		}); err != nil {
			return false, err
		}
		for ; same && j < n; j++ {
			same = quota(order[j]) == 0
		}
		if !same {
			return false, nil
		}
	}
	return true, nil
}

func cmpU32(a, b uint32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
