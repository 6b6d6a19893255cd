package snapshot

// The NSS index: passwd, group and initgroups by name and by id, answered
// by the C reader straight from the file's memory map, without SQL.
//
// Why: through SQLite, a process's first lookup parsed the schema (most
// of its 0.6 ms) and every warm lookup descended two or three B-tree
// levels (2-2.4 us for random keys, behind SSSD's memory cache). The index
// is one blob, the only row of the table nss_index, created first so that
// its root is page 2 (schema.sql). The reader finds it from the SQLite
// file format alone: page 2's cell holds the blob's first bytes and its
// first overflow page; the writer inserts the blob last into a file with
// no free pages, so its overflow pages follow one another and byte k of
// the blob is at a computed offset. Verify checks every link and every
// answer through the C reader; a reader that finds anything else (no
// such table, another layout, a broken link) reads the file through SQL.
//
// Page deltas (syncd/publish) stay small: the blob is cut into chunks of
// one overflow page each (its length is chosen so that SQLite keeps the
// same number of bytes in page 2 whatever it is, so chunk k is always
// overflow page k), and each key's record lives in the chunk of its hash
// bucket (power-of-two buckets, filled to 45-90%). A changed user or
// group rewrites its own buckets' chunks, not the records after it:
// measured at 20,000 users (index_test.go), adding one membership changed
// 7 pages without an index, 888 with a flat one (hash slots and sorted
// records), 15 with this one; the file grew from 2,553 to 4,600 pages.
//
// A new blob ends with a few empty spare chunks (spareChunks), and an
// in-place update (update.go) lays the index out again under the live
// blob's seed, bucket counts and length, so that the blob is overwritten
// chunk for chunk and only the chunks of the changed keys' buckets (and
// of the packed or large records that moved) differ. A layout that no
// longer fits (a bucket that cannot list its keys, records past the
// spare chunks) makes the update write a whole new file.
//
// Room to grow (issue 18, receiver load): buckets are sized for the
// entries (filled 45-90%), so a directory that grows (an identity
// provider pushing 100,000 users, committed every max_delay) soon has
// buckets that cannot list their keys and more packed records than the
// spare chunks hold: every commit of the load wrote the whole file again.
// When an update finds the directory outgrew the live geometry
// (ErrIndexOutgrown), the whole write sizes the buckets for growthRoom
// times the entries (filled 22-45%), so the commits after it fit in
// place until the directory has about doubled again: a rewrite per
// doubling, not per commit. A directory that grew faster than that
// between two commits gets room for half as much again (roomFor, at most 4
// times): the 100,000-user receiver bench went from 17,428 to 36,418
// users in one commit, and room for only twice that ran out at 100,000,
// the commit after the last POST. Only a directory that grew pays the room (a
// blob about twice as large, mostly zeros, which zstd and page deltas
// carry for almost nothing); the first write and any other whole write
// size the buckets as before.
//
// Outgrown, told early (2026-12-02, tail12): the update that finds the
// directory outgrew the geometry used to learn it at the end of its
// diff and its layout in memory (outgrownBySize): at 100,000 users
// after 49,000 (the receiver's load in two bursts) 1.2 s of CPU before
// the whole write, diffContents 0.59 s of it. Now each key is hashed
// into the live buckets first and the bytes its record needs counted
// (gids, pieces' headers and padding left out: a lower bound of any
// layout in that geometry); more chunks than the live blob has go
// straight to the whole write with room, the same write and file as
// before (TestOutgrownDecidedBySizes compares the blob;
// TestOutgrownBySizeIsALowerBound checks the bound never says outgrown
// where the layout fits). Scratch test (TestBenchGrownBurst,
// GROW_BENCH=100000,49000): the bound said 5,580 chunks where the
// layout needs 5,911 and the blob has 4,683, in a few milliseconds; the
// grown commit (whole write with room 3 included) took 5.38, 5.55 and
// 5.51 s of CPU before, 4.15, 4.02 and 4.10 s with it (old and new test
// binaries alternately, load 1.7-2.7); in
// the receiver bench, 3,684-3,771 against 3,102 (the layout's 3,853-
// 4,298 in the old runs). A bucket crowded by its keys alone is left
// to the layout, as before.
//
// The index is derived data, like user_groups: the tables stay the truth,
// older readers ignore the table, and this reader falls back to SQL for
// files without it. No schema version change (the header records it).
//
// Layout, integers little-endian:
//
//	header at 0 (72 bytes; 80 from schema version 3)
//	  0  "SCIMNSS2"
//	  8  u32 blob length
//	 12  u32 flags: 1 usable (0: the reader uses SQL)
//	 16  u64 hash seed
//	 24  u32 chunk size C, u32 offset of chunk 0 (H)
//	 32  u32 first chunk, bucket mask: passwd by name; 40 by uid;
//	     48 group by name; 56 by gid (buckets = mask + 1 chunks)
//	 64  u32 meta.schema_version of the file (the reader refuses a file
//	     whose index says a version it does not read)
//	 72  (version 3) u32 first chunk, bucket mask: member pieces
//	chunk k at H + k*C: the four partitions' buckets, then a packed area
//	  (records moved out of a full bucket), then records of more than 1 KiB,
//	  each starting a chunk. A bucket chunk: u16 n; u32 tag[n] (hash >> 32);
//	  u16 at[n], the entry's offset in the chunk, with flags: 0x8000 the
//	  entry is (u32 blob offset, u32 length) of a record kept after the
//	  buckets; 0x4000 (by gid only) it is (u32 gid, u32 bucket, u32 tag)
//	  of the group's by-name entry: groups of more than 1 KiB, whose member
//	  lists are kept once; smaller ones have their record in both buckets
//	user record: u32 uid, gid, ngids, flags (1: active); u16 lengths of
//	  name, gecos, home, shell; ngids u32 supplementary gids ascending (none
//	  in the by-uid copy); the four strings without terminators
//	group record: u32 gid, name length, members length; the name; the
//	  members comma-separated in name order (as groups.members)
//	pieced group record (version 3, a member list of more than
//	  piecedOver bytes): u32 gid, name length, members length | 1<<31
//	  (the length of the whole comma-separated list); the name; u32 number
//	  of pieces; u8 length and the bytes of the first piece's first
//	  member. The list is the pieces' texts joined by commas.
//	member piece (version 3, fifth partition, key u32 gid then the piece's
//	  first member): u32 gid, u32 text length, u8 length and the bytes of
//	  the next piece's first member (0: the last piece), the text: members
//	  comma-separated in name order, at most memberPieceMax bytes
//
// Member pieces (schema version 3, issue 18). A group's member list was
// one record: one new member of slurm-users (90% of the directory) moved
// every member after it, about 240 pages at 100,000 users. Now a list of
// more than piecedOver bytes is cut into pieces, each a record of its
// own keyed (gid, first member) in its own hash bucket, each naming the
// next (a chain: a list of them in the group record would itself grow
// with the group and shift on every split). Where a piece ends depends
// only on its members (a name whose hash is 0 mod pieceEvery ends one; a
// piece about to pass memberPieceMax bytes ends early), so one member
// added or removed changes one piece's text, or splits or merges two,
// plus the previous piece's link and the group record's counts: a few
// chunks, whatever the group's size. Same contents, same pieces: a whole
// write and an in-place update lay them out alike. The pieces' partition
// gets twice the buckets of the others (filled 22-45%): a full bucket
// moves its largest record to the packed area, where a change moves
// every packed record after it. Reading a 90,000-member group follows
// about 5,600 links, one bucket each.
//
// A key's bucket is hash & mask. Names come from the identity provider: a
// directory crafted so that more keys land in one bucket than its chunk
// can list under every seed tried gets an index marked unusable (SQL, as
// fast as before), never a longer scan.

