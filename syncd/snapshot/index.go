package snapshot

// The NSS index: passwd, group and initgroups by name and by id, answered
// by the C reader straight from the file's memory map, without SQL.
//
// Why: through SQLite, a process's first lookup parsed the schema (most
// of its 0.6 ms) and every warm lookup descended two or three B-tree
// levels (2-2.4 us for random keys, behind SSSD's memory cache). The index
// is open-addressed hash tables and packed records in one blob, stored as
// the only row of the table nss_index, created first so that its root is
// page 2 (schema.sql). The reader finds it from the SQLite file format
// alone: page 2's cell gives the blob's first bytes and its first overflow
// page; the writer inserts the blob last into a file with no free pages,
// so its overflow pages follow one another and byte k of the blob is at a
// computed offset. Verify checks every link and every answer through the
// C reader; a reader that finds anything else (no such table, another
// layout, a broken link) reads the file through SQL as before.
//
// The index is derived data, like user_groups: the tables stay the truth,
// older readers ignore the table, and this reader falls back to SQL for
// files without it. No schema version change.
//
// Layout, all integers little-endian:
//
//	header (64 bytes)
//	  0  "SCIMNSS1"
//	  8  u32 blob length
//	 12  u32 flags: 1 usable (0: the reader uses SQL)
//	 16  u64 hash seed
//	 24  u32 users, u32 groups
//	 32  u32 offset of the passwd-by-name slots, of passwd-by-uid, mask
//	 44  u32 offset of the group-by-name slots, of group-by-gid, mask
//	 56  u32 meta.schema_version of the file (the reader refuses a file
//	     whose index says another: its tables are not what it knows)
//	slots: mask+1 entries of (u32 hash>>32, u32 record offset; 0 empty),
//	  home slot hash & mask, linear probing; every key sits fewer than
//	  MaxProbe slots from its home (the writer re-seeds until it does)
//	user record (4-aligned): u32 uid, gid, ngids; u16 lengths of name,
//	  gecos, home, shell; ngids u32 supplementary gids ascending; the four
//	  strings without terminators
//	group record (4-aligned): u32 gid, name length, members length; the
//	  name; members comma-separated in name order (as groups.members)
//
// Names come from the identity provider: a directory crafted so that
// names collide under every seed tried gets an index marked unusable
// (flags 0) and lookups as fast as before, never slower ones.

import (
	"database/sql"
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"
)

const (
	indexMagic  = "SCIMNSS1"
	indexHeader = 64
	// MaxProbe must equal IX_MAX_PROBE in c/scimcache.c.
	indexMaxProbe = 64
	indexSeeds    = 16
	indexSeed0    = 0x5343494D4E535331 // "SCIMNSS1"
)

// IndexUser is what the index holds of a user.
type IndexUser struct {
	Name               string
	UID, GID           uint32
	GECOS, Home, Shell string
	GIDs               []uint32 // supplementary, ascending, no repeats
}

// IndexGroup is what the index holds of a group.
type IndexGroup struct {
	Name    string
	GID     uint32
	Members string // comma-separated, name order
}

func ixHash(seed uint64, b []byte) uint64 {
	h := seed ^ uint64(len(b))*0x9E3779B97F4A7C15
	for ; len(b) >= 8; b = b[8:] {
		h = (h ^ binary.LittleEndian.Uint64(b)) * 0xBF58476D1CE4E5B9
		h ^= h >> 31
	}
	var w uint64
	for i := len(b) - 1; i >= 0; i-- {
		w = w<<8 | uint64(b[i])
	}
	h = (h ^ w) * 0x94D049BB133111EB
	h ^= h >> 29
	h *= 0xBF58476D1CE4E5B9
	h ^= h >> 32
	return h
}

func ixHashID(seed uint64, id uint32) uint64 {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], id)
	return ixHash(seed, b[:])
}

// slotTable fills mask+1 slots with (hash, record) pairs; false when a
// key would sit MaxProbe or more slots from its home.
func slotTable(out []byte, mask uint32, hashes []uint64, recs []uint32) bool {
	for i, h := range hashes {
		s := uint32(h) & mask
		for d := 0; ; d++ {
			if d >= indexMaxProbe {
				return false
			}
			at := out[s*8:]
			if binary.LittleEndian.Uint32(at[4:]) == 0 {
				binary.LittleEndian.PutUint32(at, uint32(h>>32))
				binary.LittleEndian.PutUint32(at[4:], recs[i])
				break
			}
			s = (s + 1) & mask
		}
	}
	return true
}

