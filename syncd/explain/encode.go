package explain

// The record's encoding, kept cheap for a one-change poll (issue 18).
//
// Decisions:
//   - The file stays what it was: gzip of the JSON encoding of Record,
//     byte for byte the text json.Encoder writes (TestEncodeIsEncoders),
//     so Read, readField and `zcat` read it unchanged. What changes is
//     how it is made: the JSON text is cut into pieces, each compressed
//     as its own gzip member (RFC 1952 section 2.2: a gzip file is a
//     series of members; Go's gzip.Reader and zcat read them as one
//     stream), and the compressed piece of a run of users or groups is
//     kept from one write to the next. A poll that changed one user
//     encodes and compresses the piece holding that user again and copies
//     the others: at 100,000 users the record cost about 3 s of CPU per
//     change (JSON 1 s, gzip 1.6 s), in the background but on the same
//     2 cores as the next change.
//   - Pieces are cut where a record's SCIM id hashes to 0 modulo
//     pieceEvery (content-defined, as rsync and restic cut files), so a
//     new or deleted user changes one piece, not every piece after it; a
//     piece is also cut after pieceMost records whatever the ids say, so
//     ids crafted never to cut cost what the whole record cost before,
//     not more.
//   - A piece is found again by a 64-bit digest (hash/maphash, seeded per
//     process, so a source cannot aim at a collision) of its records'
//     digests (each of every field that JSON encodes of the record), its
//     position (first or not: the comma) and its kind. A Builder's record
//     keeps each record's digest between writes (builder.go), so a
//     patched record digests only the records made again. recordFields in the test fails when source.User,
//     source.Group, UserRecord, GroupRecord or validate.Rejection gain a
//     field this digest does not cover.
//   - Only the last write's pieces are kept (about the compressed record's
//     size, 6-10 MB at 100,000 users): the record of the next poll differs
//     from the last one by its change.
//   - sync --once (issue 18, full path): EncodeRest encodes everything
//     but the first member (serial, written_at, source, rejections)
//     before the snapshot is written, and Rest.Finish adds it with the
//     serial after; Encode is the two together. It keeps no pieces (no
//     next record to reuse them) and holds its bytes in chunks of 1 MiB
//     (restChunk), not one buffer. Every piece's JSON is made in one buffer by one
//     json.Encoder (its newline cut), not by json.Marshal per record.
//   - sync --once digests no record (Dec 2): with no last pieces and none
//     kept, the pieces are cut by the ids alone (list's digest), the
//     same cuts and bytes (TestEncodeRestWithoutDigestsCutsTheSame).
//     BenchmarkEncodeRest, 100,000 random records, back to back at load
//     6-12: 0.38/0.28 -> 0.25/0.25 cpu-s. In the full sync's profile the
//     record's encoding was 1.5 s: the rest is json.Encoder and gzip at
//     BestSpeed, left as they are (a cheaper gzip level makes a larger
//     file).
//   - EncodeRest's chunks (Dec 2, issue 18): its one buffer was sized at
//     140 bytes a record; the test server's 100,000 users / 10,000
//     groups make 17.65 MB (160 a record), so the buffer doubled to 35
//     MB and was then copied to its size to be held through the write:
//     91 MB allocated for 17.65 kept. In chunks: 48.6 MB allocated
//     (allocs profile of `syncd sync --once` into an empty cache), the
//     whole run's 806 -> 760 MB, collections 22/22 -> 20/20, and
//     VmHWM when the record is encoded (SYNCD_PPROF stage "recorded")
//     234.6 -> 227.9 MB. The run's VmHWM did not move (237/236 -> 237/
//     237 MB, old and new back to back, load 3.7-4.1; 228/233 -> 227/
//     228 MB under GOMEMLIMIT=160MiB): the process is at syncd's 200 MB
//     soft limit from the record's build to the NSS index (the live heap
//     after a collection reaches 173 MB while the record is built beside
//     the directory), and its highest point is the write's rows stage,
//     the Go heap's pages at the limit beside SQLite's own memory.
//   - sync --once's record held nowhere (Dec 2, issue 18, peak10):
//     EncodeRestOf makes each user and group record as the encoder
//     reaches it (Build's maker: the same records, TestEncodeRestOfIsBuilds
//     compares the files) and writes each 1 MiB chunk to an unnamed
//     O_TMPFILE file beside the cache as it is made. At 100,000 users
//     the heap live after a collection when the record is done
//     ("recorded") went 81 -> 63 MB, and its highest while encoding 126
//     -> 112 MB; what let sync --once lower its memory limit
//     (pipeline/doc.go).
//   - The gzip members are klauspost/compress's gzip at BestSpeed (Dec 3,
//     issue 18, fullsync), not compress/gzip's: the same format (a file
//     of members; Read, readField and zcat read it unchanged), other
//     compressed bytes. BenchmarkEncodeRest (100,000 random records),
//     old and new back to back twice under the bench lock, load 3.1:
//     0.264/0.256 -> 0.207/0.153 cpu-s per op; the test server's
//     100,000 users / 10,000 groups record 18.54 -> 18.13 MB. In `syncd
//     sync --once` into an empty cache the record's encoding, beside
//     the rows, went from 1.5-1.7 to 0.84-1.15 s of wall time
//     (pipeline/doc.go). The daemon's pieces are this encoder's too; a
//     piece is only ever reused within one process.

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/klauspost/compress/gzip"
	"golang.org/x/sys/unix"

	"github.com/scimbridge/scimbridge/syncd/source"
	"github.com/scimbridge/scimbridge/syncd/validate"
)