import (
	"cmp"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strings"
)

const (
	indexMagic  = "SCIMNSS2"
	indexHeader = 72
	// indexHeader3: from schema version 3, a fifth partition follows.
	indexHeader3 = 80
	indexSeeds   = 16
	indexSeed0   = 0x5343494D4E535332 // "SCIMNSS2"
	// A record larger than this is kept in whole chunks after the buckets.
	indexInlineMax = 1024
	// memberPieceMax: a pieced list is kept in pieces
	// of at most this many bytes (schema version 3): a piece record
	// (8 bytes more) stays inline in its bucket.
	memberPieceMax = 500
	// pieceEvery: a piece ends after a name whose hash is 0 modulo this,
	// about every 16 names (about 180 bytes of generated names).
	pieceEvery = 16
	pieceSeed  = 0x5049454345530003 // "PIECES", fixed: cuts follow names only
	// piecedOver: a list of more bytes than this is pieced (about 90
	// names); shorter ones stay whole, one row and one record as before.
	piecedOver = 1000
	// piecedFlag marks a pieced group record's members length.
	piecedFlag = 1 << 31
)

// growthRoom: a whole write after the directory outgrew the live index
// sizes its buckets for this many times the entries ("Room to grow").
const growthRoom = 2

// roomFor is the room a whole write after growth from prev to next
// gives: growthRoom, or half as much again as the growth since the live
// file when that was faster (a load that doubled the directory between
// two commits is likely to do it again before the next, and a little
// more: commits come every max_delay while the POSTs speed up), at most
// maxGrowthRoom. Room for exactly the growth was not enough: push7's
// receiver bench (Dec 2) went from 20-23k to 39-45k users in one commit,
// got room for twice that (78-89k) and wrote the whole file again at
// 100,000, 22-29 s against 11-20 s in place.
func roomFor(prev, next *Contents) int {
	was := len(prev.Users) + len(prev.Groups)
	now := len(next.Users) + len(next.Groups)
	if was <= 0 {
		return growthRoom
	}
	return min(maxGrowthRoom, max(growthRoom, (3*now+2*was-1)/(2*was)))
}

// maxGrowthRoom bounds roomFor (a blob four times the size its entries
// need, at most).
const maxGrowthRoom = 4

// ErrIndexOutgrown: the directory no longer fits the live index's
// geometry (a bucket cannot list its keys, the records need more chunks
// than the blob has); Update writes the file whole, with room.
var ErrIndexOutgrown = errors.New("the NSS index no longer fits the live geometry")

// piecedFrom is the first schema version whose index and groups table
// keep long member lists in pieces.
const piecedFrom = 3

// Pieced reports whether a group's comma-separated member list of n
// bytes is kept in pieces (schema version 3): NULL in groups.members,
// pieces in the NSS index.
func Pieced(n int) bool { return n > piecedOver }