func tableMask(n int) uint32 {
	slots := 16
	if n > 0 {
		slots = max(slots, 1<<bits.Len(uint(2*n-1)))
	}
	return uint32(slots - 1)
}

// BuildIndex lays out the index of users and groups. It always returns a
// blob; one whose records do not fit the layout (a string of 64 KiB or
// more, a name longer than 255 bytes, a blob of 4 GiB) or whose keys
// collide under every seed is marked unusable.
func BuildIndex(users []IndexUser, groups []IndexGroup) []byte {
	return buildIndex(SchemaVersion, users, groups)
}

func buildIndex(version uint32, users []IndexUser, groups []IndexGroup) []byte {
	pwMask, grMask := tableMask(len(users)), tableMask(len(groups))
	pwName := uint64(indexHeader)
	pwUID := pwName + 8*(uint64(pwMask)+1)
	grName := pwUID + 8*(uint64(pwMask)+1)
	grGID := grName + 8*(uint64(grMask)+1)
	size := grGID + 8*(uint64(grMask)+1)
	slotsEnd := size

	usable := true
	urec := make([]uint32, len(users))
	for i, u := range users {
		size = (size + 3) &^ 3
		if size > 1<<32-1 {
			usable = false
			break
		}
		urec[i] = uint32(size)
		for _, s := range []string{u.Name, u.GECOS, u.Home, u.Shell} {
			if len(s) > 0xFFFF {
				usable = false
			}
		}
		if len(u.Name) > 255 {
			usable = false
		}
		size += 20 + 4*uint64(len(u.GIDs)) + uint64(len(u.Name)+len(u.GECOS)+len(u.Home)+len(u.Shell))
	}
	grec := make([]uint32, len(groups))
	for i, g := range groups {
		size = (size + 3) &^ 3
		if size > 1<<32-1 {
			usable = false
			break
		}
		grec[i] = uint32(size)
		if len(g.Name) > 255 {
			usable = false
		}
		size += 12 + uint64(len(g.Name)+len(g.Members))
	}
	if size > 1<<32-1 {
		usable = false
	}
	if !usable {
		return unusableIndex()
	}

	blob := make([]byte, size)
	le := binary.LittleEndian
	for i, u := range users {
		r := blob[urec[i]:]
		le.PutUint32(r, u.UID)
		le.PutUint32(r[4:], u.GID)
		le.PutUint32(r[8:], uint32(len(u.GIDs)))
		for k, s := range []string{u.Name, u.GECOS, u.Home, u.Shell} {
			le.PutUint16(r[12+2*k:], uint16(len(s)))
		}
		p := 20
		for _, g := range u.GIDs {
			le.PutUint32(r[p:], g)
			p += 4
		}
		for _, s := range []string{u.Name, u.GECOS, u.Home, u.Shell} {
			p += copy(r[p:], s)
		}
	}
	for i, g := range groups {
		r := blob[grec[i]:]
		le.PutUint32(r, g.GID)
		le.PutUint32(r[4:], uint32(len(g.Name)))
		le.PutUint32(r[8:], uint32(len(g.Members)))
		copy(r[12+copy(r[12:], g.Name):], g.Members)
	}

	seed := uint64(indexSeed0)
	ok := false
	hashes := make([]uint64, max(len(users), len(groups)))
	for try := 0; try < indexSeeds && !ok; try++ {
		if try > 0 {
			seed += 0x9E3779B97F4A7C15
		}
		clear(blob[indexHeader:slotsEnd]) // the slot tables, not the records
		ok = fill(blob, pwName, pwMask, hashes, urec, func(i int) uint64 { return ixHash(seed, []byte(users[i].Name)) }) &&
			fill(blob, pwUID, pwMask, hashes, urec, func(i int) uint64 { return ixHashID(seed, users[i].UID) }) &&
			fill(blob, grName, grMask, hashes, grec, func(i int) uint64 { return ixHash(seed, []byte(groups[i].Name)) }) &&
			fill(blob, grGID, grMask, hashes, grec, func(i int) uint64 { return ixHashID(seed, groups[i].GID) })
	}
	if !ok {
		return unusableIndex()
	}
	copy(blob, indexMagic)
	le.PutUint32(blob[8:], uint32(size))
	le.PutUint32(blob[12:], 1)
	le.PutUint64(blob[16:], seed)
	le.PutUint32(blob[24:], uint32(len(users)))
	le.PutUint32(blob[28:], uint32(len(groups)))
	le.PutUint32(blob[32:], uint32(pwName))
	le.PutUint32(blob[36:], uint32(pwUID))
	le.PutUint32(blob[40:], pwMask)
	le.PutUint32(blob[44:], uint32(grName))
	le.PutUint32(blob[48:], uint32(grGID))
	le.PutUint32(blob[52:], grMask)
	le.PutUint32(blob[56:], version)
	return blob
}