const (
	pieceEvery = 256  // records per piece on average
	pieceMost  = 2048 // and at most
)

// pieces are the compressed pieces of the last record encoded.
var pieces struct {
	sync.Mutex
	seed maphash.Seed
	last map[uint64][]byte
	// size: of the last file, which the next one's buffer starts at
	// (growing it from nothing copied and allocated a few times the
	// file's size on every write: 0.1 s of CPU at 100,000 users).
	size int
}

func init() { pieces.seed = maphash.MakeSeed() }

// Encode is the gzip file Write stores for r.
func Encode(r *Record) ([]byte, error) {
	rest, err := encodeRest(r, true)
	if err != nil {
		return nil, err
	}
	return rest.Finish(r.Serial, r.WrittenAt)
}

// Rest is a record encoded but for its first gzip member, the fields
// before "Users" (serial, written_at, source, rejections): Encode's file
// is Finish's member followed by Rest's bytes. sync --once encodes the
// record while it writes the snapshot and finishes it with the serial the
// write assigned (pipeline, record.go): the directory as fetched (about
// 75 MB at 100,000 users) is freed once the record is encoded instead of
// held through the whole write for the record (issue 18).
type Rest struct {
	// z is the encoded bytes in order: one slice (Encode), or EncodeRest's
	// chunks of about restChunk bytes each.
	z          [][]byte
	source     string
	rejections []validate.Rejection
	// f, when set, holds the bytes (n of them) instead of z
	// (EncodeRestOf).
	f *os.File
	n int64
}

// spillFile is an unnamed file in dir (O_TMPFILE, mode 0600: never seen
// under any name, gone with the process) for EncodeRestOf's bytes.
func spillFile(dir string) (*os.File, error) {
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, &os.PathError{Op: "open O_TMPFILE", Path: dir, Err: err}
	}
	return os.NewFile(uintptr(fd), filepath.Join(dir, "(explain record)")), nil
}

// Spilled reports whether rest's bytes are in a file (EncodeRestOf).
func (rest *Rest) Spilled() bool { return rest.f != nil }

// Close lets go of a spilled rest's file (Finish does it too).
func (rest *Rest) Close() {
	if rest != nil && rest.f != nil {
		rest.f.Close()
		rest.f = nil
	}
}

// EncodeRest encodes r but for its serial and written_at (Rest), for a
// process that encodes no other record (sync --once): the pieces are not
// kept for the next encoding (a copy of the compressed record, 15 MB at
// 100,000 users).
func EncodeRest(r *Record) (*Rest, error) { return encodeRest(r, false) }

// EncodeRestOf is EncodeRest(Build(0, src, dir, res)) without the
// record's users and groups ever held: each is made as it is encoded
// (maker), the same bytes. With spillDir, the bytes go, chunk by chunk
// as they are made, to an unnamed file there (spillFile), from which
// Finish reads them back; where no such file can be made (a file system
// without O_TMPFILE) they stay in memory (Spilled). sync --once encodes
// its record so (issue 18: the record's users, 22 MB, and its
// compressed bytes, 18 MB at 100,000 users, were held beside the
// directory and the validated contents, then through the write).
func EncodeRestOf(src string, dir *source.Directory, res *validate.Result, spillDir string) (*Rest, error) {
	var f *os.File
	if spillDir != "" {
		f, _ = spillFile(spillDir)
	}
	m, r := newMaker(0, src, dir, res)
	var ur UserRecord
	var gr GroupRecord
	return encodeView(r, recordView{
		users: len(m.userOrder), groups: len(m.groupOrder),
		nullUsers: len(m.userOrder) == 0, nullGroups: len(m.groupOrder) == 0,
		user:    func(i int) *UserRecord { m.user(&ur, i); return &ur },
		group:   func(i int) *GroupRecord { m.group(&gr, i); return &gr },
		userID:  func(i int) string { return dir.Users[m.userOrder[i]].ID },
		groupID: func(i int) string { return dir.Groups[m.groupOrder[i]].ID },
	}, false, f)
}