// memberPieces cuts a comma-separated member list (name order) into
// pieces (index.go's comment): each a comma-separated run of names of
// at most memberPieceMax bytes.
func memberPieces(list string) []string {
	var pieces []string
	start, i := 0, 0
	for i < len(list) {
		j := i
		for j < len(list) && list[j] != ',' {
			j++
		}
		// list[start:j] is the piece so far with the name list[i:j].
		if j-start > memberPieceMax && i > start {
			pieces = append(pieces, list[start:i-1])
			start = i
		}
		if ixHash(pieceSeed, []byte(list[i:j]))%pieceEvery == 0 {
			pieces = append(pieces, list[start:j])
			start = j + 1
		}
		i = j + 1
	}
	if start < len(list) {
		pieces = append(pieces, list[start:])
	}
	return pieces
}

// pieceKey is a member piece's key: the gid, then its first name.
func pieceKey(gid uint32, piece string) []byte {
	first, _, _ := strings.Cut(piece, ",")
	return append(idKey(gid), first...)
}

// pieceRecord is a member piece's record; next is the next piece ("":
// none).
func pieceRecord(gid uint32, piece, next string) []byte {
	first, _, _ := strings.Cut(next, ",")
	r := binary.LittleEndian.AppendUint32(nil, gid)
	r = binary.LittleEndian.AppendUint32(r, uint32(len(piece)))
	r = append(r, byte(len(first)))
	r = append(r, first...)
	return append(r, piece...)
}

// piecedGroupRecord is a pieced group's record: the number of pieces and
// the first one's first name.
func piecedGroupRecord(g IndexGroup, pieces []string) []byte {
	le := binary.LittleEndian
	r := le.AppendUint32(nil, g.GID)
	r = le.AppendUint32(r, uint32(len(g.Name)))
	r = le.AppendUint32(r, uint32(len(g.Members))|piecedFlag)
	r = append(r, g.Name...)
	r = le.AppendUint32(r, uint32(len(pieces)))
	first, _, _ := strings.Cut(pieces[0], ",")
	r = append(r, byte(len(first)))
	return append(r, first...)
}