func fill(blob []byte, at uint64, mask uint32, hashes []uint64, recs []uint32, hash func(int) uint64) bool {
	hs := hashes[:len(recs)]
	for i := range recs {
		hs[i] = hash(i)
	}
	return slotTable(blob[at:at+8*(uint64(mask)+1)], mask, hs, recs)
}

func unusableIndex() []byte {
	blob := make([]byte, indexHeader)
	copy(blob, indexMagic)
	binary.LittleEndian.PutUint32(blob[8:], indexHeader)
	return blob
}

// Reindex rebuilds the NSS index of the snapshot file at path from its
// tables (users; groups and their members column; memberships for each
// user's gids), for files made by hand: test fixtures that insert rows
// with SQL, as derive.sql refills user_groups. Rows whose ids are not
// 32-bit numbers are left out of the index (the reader refuses them
// through SQL too). syncd's writer never needs it.
func Reindex(path string) error {
	db, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=DELETE")
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	id := func(v sql.NullInt64) (uint32, bool) {
		return uint32(v.Int64), v.Valid && v.Int64 >= 0 && v.Int64 <= 1<<32-1
	}
	gids := map[string][]uint32{}
	rows, err := db.Query(`SELECT user_name, gid FROM memberships ORDER BY user_name, gid`)
	if err != nil {
		return fmt.Errorf("reindex %s: %w", path, err)
	}
	for rows.Next() {
		var name string
		var g sql.NullInt64
		if err := rows.Scan(&name, &g); err != nil {
			rows.Close()
			return fmt.Errorf("reindex %s: %w", path, err)
		}
		if v, ok := id(g); ok {
			gids[name] = append(gids[name], v)
		}
	}
	rows.Close()
	var users []IndexUser
	rows, err = db.Query(`SELECT uid, name, gid, gecos, home, shell FROM users ORDER BY uid`)
	if err != nil {
		return fmt.Errorf("reindex %s: %w", path, err)
	}
	for rows.Next() {
		var u IndexUser
		var uid, gid sql.NullInt64
		var gecos, home, shell sql.NullString
		if err := rows.Scan(&uid, &u.Name, &gid, &gecos, &home, &shell); err != nil {
			rows.Close()
			return fmt.Errorf("reindex %s: %w", path, err)
		}
		var ok1, ok2 bool
		u.UID, ok1 = id(uid)
		u.GID, ok2 = id(gid)
		if !ok1 || !ok2 {
			continue
		}
		u.GECOS, u.Home, u.Shell = gecos.String, home.String, shell.String
		u.GIDs = slices.Compact(gids[u.Name])
		users = append(users, u)
	}
	rows.Close()
	var groups []IndexGroup
	rows, err = db.Query(`SELECT gid, name, members FROM groups ORDER BY gid`)
	if err != nil {
		return fmt.Errorf("reindex %s: %w", path, err)
	}
	for rows.Next() {
		var g IndexGroup
		var gid sql.NullInt64
		var members sql.NullString
		if err := rows.Scan(&gid, &g.Name, &members); err != nil {
			rows.Close()
			return fmt.Errorf("reindex %s: %w", path, err)
		}
		var ok bool
		if g.GID, ok = id(gid); !ok {
			continue
		}
		g.Members = members.String
		groups = append(groups, g)
	}
	rows.Close()
	var version uint32
	var v sql.NullInt64
	if db.QueryRow(`SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'schema_version'`).Scan(&v) == nil && v.Valid {
		version = uint32(v.Int64)
	}
	if _, err := db.Exec(`DELETE FROM nss_index`); err != nil {
		return fmt.Errorf("reindex %s: %w", path, err)
	}
	// An empty free list, so the blob's overflow pages are new ones, one
	// after another, at the end of the file.
	if _, err := db.Exec(`VACUUM`); err != nil {
		return fmt.Errorf("reindex %s: vacuum: %w", path, err)
	}
	if _, err := db.Exec(`INSERT INTO nss_index (id, data) VALUES (1, ?)`, buildIndex(version, users, groups)); err != nil {
		return fmt.Errorf("reindex %s: %w", path, err)
	}
	return db.Close()
}