// recordView is the users and groups of a record as the encoder reads
// them: the i-th of each in turn (a pointer valid until the next call);
// null: the list is null (a Record's nil list), not [].
type recordView struct {
	users, groups         int
	nullUsers, nullGroups bool
	user                  func(i int) *UserRecord
	group                 func(i int) *GroupRecord
	// userID and groupID, when set, are the i-th record's id without
	// the record made.
	userID, groupID func(i int) string
	memo            *recordMemo
}

func encodeRest(r *Record, keep bool) (*Rest, error) {
	return encodeView(r, recordView{users: len(r.Users), groups: len(r.Groups), memo: r.memo,
		nullUsers: r.Users == nil, nullGroups: r.Groups == nil,
		user:  func(i int) *UserRecord { return &r.Users[i] },
		group: func(i int) *GroupRecord { return &r.Groups[i] },
	}, keep, nil)
}

// encodeView encodes r's rest with v's users and groups; f, when set,
// takes the chunks (EncodeRestOf) and is closed on an error.
func encodeView(r *Record, v recordView, keep bool, f *os.File) (*Rest, error) {
	rest, err := encodeViewTo(r, v, keep, f)
	if err != nil && f != nil {
		f.Close()
	}
	return rest, err
}

func encodeViewTo(r *Record, v recordView, keep bool, f *os.File) (*Rest, error) {
	pieces.Lock()
	defer pieces.Unlock()
	e := &encoder{prev: pieces.last, next: make(map[uint64][]byte, len(pieces.last)), keep: keep, chunked: !keep || f != nil, file: f}
	size := pieces.size
	if size == 0 {
		// No last record: about 140 bytes compressed per record (the
		// test server's directory; a guess that only saves copies of
		// a buffer grown from nothing).
		size = 140 * (v.users + v.groups)
	}
	if e.chunked {
		size = restChunk
	}
	e.out.Grow(size + size/8)
	var um, gm []recMemo
	if v.memo != nil {
		um, gm = v.memo.users, v.memo.groups
	}
	if err := e.list('u', v.users, v.nullUsers, um, func(i int, h *fields) string {
		if h == nil && v.userID != nil {
			return v.userID(i)
		}
		u := v.user(i)
		if h != nil {
			hashUser(h, u)
		}
		return u.Source.ID
	}, func(i int) any { return v.user(i) }); err != nil {
		return nil, err
	}
	e.text([]byte(`,"Groups":`))
	if err := e.list('g', v.groups, v.nullGroups, gm, func(i int, h *fields) string {
		if h == nil && v.groupID != nil {
			return v.groupID(i)
		}
		g := v.group(i)
		if h != nil {
			hashGroup(h, g)
		}
		return g.Source.ID
	}, func(i int) any { return v.group(i) }); err != nil {
		return nil, err
	}
	post, err := json.Marshal(struct {
		Other          []validate.Rejection `json:"other,omitempty"`
		DroppedMembers int                  `json:"dropped_members"`
		Filtered       int                  `json:"filtered"`
	}{r.Other, r.DroppedMembers, r.Filtered})
	if err != nil {
		return nil, err
	}
	post[0] = ','
	e.text(append(post, '\n'))
	if e.err != nil {
		return nil, e.err
	}
	if keep {
		pieces.last = e.next
	} else {
		pieces.last = nil
	}
	if e.chunked {
		e.spill()
		if e.err != nil {
			return nil, e.err
		}
		pieces.size = e.spilled
		return &Rest{z: e.chunks, f: f, n: int64(e.spilled), source: r.Source, rejections: r.Rejections}, nil
	}
	pieces.size = e.out.Len()
	return &Rest{z: [][]byte{e.out.Bytes()}, source: r.Source, rejections: r.Rejections}, nil
}

// restChunk is the size of EncodeRest's chunks (a variable for the test).
var restChunk = 1 << 20