// IndexUser is what the index holds of a user.
type IndexUser struct {
	Name               string
	UID, GID           uint32
	GECOS, Home, Shell string
	GIDs               []uint32 // supplementary, ascending, no repeats
	Active             bool
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

func idKey(id uint32) []byte { return binary.LittleEndian.AppendUint32(nil, id) }

func userRecord(u IndexUser, withGIDs bool) []byte {
	return appendUserRecord(nil, &u, withGIDs)
}

// userRecordLen is len(userRecord(u, withGIDs)).
func userRecordLen(u *IndexUser, withGIDs bool) int {
	n := 24 + len(u.Name) + len(u.GECOS) + len(u.Home) + len(u.Shell)
	if withGIDs {
		n += 4 * len(u.GIDs)
	}
	return n
}

// appendUserRecord appends userRecord(*u, withGIDs) to r.
func appendUserRecord(r []byte, u *IndexUser, withGIDs bool) []byte {
	le := binary.LittleEndian
	gids := u.GIDs
	if !withGIDs {
		gids = nil
	}
	r = le.AppendUint32(r, u.UID)
	r = le.AppendUint32(r, u.GID)
	r = le.AppendUint32(r, uint32(len(gids)))
	var flags uint32
	if u.Active {
		flags |= 1
	}
	r = le.AppendUint32(r, flags)
	for _, s := range []string{u.Name, u.GECOS, u.Home, u.Shell} {
		r = le.AppendUint16(r, uint16(len(s)))
	}
	for _, g := range gids {
		r = le.AppendUint32(r, g)
	}
	for _, s := range []string{u.Name, u.GECOS, u.Home, u.Shell} {
		r = append(r, s...)
	}
	return r
}

func groupRecord(g IndexGroup) []byte {
	le := binary.LittleEndian
	r := le.AppendUint32(nil, g.GID)
	r = le.AppendUint32(r, uint32(len(g.Name)))
	r = le.AppendUint32(r, uint32(len(g.Members)))
	return append(append(r, g.Name...), g.Members...)
}

// entry is one key of a partition: its hash key bytes and its record,
// or for the by-gid partition a redirect to the group's by-name entry.
type entry struct {
	key   []byte
	rec   []byte
	redir uint32 // by-gid: the group's index in groups + 1
	// user, when not 0, stands for rec: the record of users[user-1]
	// with its gids (by name), of users[-user-1] without (by uid), made
	// when its bytes are written (userRef).
	user int32
}

// userRef is how a whole write's index holds its user records (issue 18,
// the full sync's peak): as a position in the users it lays out, made
// into bytes only as they are written (indexPlan.emit), not as 200,000
// records held from the layout to the file (29 MB at 100,000 users,
// SYNCD_PPROF stage "index-planned"). The bytes are userRecord's.
type userRef int32

// recordLen is the length of the record e stands for.
func (e *entry) recordLen(users []IndexUser) int {
	if e.user == 0 {
		return len(e.rec)
	}
	u, gids := userRef(e.user).at(users)
	return userRecordLen(u, gids)
}

// at is the user r names and whether its record holds the gids.
func (r userRef) at(users []IndexUser) (*IndexUser, bool) {
	if r > 0 {
		return &users[r-1], true
	}
	return &users[-r-1], false
}

type partition struct {
	entries []entry
	first   uint32 // first chunk
	mask    uint32
	// users are the users entries name (entry.user), nil when none do.
	users []IndexUser
}

// Entry offsets in a chunk keep two flag bits, so a chunk is at most
// 16 KiB (pages up to 16 KiB; the writer's are 4 KiB).
const (
	offElsewhere = 0x8000 // u32 blob offset, u32 length of the record
	offRedirect  = 0x4000 // u32 gid, u32 by-name bucket, u32 by-name tag
	offMask      = 0x3FFF
)

// BuildIndex lays out the index of users and groups for a file of the
// given page size (the writer's: SQLite's default 4096). It always
// returns a blob; one whose records do not fit the layout (a string of
// 64 KiB or more, a name longer than 255 bytes, a blob of 2 GiB, pages
// over 16 KiB) or whose keys crowd one bucket under every seed is marked
// unusable.
func BuildIndex(pageSize int, users []IndexUser, groups []IndexGroup) []byte {
	return buildIndex(SchemaVersion, pageSize, users, groups)
}

func buildIndex(version uint32, pageSize int, users []IndexUser, groups []IndexGroup) []byte {
	return buildIndexRoom(version, pageSize, users, groups, 1)
}

// buildIndexRoom is buildIndex with buckets sized for room times the
// entries (1: as many as they need; growthRoom after the directory grew
// past the live geometry, see indexRoom).
func buildIndexRoom(version uint32, pageSize int, users []IndexUser, groups []IndexGroup, room int) []byte {
	if x := planIndexRoom(version, pageSize, users, groups, room); x != nil {
		return x.bytes()
	}
	return unusableIndex()
}

// planIndexRoom is buildIndexRoom's layout before its bytes (indexPlan);
// nil: the index is unusable (unusableIndex).
func planIndexRoom(version uint32, pageSize int, users []IndexUser, groups []IndexGroup, room int) *indexPlan {
	if pageSize < 512 || pageSize > 16384 || pageSize&(pageSize-1) != 0 {
		return nil
	}
	parts, ok := indexParts(version, users, groups)
	if !ok {
		return nil
	}
	// SQLite keeps M bytes of a payload in page 2 when (payload - M) is a
	// multiple of the overflow chunk (file format, "B-tree Pages"): the
	// blob is sized so, and chunk k is then overflow page k whatever the
	// blob's length.
	C := pageSize - 4
	M := (pageSize-12)*32/255 - 23
	seed := uint64(indexSeed0)
	for try := 0; try < indexSeeds; try++ {
		if try > 0 {
			seed += 0x9E3779B97F4A7C15
		}
		if x, _ := plan(version, seed, C, M, parts, groups, nil, room); x != nil {
			// Making the bytes reads the buckets' lists only: the
			// entries (their keys, a second header of each record)
			// can go before the bytes are made.
			for p := range x.parts {
				x.parts[p].entries = nil
			}
			return x
		}
	}
	return nil
}

// indexParts is the partitions' entries of users and groups (four, and
// from schema version 3 the member pieces); false when a record does not
// fit the layout at all.
func indexParts(version uint32, users []IndexUser, groups []IndexGroup) ([]partition, bool) {
	parts := make([]partition, 4, 5)
	if version >= piecedFrom {
		parts = parts[:5]
	}
	// Sized first: grown by append from nothing, the two user
	// partitions (4.8 MB each at 100,000 users, their entries holding
	// pointers) were copied about twice over, 0.3 s of a whole write's
	// CPU (BenchmarkWrite100k, Dec 2), most of it faulting in fresh pages.
	parts[0].entries = make([]entry, 0, len(users))
	parts[1].entries = make([]entry, 0, len(users))
	parts[2].entries = make([]entry, 0, len(groups))
	parts[3].entries = make([]entry, 0, len(groups))
	if len(users) >= 1<<31-1 {
		return nil, false
	}
	parts[0].users, parts[1].users = users, users
	for i, u := range users {
		for _, s := range []string{u.Name, u.GECOS, u.Home, u.Shell} {
			if len(s) > 0xFFFF {
				return nil, false
			}
		}
		if len(u.Name) > 255 || len(u.GIDs) > 1<<20 {
			return nil, false
		}
		// The records themselves are made as they are written (userRef).
		parts[0].entries = append(parts[0].entries, entry{key: []byte(u.Name), user: int32(i + 1)})
		parts[1].entries = append(parts[1].entries, entry{key: idKey(u.UID), user: -int32(i + 1)})
	}
	for i, g := range groups {
		if len(g.Name) > 255 {
			return nil, false
		}
		rec := groupRecord(g)
		if len(parts) > 4 && Pieced(len(g.Members)) {
			pieces := memberPieces(g.Members)
			for k, p := range pieces {
				first, _, _ := strings.Cut(p, ",")
				if len(p) > memberPieceMax || len(first) > 255 || first == "" {
					return nil, false
				}
				next := ""
				if k+1 < len(pieces) {
					next = pieces[k+1]
				}
				parts[4].entries = append(parts[4].entries, entry{key: pieceKey(g.GID, p), rec: pieceRecord(g.GID, p, next)})
			}
			rec = piecedGroupRecord(g, pieces)
		}
		parts[2].entries = append(parts[2].entries, entry{key: []byte(g.Name), rec: rec})
		// By gid: a copy of the record when it fits a bucket, so that a
		// lookup reads one chunk (a redirect made it two, issue 22); a
		// larger group's record is kept once, behind a redirect.
		if len(rec) <= indexInlineMax {
			parts[3].entries = append(parts[3].entries, entry{key: idKey(g.GID), rec: rec})
		} else {
			parts[3].entries = append(parts[3].entries, entry{key: idKey(g.GID), redir: uint32(i + 1)})
		}
	}
	return parts, true
}

// indexGeometry is what an in-place update of an index keeps from the
// live blob (update.go): the seed, every partition's bucket count, where
// chunk 0 starts and the blob's length. Keeping them keeps every key in
// its bucket's chunk and every chunk in its overflow page.
type indexGeometry struct {
	seed  uint64
	masks []uint32
	h     int // offset of chunk 0
	size  int // blob length
}

// geometryOf reads the geometry of a usable blob made for pageSize.
func geometryOf(blob []byte, pageSize int) (indexGeometry, error) {
	le := binary.LittleEndian
	var g indexGeometry
	if !IndexUsable(blob) {
		return g, fmt.Errorf("the live NSS index is not usable (read through SQL)")
	}
	if v := le.Uint32(blob[64:]); v != SchemaVersion {
		return g, fmt.Errorf("the live NSS index is for schema version %d, this writer makes %d", v, SchemaVersion)
	}
	if int(le.Uint32(blob[8:])) != len(blob) || int(le.Uint32(blob[24:])) != pageSize-4 || len(blob) < indexHeader3 {
		return g, fmt.Errorf("the live NSS index's length or chunk size is not this writer's")
	}
	g.seed, g.h, g.size = le.Uint64(blob[16:]), int(le.Uint32(blob[28:])), len(blob)
	g.masks = make([]uint32, partitions(SchemaVersion))
	first := uint32(0)
	for p := range g.masks {
		if le.Uint32(blob[partitionAt(p):]) != first {
			return g, fmt.Errorf("the live NSS index's partitions are not where this writer puts them")
		}
		g.masks[p] = le.Uint32(blob[partitionAt(p)+4:])
		first += g.masks[p] + 1
	}
	return g, nil
}

// buildIndexIn lays out users and groups in the geometry of a live blob:
// the same seed, buckets, chunk 0 and length, so that the new blob can
// overwrite the old one in place (update.go). The error says why it does
// not fit (a bucket that cannot list its keys, records past the blob's
// length): the caller then writes a whole new file.
func buildIndexIn(g indexGeometry, pageSize int, users []IndexUser, groups []IndexGroup) ([]byte, error) {
	parts, ok := indexParts(SchemaVersion, users, groups)
	if !ok || len(parts) != len(g.masks) {
		return nil, fmt.Errorf("a record no longer fits the NSS index layout")
	}
	C := pageSize - 4
	M := (pageSize-12)*32/255 - 23
	blob, why := layout(SchemaVersion, g.seed, C, M, parts, groups, &g, 1)
	if blob == nil {
		return nil, fmt.Errorf("%w: %s", ErrIndexOutgrown, why)
	}
	return blob, nil
}

// outgrownBySize is why the index of c cannot fit the live geometry g,
// told from record sizes and key hashes alone, before an in-place update
// diffs the directories or lays anything out ("" when they allow it, or
// when a record does not fit the layout at all: the layout decides then,
// as before). It is a lower bound of any layout's chunks in g, patched
// or whole: each bucket's chunk holds its 2-byte count, a 6-byte slot
// per key and the key's record or an 8-byte pointer to it, so the bytes
// by which a bucket's keys with their records exceed a chunk are at
// least what the layout must keep after the buckets; those chunks past
// the live blob's end mean the layout can only fail with
// ErrIndexOutgrown, and the whole write with room follows as it did
// (issue 18, tail12: the receiver's last burst of a 100,000-user load
// spent 1.2 s of CPU diffing and laying out before learning that). Left
// out, to stay a lower bound cheaply: the users' gids, the member
// pieces' headers and their buckets (counted by partition), whole-chunk
// padding.
func outgrownBySize(g indexGeometry, pageSize int, c *Contents) string {
	if len(g.masks) != partitions(SchemaVersion) || len(c.Groups) > 1<<20 {
		return ""
	}
	C := pageSize - 4
	// Bytes each bucket's keys need inline, partition by partition.
	load := make([][]int, 4)
	nb := 0
	for p, m := range g.masks {
		nb += int(m) + 1
		if p < 4 {
			load[p] = make([]int, int(m)+1)
		}
	}
	add := func(p int, key []byte, n int) {
		b := uint32(ixHash(g.seed, key)) & g.masks[p]
		load[p][b] += 6 + n
	}
	var id [4]byte
	for i := range c.Users {
		u := &c.Users[i]
		if len(u.Name) > 255 || max(len(u.GECOS), len(u.Home), len(u.Shell)) > 0xFFFF {
			return ""
		}
		n := userRecordLen(&IndexUser{Name: u.Name, GECOS: u.GECOS, Home: u.Home, Shell: u.Shell}, false) // its gids left out
		add(0, []byte(u.Name), n)
		binary.LittleEndian.PutUint32(id[:], u.UID)
		add(1, id[:], n)
	}
	pieces := 0 // the member pieces' texts, at least
	for i := range c.Groups {
		gr := &c.Groups[i]
		if len(gr.Name) > 255 {
			return ""
		}
		list := 0
		for _, m := range gr.Members {
			if m == "" || len(m) > 255 { // the pieces' rules: the layout says
				return ""
			}
			list += len(m) + 1
		}
		list = max(0, list-1)
		rec := 12 + len(gr.Name) + list
		if Pieced(list) {
			// A count and the first name after the name; the pieces'
			// texts are the list less a comma between two pieces, which
			// each piece's header outweighs.
			rec = 17 + len(gr.Name)
			pieces += list
		}
		add(2, []byte(gr.Name), rec)
		binary.LittleEndian.PutUint32(id[:], gr.GID)
		if rec > indexInlineMax {
			add(3, id[:], 12) // a redirect
		} else {
			add(3, id[:], rec)
		}
	}
	out := 0 // bytes kept after the buckets, at least
	for p := range load {
		for _, n := range load[p] {
			out += max(0, 2+n-C)
		}
	}
	out += max(0, 2*(int(g.masks[4])+1)+pieces-(int(g.masks[4])+1)*C)
	need, have := nb+(out+C-1)/C, (g.size-g.h)/C
	if need > have {
		return fmt.Sprintf("the records need at least %d chunks by their sizes, the live blob has %d", need, have)
	}
	return ""
}

// recordHeader is the size of the SQLite record header in front of a
// blob of n bytes in a row (NULL, blob): header size, type 0, type.
func recordHeader(n int) int {
	t := uint64(n)*2 + 12
	l := 1
	for t >= 0x80 {
		t >>= 7
		l++
	}
	return 2 + l
}

// buckets returns how many buckets a partition of total bytes gets: a
// power of two, so that it changes (and moves every key) only when the
// directory doubles or halves, filled to between 45% and 90%.
func buckets(total, C int) int {
	return max(1, 1<<bits.Len(uint((10*total+9*C-1)/(9*C)-1)))
}

// layout places every partition's entries in its buckets under seed; nil
// and why when a bucket cannot list all of its keys. With fix, the bucket
// counts, chunk 0 and the length are fix's (an in-place update); without,
// the buckets are sized for room times the entries and a few spare
// chunks follow the records, room for records that later move out of a
// full bucket or grow past a chunk without changing the blob's length.
func layout(version uint32, seed uint64, C, M int, parts []partition, groups []IndexGroup, fix *indexGeometry, room int) ([]byte, string) {
	x, why := plan(version, seed, C, M, parts, groups, fix, room)
	if x == nil {
		return nil, why
	}
	return x.bytes(), ""
}

// placed is one entry where the layout put it.
type placed struct {
	tag uint32
	// user, when not 0, stands for rec (entry.user): the record is made
	// when written, n is its length.
	user  int32
	rec   []byte // inline or kept elsewhere
	where int32  // 0 inline, 1 packed area, 2 chunk-aligned area
	n     int32
	off   int // blob offset when elsewhere
}

// len is the length of pl's record.
func (pl *placed) len() int {
	if pl.user == 0 {
		return len(pl.rec)
	}
	return int(pl.n)
}

// record is pl's record: rec, or the user record it stands for made in
// scratch (users: the plan's).
func (pl *placed) record(scratch []byte, users []IndexUser) []byte {
	if pl.user == 0 {
		return pl.rec
	}
	u, gids := userRef(pl.user).at(users)
	return appendUserRecord(scratch[:0], u, gids)
}

// indexPlan is a laid-out index before any of its bytes are made: every
// entry's bucket and every moved record's offset. Its bytes are made in
// blob order (emit), into memory (bytes) or straight into the file's
// pages (fillIndex), so that the whole write never holds the blob (issue
// 18: 31 MB at 100,000 users, beside the records it is made from, was
// the whole write's peak). Both ways run the same code: the same bytes.
type indexPlan struct {
	version         uint32
	seed            uint64
	C, H, size      int
	parts           []partition
	lists           [][][]placed
	packed, aligned []*placed
	// users are the users whose records the plan makes as it writes
	// them (userRef).
	users []IndexUser
}

// plan is layout without the bytes; nil and why when a bucket cannot
// list all of its keys or the records do not fit.
func plan(version uint32, seed uint64, C, M int, parts []partition, groups []IndexGroup, fix *indexGeometry, room int) (*indexPlan, string) {
	lists := make([][][]placed, len(parts))
	nchunks := 0
	var packed, aligned []*placed
	for p := range parts {
		total := 2
		for _, e := range parts[p].entries {
			if e.redir != 0 {
				total += 6 + 12
			} else {
				total += 6 + min(e.recordLen(parts[p].users), indexInlineMax+8)
			}
		}
		nb := buckets(room*total, C)
		if p == 4 {
			nb = buckets(2*room*total, C) // member pieces: filled 22-45%
		}
		if fix != nil {
			nb = int(fix.masks[p]) + 1
		}
		if nb > 1<<24 {
			return nil, "too many buckets"
		}
		parts[p].mask = uint32(nb - 1)
		parts[p].first = uint32(nchunks)
		nchunks += nb
		type keyed struct {
			key []byte
			pl  placed
		}
		// Each bucket's entries, in the entries' order, as slices of one
		// array sized by a count per bucket first (appending to each
		// bucket's own list made 48 MB of garbage at 100,000 users).
		ents := parts[p].entries
		hs := make([]uint64, len(ents))
		count := make([]int32, nb+1)
		for i, e := range ents {
			hs[i] = ixHash(seed, e.key)
			count[uint32(hs[i])&parts[p].mask+1]++
		}
		for b := 1; b <= nb; b++ {
			count[b] += count[b-1]
		}
		flat := make([]keyed, 0, len(ents))
		bs := make([][]keyed, nb)
		for b := range bs {
			bs[b] = flat[count[b]:count[b]:count[b+1]]
		}
		for i, e := range ents {
			h := hs[i]
			pl := placed{tag: uint32(h >> 32), rec: e.rec}
			if e.user != 0 {
				n := e.recordLen(parts[p].users)
				if n > 1<<31-1 {
					return nil, "a record of 2 GiB"
				}
				pl.user, pl.n = e.user, int32(n)
			}
			if e.redir != 0 { // by gid: where the by-name entry is
				g := groups[e.redir-1]
				hn := ixHash(seed, []byte(g.Name))
				pl.rec = binary.LittleEndian.AppendUint32(nil, g.GID)
				pl.rec = binary.LittleEndian.AppendUint32(pl.rec, uint32(hn)&parts[2].mask)
				pl.rec = binary.LittleEndian.AppendUint32(pl.rec, uint32(hn>>32))
				pl.where = -1
			} else if pl.len() > indexInlineMax {
				pl.where = 2
			}
			b := uint32(h) & parts[p].mask
			bs[b] = append(bs[b], keyed{e.key, pl})
		}
		lists[p] = make([][]placed, nb)
		for b, ks := range bs {
			// Ordered by key (not hash): the same contents give the same
			// chunk, and a new key moves only the entries after it here.
			slices.SortFunc(ks, func(x, y keyed) int {
				if c := cmp.Compare(len(x.key), len(y.key)); c != 0 {
					return c
				}
				return slices.Compare(x.key, y.key)
			})
			used := 2
			pls := make([]placed, len(ks))
			for i, k := range ks {
				pls[i] = k.pl
				used += 6 + entrySize(int(k.pl.where), k.pl.len())
			}
			// Too full: the largest inline records go to the packed area.
			for used > C {
				big := -1
				for i, pl := range pls {
					if pl.where == 0 && (big < 0 || pl.len() > pls[big].len()) {
						big = i
					}
				}
				if big < 0 || pls[big].len() <= 8 {
					return nil, fmt.Sprintf("bucket %d of partition %d cannot list its %d keys", b, p, len(pls))
				}
				used -= pls[big].len() - 8
				pls[big].where = 1
			}
			lists[p][b] = pls
		}
	}
	for p := range lists {
		for b := range lists[p] {
			for i := range lists[p][b] {
				switch pl := &lists[p][b][i]; pl.where {
				case 1:
					packed = append(packed, pl)
				case 2:
					aligned = append(aligned, pl)
				}
			}
		}
	}
	// After the buckets: the packed area (whole chunks), then records of
	// whole chunks each, so that a change to one moves no other.
	pbytes := 0
	for _, pl := range packed {
		pbytes += pl.len()
	}
	pchunks := (pbytes + C - 1) / C
	achunks := 0
	for _, pl := range aligned {
		achunks += (pl.len() + C - 1) / C
	}
	total := nchunks + pchunks + achunks
	var H, size int
	if fix != nil {
		H, size = fix.h, fix.size
		if H+total*C > size {
			return nil, fmt.Sprintf("the records need %d chunks, the live blob has %d", total, (size-H)/C)
		}
	} else {
		total += spareChunks(total)
		// Chunk 0 starts where SQLite's page-2 part ends, at or after the
		// header: H = M - record header (+ whole chunks for tiny pages).
		hdr := indexHeader
		if len(parts) > 4 {
			hdr = indexHeader3
		}
		for guess := 0; guess < 3; guess++ { // the record header depends on the length
			H = M - recordHeader(H+total*C)
			for H < hdr {
				H += C
			}
		}
		size = H + total*C
	}
	if size > 1<<31-1 {
		return nil, "the blob would pass 2 GiB"
	}
	at := H + nchunks*C
	for _, pl := range packed {
		pl.off = at
		at += pl.len()
	}
	at = H + (nchunks+pchunks)*C
	for _, pl := range aligned {
		pl.off = at
		at += (pl.len() + C - 1) / C * C
	}
	x := &indexPlan{version: version, seed: seed, C: C, H: H, size: size, parts: parts,
		lists: lists, packed: packed, aligned: aligned}
	for p := range parts {
		if parts[p].users != nil {
			x.users = parts[p].users
		}
	}
	return x, ""
}

// bytes makes the plan's blob in memory.
func (x *indexPlan) bytes() []byte {
	blob := make([]byte, x.size)
	x.emit(func(off int, b []byte) error {
		copy(blob[off:], b)
		return nil
	})
	return blob
}

// emit hands put the blob's bytes in blob order (offsets ascending, no
// range twice): the header, each bucket's chunk whole, then the packed
// and the chunk-aligned records. Bytes it never hands are zeros.
func (x *indexPlan) emit(put func(off int, b []byte) error) error {
	le := binary.LittleEndian
	hdr := make([]byte, indexHeader3)
	copy(hdr, indexMagic)
	le.PutUint32(hdr[8:], uint32(x.size))
	le.PutUint32(hdr[12:], 1)
	le.PutUint64(hdr[16:], x.seed)
	le.PutUint32(hdr[24:], uint32(x.C))
	le.PutUint32(hdr[28:], uint32(x.H))
	for p := range x.parts {
		le.PutUint32(hdr[partitionAt(p):], x.parts[p].first)
		le.PutUint32(hdr[partitionAt(p)+4:], x.parts[p].mask)
	}
	le.PutUint32(hdr[64:], x.version)
	if len(x.parts) <= 4 {
		hdr = hdr[:indexHeader]
	}
	if err := put(0, hdr); err != nil {
		return err
	}
	chunk := make([]byte, x.C)
	// record is pl's record, a user's made in one scratch buffer
	// (userRef).
	var scratch []byte
	record := func(pl *placed) []byte {
		r := pl.record(scratch, x.users)
		if pl.user != 0 {
			scratch = r
		}
		return r
	}
	for p := range x.lists {
		for b, pls := range x.lists[p] {
			clear(chunk)
			le.PutUint16(chunk, uint16(len(pls)))
			at := 2 + 6*len(pls)
			for i := range pls {
				pl := &pls[i]
				le.PutUint32(chunk[2+4*i:], pl.tag)
				off := uint16(at)
				switch pl.where {
				case -1:
					off |= offRedirect
					at += copy(chunk[at:], pl.rec)
				case 0:
					at += copy(chunk[at:], record(pl))
				default:
					off |= offElsewhere
					le.PutUint32(chunk[at:], uint32(pl.off))
					le.PutUint32(chunk[at+4:], uint32(pl.len()))
					at += 8
				}
				le.PutUint16(chunk[2+4*len(pls)+2*i:], off)
			}
			if err := put(x.H+(int(x.parts[p].first)+b)*x.C, chunk); err != nil {
				return err
			}
		}
	}
	for _, pl := range x.packed {
		if err := put(pl.off, record(pl)); err != nil {
			return err
		}
	}
	for _, pl := range x.aligned {
		if err := put(pl.off, record(pl)); err != nil {
			return err
		}
	}
	return nil
}

// partitions is how many partitions an index of a schema version has.
func partitions(version uint32) int {
	if version >= piecedFrom {
		return 5
	}
	return 4
}

// partitionAt is where partition p's first chunk and mask are in the
// header: the four of version 2 at 32, the member pieces at 72.
func partitionAt(p int) int {
	if p < 4 {
		return 32 + 8*p
	}
	return 72
}

// spareChunks is how many empty chunks a new blob ends with: about 1% of
// its chunks and at least 4, so that an in-place update (update.go) can
// take a few more packed or large records before the blob must grow (a
// whole new file). Readers never look past the records' offsets.
func spareChunks(total int) int { return 4 + total/128 }

// entrySize is what an entry takes in its chunk after the directory.
func entrySize(where, n int) int {
	if where > 0 {
		return 8
	}
	return n
}

// IndexUsable reports whether blob is an index the reader uses (flags).
func IndexUsable(blob []byte) bool {
	return len(blob) >= indexHeader && string(blob[:8]) == indexMagic &&
		binary.LittleEndian.Uint32(blob[12:])&1 == 1
}

func unusableIndex() []byte {
	blob := make([]byte, indexHeader)
	copy(blob, indexMagic)
	binary.LittleEndian.PutUint32(blob[8:], indexHeader)
	return blob
}

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
	rows, err = db.Query(`SELECT uid, name, gid, gecos, home, shell, active FROM users ORDER BY uid`)
	if err != nil {
		return fmt.Errorf("reindex %s: %w", path, err)
	}
	for rows.Next() {
		var u IndexUser
		var uid, gid sql.NullInt64
		var gecos, home, shell sql.NullString
		var active sql.NullInt64
		if err := rows.Scan(&uid, &u.Name, &gid, &gecos, &home, &shell, &active); err != nil {
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
		u.Active = active.Valid && active.Int64 != 0
		u.GIDs = slices.Compact(gids[u.Name])
		users = append(users, u)
	}
	rows.Close()
	var groups []IndexGroup
	var pieced []int
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
		if !members.Valid { // schema version 3: kept in pieces, read the rows
			pieced = append(pieced, len(groups)-1)
		}
	}
	rows.Close()
	for _, i := range pieced {
		var list sql.NullString
		if err := db.QueryRow(`SELECT group_concat(user_name, ',') FROM (SELECT user_name FROM memberships WHERE gid = ? ORDER BY user_name)`,
			groups[i].GID).Scan(&list); err != nil {
			return fmt.Errorf("reindex %s: members of %s: %w", path, groups[i].Name, err)
		}
		groups[i].Members = list.String
	}
	var version uint32
	pageSize := 4096
	if err := db.QueryRow(`PRAGMA page_size`).Scan(&pageSize); err != nil {
		return fmt.Errorf("reindex %s: %w", path, err)
	}
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
	if _, err := db.Exec(`INSERT INTO nss_index (id, data) VALUES (1, ?)`, buildIndex(version, pageSize, users, groups)); err != nil {
		return fmt.Errorf("reindex %s: %w", path, err)
	}
	return db.Close()
}