// spill moves what e.out holds to a chunk of its size (EncodeRest), or
// to e.file.
func (e *encoder) spill() {
	if e.out.Len() == 0 || e.err != nil {
		return
	}
	if e.file != nil {
		if _, err := e.file.Write(e.out.Bytes()); err != nil {
			e.err = err
			return
		}
	} else {
		e.chunks = append(e.chunks, bytes.Clone(e.out.Bytes()))
	}
	e.spilled += e.out.Len()
	e.out.Reset()
}

// Finish is the record's file with this serial and written_at.
func (rest *Rest) Finish(serial int64, writtenAt time.Time) ([]byte, error) {
	// The fields before "Users", as json.Encoder writes them.
	pre, err := json.Marshal(struct {
		Serial     int64                `json:"serial"`
		WrittenAt  time.Time            `json:"written_at"`
		Source     string               `json:"source"`
		Rejections []validate.Rejection `json:"rejections"`
	}{serial, writtenAt, rest.source, rest.rejections})
	if err != nil {
		return nil, err
	}
	n := int(rest.n)
	for _, z := range rest.z {
		n += len(z)
	}
	e := &encoder{}
	e.out.Grow(len(pre)/4 + 64 + n)
	e.text(append(pre[:len(pre)-1], `,"Users":`...))
	if e.err != nil {
		return nil, e.err
	}
	for _, z := range rest.z {
		e.out.Write(z)
	}
	if rest.f == nil {
		return e.out.Bytes(), nil
	}
	defer rest.Close()
	b := e.out.Bytes()
	at := len(b)
	b = slices.Grow(b, int(rest.n))[:at+int(rest.n)]
	if _, err := rest.f.ReadAt(b[at:], 0); err != nil {
		return nil, fmt.Errorf("read the spilled explain record back: %w", err)
	}
	return b, nil
}

type encoder struct {
	out bytes.Buffer
	// piece is the JSON text of the piece being made, and js writes
	// each record into it (one buffer for every piece, not a buffer and
	// a json.Marshal result per piece and record: 240 MB of garbage for
	// the first record of 100,000 users).
	piece      bytes.Buffer
	js         *json.Encoder
	prev, next map[uint64][]byte
	keep       bool // next gets a copy of each piece made
	zw         *gzip.Writer
	err        error
	// chunked (EncodeRest): out's bytes move to chunks once out holds
	// restChunk, between members; spilled counts them.
	chunked bool
	chunks  [][]byte
	spilled int
	file    *os.File // takes the chunks instead (EncodeRestOf)
}

// encodePiece appends records start..end of n (elem) as one gzip
// member, and returns it (text).
func (e *encoder) encodePiece(start, end, n int, elem func(int) any) ([]byte, error) {
	b := &e.piece
	b.Reset()
	if e.js == nil {
		e.js = json.NewEncoder(b) // escapes HTML as json.Marshal does
	}
	if start == 0 {
		b.WriteByte('[')
	}
	for i := start; i < end; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := e.js.Encode(elem(i)); err != nil {
			return nil, err
		}
		b.Truncate(b.Len() - 1) // Encode's newline
	}
	if end == n {
		b.WriteByte(']')
	}
	z := e.text(b.Bytes())
	return z, e.err
}

// text appends b as a gzip member of its own, and returns the member.
func (e *encoder) text(b []byte) []byte {
	if e.err != nil {
		return nil
	}
	if e.chunked && e.out.Len() >= restChunk {
		e.spill()
	}
	start := e.out.Len()
	if e.zw == nil {
		e.zw, _ = gzip.NewWriterLevel(&e.out, gzip.BestSpeed)
	} else {
		e.zw.Reset(&e.out)
	}
	if _, err := e.zw.Write(b); err != nil {
		e.err = err
		return nil
	}
	if err := e.zw.Close(); err != nil {
		e.err = err
		return nil
	}
	return e.out.Bytes()[start:]
}

// recMemo is one record's digest (of every field JSON encodes) and
// whether a piece ends after it; recordMemo holds them for a record's
// users and groups, in order.
type recMemo struct {
	sum     uint64
	cut, ok bool
}

type recordMemo struct{ users, groups []recMemo }

// list appends a JSON array of n records in pieces: hash digests record
// i (and returns its id; given nil, it returns the id alone), elem is
// what to encode; memo, when it holds n digests, keeps each record's (a
// Builder's record: only the records it made again are digested again).
func (e *encoder) list(kind byte, n int, null bool, memo []recMemo, hash func(int, *fields) string, elem func(int) any) error {
	if null {
		e.text([]byte("null"))
		return e.err
	}
	if len(memo) != n {
		memo = nil
	}
	// Digests find pieces again: in the last record's pieces, or in the
	// next encoding's (kept, or a memo kept). Without any of them (sync
	// --once: EncodeRest, no Builder) only the cuts are needed, which
	// follow from the ids (0.2-0.3 s of CPU at 100,000 users, Dec 2).
	digest := memo != nil || e.keep || len(e.prev) > 0
	var h, key fields
	start := 0
	flush := func(end int) error {
		if start == end && n > 0 {
			return nil
		}
		if !digest {
			if _, err := e.encodePiece(start, end, n, elem); err != nil {
				return err
			}
			start = end
			return nil
		}
		key.put(kind)
		key.put(byte(boolInt(start == 0)))
		key.put(byte(boolInt(end == n)))
		k := maphash.Bytes(pieces.seed, key)
		key = key[:0]
		z, ok := e.next[k]
		if !ok {
			z, ok = e.prev[k]
		}
		if ok {
			e.out.Write(z)
			e.next[k] = z
			start = end
			return nil
		}
		z, err := e.encodePiece(start, end, n, elem)
		if err != nil {
			return err
		}
		if e.keep {
			e.next[k] = slices.Clone(z)
		}
		start = end
		return nil
	}
	for i := 0; i < n; i++ {
		if !digest {
			if maphash.String(pieces.seed, hash(i, nil))%pieceEvery == 0 || i+1-start >= pieceMost {
				if err := flush(i + 1); err != nil {
					return err
				}
			}
			continue
		}
		var m recMemo
		if memo != nil && memo[i].ok {
			m = memo[i]
		} else {
			h = h[:0]
			id := hash(i, &h)
			m = recMemo{sum: maphash.Bytes(pieces.seed, h), cut: maphash.String(pieces.seed, id)%pieceEvery == 0, ok: true}
			if memo != nil {
				memo[i] = m
			}
		}
		key = binary.LittleEndian.AppendUint64(key, m.sum)
		if m.cut || i+1-start >= pieceMost {
			if err := flush(i + 1); err != nil {
				return err
			}
		}
	}
	return flush(n)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// A record's fields are appended to one buffer (hashed once per piece:
// maphash's per-call cost over a dozen small writes per user was most of
// the digest's), each with its length, so that field boundaries count.
type fields []byte

func (h *fields) put(b byte) { *h = append(*h, b) }

func str(h *fields, s string) {
	*h = binary.AppendUvarint(*h, uint64(len(s)))
	*h = append(*h, s...)
}

func num(h *fields, v *int64) {
	if v == nil {
		h.put(0)
		return
	}
	*h = append(*h, 1)
	*h = binary.LittleEndian.AppendUint64(*h, uint64(*v))
}

func strs(h *fields, l []string) {
	if l == nil {
		h.put(0) // null, not []
	}
	num(h, ptr(int64(len(l))))
	for _, s := range l {
		str(h, s)
	}
}

func ptr(v int64) *int64 { return &v }

func malformed(h *fields, m map[string]string) {
	if m == nil {
		h.put(0)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	num(h, ptr(int64(len(keys))))
	for _, k := range keys {
		str(h, k)
		str(h, m[k])
	}
}

func rejections(h *fields, rs []validate.Rejection) {
	num(h, ptr(int64(len(rs))))
	for _, r := range rs {
		str(h, r.Kind)
		str(h, r.ID)
		str(h, r.Name)
		str(h, r.Reason)
		str(h, r.Detail)
		str(h, r.Option)
	}
}

func hashUser(h *fields, u *UserRecord) {
	s := &u.Source
	h.put('U')
	str(h, s.ID)
	str(h, s.ExternalID)
	str(h, s.UserName)
	num(h, s.UID)
	num(h, s.GID)
	str(h, s.GECOS)
	str(h, s.Home)
	str(h, s.Shell)
	switch {
	case s.Active == nil:
		h.put(2)
	case *s.Active:
		h.put(1)
	default:
		h.put(0)
	}
	strs(h, s.SSHKeys)
	str(h, s.Quota)
	malformed(h, s.Malformed)
	str(h, u.Verdict)
	str(h, u.Name)
	rejections(h, u.Reasons)
}

func hashGroup(h *fields, g *GroupRecord) {
	s := &g.Source
	h.put('G')
	str(h, s.ID)
	str(h, s.DisplayName)
	num(h, s.GID)
	strs(h, s.MemberIDs)
	str(h, s.Quota)
	malformed(h, s.Malformed)
	str(h, g.Verdict)
	str(h, g.Name)
	rejections(h, g.Reasons)
	strs(h, g.Dropped)
}

// Sources of the digests above, for the test that counts fields.
var _ = []any{source.User{}, source.Group{}}
