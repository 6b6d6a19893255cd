package snapshot

// Patching the NSS index in place (issue 18). Update laid the whole index
// out again under the live blob's geometry for every change: at 100,000
// users about 60% of an in-place update's CPU, for the few buckets one
// change touches. patchIndex copies the live blob and rewrites only the
// buckets of the keys the change adds, removes or alters: each such
// bucket is decoded (every entry's key read back from its record), the
// changed keys' entries dropped, their new ones added, and the bucket
// written again in key order, as layout writes it. Untouched buckets keep
// their bytes, so the same chunks differ as with a whole layout.
//
// It gives up (the caller then lays the whole index out, as before) when
// the change needs what only a whole layout does: a new record of more
// than indexInlineMax bytes (kept in whole chunks after the buckets; an
// existing one is rewritten in its own chunks when it still fits them,
// largeInPlace), or a
// bucket that no longer holds its entries (the whole layout moves the
// largest to the packed area). Entries already kept elsewhere whose key
// did not change keep their place. A changed key whose record is in the
// packed area keeps it there, rewritten over the old one, when the new
// record is no longer (packedInPlace: a disable or enable, which changes
// one flag): put back inline it no longer fit the full bucket the whole
// layout had moved it out of, and every disable of such a user laid the
// whole index out again (0.25 s more CPU at 100,000 users, one disable
// in four in the benchmark). A longer new record goes inline, its old
// one left unreferenced (readers only follow entries).

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
)

// slot is one entry of a bucket: its key, tag, and what the chunk keeps
// for it (the record inline, a pointer elsewhere, or a redirect).
type slot struct {
	key  []byte
	tag  uint32
	flag uint16 // 0, offElsewhere or offRedirect
	body []byte
}

// patchEdit is what a change does to one partition: the keys whose
// entries go, and the entries that come (their keys go first too).
type patchEdit struct {
	drop [][]byte
	add  []entry
}

// patchIndex is the live blob with the buckets of d's keys rewritten (as
// chunks laid over it, not a copy), or nil and why the whole layout is
// needed.
func patchIndex(geo indexGeometry, pageSize int, live []byte, d *rowDiff) (*newIndex, string) {
	if len(geo.masks) != 5 {
		return nil, "the live index has no member pieces' partition"
	}
	edits := make([]patchEdit, 5)
	indexUser := func(u *User) IndexUser {
		return IndexUser{Name: u.Name, UID: u.UID, GID: u.GID, GECOS: u.GECOS, Home: u.Home,
			Shell: u.Shell, GIDs: d.nextGIDs[u.Name], Active: u.Active}
	}
	// Users whose by-name record stays larger than a bucket holds (in
	// many groups): the record is rewritten where it is (largeInPlace).
	var large []entry
	for name := range d.userNames {
		o, n := d.prevUsers[name], d.nextUsers[name]
		if o != nil && n != nil {
			if u := indexUser(n); len(u.GIDs) <= 1<<20 && 24+4*len(u.GIDs)+len(u.Name)+len(u.GECOS)+len(u.Home)+len(u.Shell) > indexInlineMax &&
				len(u.Name) <= 255 && max(len(u.GECOS), len(u.Home), len(u.Shell)) <= 0xFFFF {
				large = append(large, entry{key: []byte(u.Name), rec: userRecord(u, true)})
				edits[1].drop = append(edits[1].drop, idKey(o.UID))
				edits[1].add = append(edits[1].add, entry{key: idKey(u.UID), rec: userRecord(u, false)})
				continue
			}
		}
		if o != nil {
			edits[0].drop = append(edits[0].drop, []byte(o.Name))
			edits[1].drop = append(edits[1].drop, idKey(o.UID))
		}
		if n != nil {
			u := indexUser(n)
			if len(u.Name) > 255 {
				return nil, "a name longer than 255 bytes"
			}
			for _, s := range []string{u.Name, u.GECOS, u.Home, u.Shell} {
				if len(s) > 0xFFFF {
					return nil, "a string of 64 KiB or more"
				}
			}
			if len(u.GIDs) > 1<<20 || 24+4*len(u.GIDs)+len(u.Name)+len(u.GECOS)+len(u.Home)+len(u.Shell) > indexInlineMax {
				return nil, fmt.Sprintf("user %s's record is kept outside its bucket", u.Name)
			}
			edits[0].add = append(edits[0].add, entry{key: []byte(u.Name), rec: userRecord(u, true)})
			edits[1].add = append(edits[1].add, entry{key: idKey(u.UID), rec: userRecord(u, false)})
		}
	}
	for name := range d.groupNames {
		// Old pieces by record: those the new list keeps byte for byte
		// stay where they are (a changed gid changes every record).
		oldPieces := map[string]string{}
		var oldGID uint32
		if o := d.prevGroups[name]; o != nil {
			oldGID = o.GID
			edits[2].drop = append(edits[2].drop, []byte(o.Name))
			edits[3].drop = append(edits[3].drop, idKey(o.GID))
			if list := strings.Join(sortedMembers(o.Members), ","); Pieced(len(list)) {
				was := memberPieces(list)
				for k, p := range was {
					oldPieces[string(pieceRecord(o.GID, p, nextOf(was, k)))] = p
				}
			}
		}
		if n := d.nextGroups[name]; n != nil {
			g := IndexGroup{Name: n.Name, GID: n.GID, Members: strings.Join(sortedMembers(n.Members), ",")}
			if len(g.Name) > 255 {
				return nil, "a group name longer than 255 bytes"
			}
			rec := groupRecord(g)
			var is []string
			if Pieced(len(g.Members)) {
				is = memberPieces(g.Members)
				rec = piecedGroupRecord(g, is)
			}
			if len(rec) > indexInlineMax {
				return nil, fmt.Sprintf("group %s's record is kept in whole chunks", g.Name)
			}
			edits[2].add = append(edits[2].add, entry{key: []byte(g.Name), rec: rec})
			edits[3].add = append(edits[3].add, entry{key: idKey(g.GID), rec: rec})
			for k, p := range is {
				if first, _, _ := strings.Cut(p, ","); len(p) > memberPieceMax || first == "" || len(first) > 255 {
					return nil, "a member piece that does not fit"
				}
				r := pieceRecord(n.GID, p, nextOf(is, k))
				if _, kept := oldPieces[string(r)]; kept {
					delete(oldPieces, string(r))
					continue
				}
				edits[4].add = append(edits[4].add, entry{key: pieceKey(n.GID, p), rec: r})
			}
		}
		for _, p := range oldPieces {
			edits[4].drop = append(edits[4].drop, pieceKey(oldGID, p))
		}
	}
	C := pageSize - 4
	blob := &newIndex{base: live, chunks: map[int][]byte{}, h: geo.h, c: C}
	nbuckets := 0 // the packed area starts after every bucket
	for _, m := range geo.masks {
		nbuckets += int(m) + 1
	}
	first := 0
	for p, e := range edits {
		nb := int(geo.masks[p]) + 1
		touched := map[uint32]*[]slot{}
		bucketOf := func(key []byte) (uint32, uint32) {
			h := ixHash(geo.seed, key)
			return uint32(h) & geo.masks[p], uint32(h >> 32)
		}
		load := func(b uint32) (*[]slot, error) {
			if s, ok := touched[b]; ok {
				return s, nil
			}
			s, err := decodeBucket(live, geo.h+(first+int(b))*C, C, p)
			if err != nil {
				return nil, err
			}
			touched[b] = &s
			return &s, nil
		}
		drop := func(key []byte) error {
			b, _ := bucketOf(key)
			s, err := load(b)
			if err != nil {
				return err
			}
			*s = slices.DeleteFunc(*s, func(x slot) bool { return string(x.key) == string(key) })
			return nil
		}
		// A changed key whose record was kept in the packed area (its
		// bucket was full at the whole layout) keeps it there, rewritten
		// where it is, when the new record is no longer (packedInPlace):
		// put back inline, it no longer fit its full bucket, and a
		// disable laid the whole index out again.
		moved := map[string][]byte{}
		for _, a := range e.add {
			b, _ := bucketOf(a.key)
			s, err := load(b)
			if err != nil {
				return nil, err.Error()
			}
			if i := slices.IndexFunc(*s, func(x slot) bool { return string(x.key) == string(a.key) }); i >= 0 && (*s)[i].flag == offElsewhere {
				if ptr := packedInPlace(blob, live, geo.h+nbuckets*C, (*s)[i].body, a.rec); ptr != nil {
					moved[string(a.key)] = ptr
				}
			}
		}
		for _, k := range e.drop {
			if err := drop(k); err != nil {
				return nil, err.Error()
			}
		}
		for _, a := range e.add {
			if err := drop(a.key); err != nil {
				return nil, err.Error()
			}
		}
		for _, a := range e.add {
			b, tag := bucketOf(a.key)
			s, _ := load(b)
			if ptr, ok := moved[string(a.key)]; ok {
				*s = append(*s, slot{key: a.key, tag: tag, flag: offElsewhere, body: ptr})
				continue
			}
			*s = append(*s, slot{key: a.key, tag: tag, body: a.rec})
		}
		if p == 0 {
			for _, e := range large {
				b, _ := bucketOf(e.key)
				s, err := load(b)
				if err != nil {
					return nil, err.Error()
				}
				if why := largeInPlace(blob, live, *s, e); why != "" {
					return nil, why
				}
			}
		}
		for b, s := range touched {
			slices.SortFunc(*s, func(x, y slot) int {
				if c := cmp.Compare(len(x.key), len(y.key)); c != 0 {
					return c
				}
				return slices.Compare(x.key, y.key)
			})
			at := geo.h + (first+int(b))*C
			ch, ok := blob.chunks[at]
			if !ok {
				ch = bytes.Clone(live[at : at+C])
				blob.chunks[at] = ch
			}
			if !writeBucket(ch, *s) {
				return nil, fmt.Sprintf("bucket %d of partition %d no longer holds its %d keys", b, p, len(*s))
			}
		}
		first += nb
	}
	return blob, ""
}

// packedInPlace writes rec over the packed record ptr points at (u32
// offset, u32 length), the rest of that record zeroed, and returns the
// new pointer; nil when it cannot: the record is not in the packed area
// (at or after packedAt, at most indexInlineMax bytes) or rec is longer.
// The layout gives every entry kept there its own copy, and a patch
// rewrites one only through its own entry, so no other entry reads
// those bytes.
func packedInPlace(x *newIndex, live []byte, packedAt int, ptr, rec []byte) []byte {
	le := binary.LittleEndian
	if len(ptr) != 8 {
		return nil
	}
	ro, rl := int(le.Uint32(ptr)), int(le.Uint32(ptr[4:]))
	if ro < packedAt || rl > indexInlineMax || len(rec) > rl || ro+rl > len(live) {
		return nil
	}
	C := x.c
	for at := x.h + (ro-x.h)/C*C; at < ro+rl; at += C {
		ch, ok := x.chunks[at]
		if !ok {
			ch = bytes.Clone(live[at : at+C])
			x.chunks[at] = ch
		}
		lo, hi := max(ro, at), min(ro+rl, at+C)
		for p := lo; p < hi; p++ {
			v := byte(0)
			if p-ro < len(rec) {
				v = rec[p-ro]
			}
			ch[p-at] = v
		}
	}
	out := make([]byte, 8)
	le.PutUint32(out, uint32(ro))
	le.PutUint32(out[4:], uint32(len(rec)))
	return out
}

// largeInPlace rewrites the by-name record of a user that stays larger
// than a bucket holds (indexInlineMax) where it is: such a record has
// whole chunks of its own after the buckets (layout's "aligned" records,
// one copy per entry), so the new one, when it needs no more chunks, is
// written over them (the rest zeroed) and the entry's pointer gets its
// new length; no other entry points there. Anything else (the entry not
// pointing at such chunks, a record that outgrew them) needs the whole
// layout. A disable of a user in a few hundred groups laid the whole
// index out again (0.46 s of CPU at 100,000 users).
func largeInPlace(x *newIndex, live []byte, slots []slot, e entry) string {
	le := binary.LittleEndian
	C := x.c
	for i := range slots {
		s := &slots[i]
		if string(s.key) != string(e.key) {
			continue
		}
		if s.flag != offElsewhere || len(s.body) != 8 {
			break
		}
		ro, rl := int(le.Uint32(s.body)), int(le.Uint32(s.body[4:]))
		span := (rl + C - 1) / C * C
		if rl <= indexInlineMax || ro < x.h || (ro-x.h)%C != 0 || ro+span > len(live) || len(e.rec) > span {
			break
		}
		for at := ro; at < ro+span; at += C {
			ch, ok := x.chunks[at]
			if !ok {
				ch = make([]byte, C)
				x.chunks[at] = ch
			}
			clear(ch)
			if k := at - ro; k < len(e.rec) {
				copy(ch, e.rec[k:])
			}
		}
		body := make([]byte, 8)
		le.PutUint32(body, uint32(ro))
		le.PutUint32(body[4:], uint32(len(e.rec)))
		s.body = body
		return ""
	}
	return fmt.Sprintf("user %s's record, kept outside its bucket, does not fit its chunks", e.key)
}

func nextOf(pieces []string, k int) string {
	if k+1 < len(pieces) {
		return pieces[k+1]
	}
	return ""
}

// decodeBucket reads the entries of the bucket chunk at off of partition
// p, each with its key read back from its record.
func decodeBucket(blob []byte, off, C, p int) ([]slot, error) {
	le := binary.LittleEndian
	if off+C > len(blob) {
		return nil, fmt.Errorf("bucket chunk at %d is past the blob", off)
	}
	ch := blob[off : off+C]
	n := int(le.Uint16(ch))
	if 2+6*n > C {
		return nil, fmt.Errorf("bucket chunk at %d lists %d entries", off, n)
	}
	out := make([]slot, 0, n+1)
	for i := 0; i < n; i++ {
		at := le.Uint16(ch[2+4*n+2*i:])
		o := int(at & offMask)
		s := slot{tag: le.Uint32(ch[2+4*i:]), flag: at &^ offMask}
		var rec []byte
		switch s.flag {
		case offRedirect:
			if o+12 > C {
				return nil, fmt.Errorf("bucket chunk at %d: a redirect past the chunk", off)
			}
			s.body = ch[o : o+12]
			s.key = idKey(le.Uint32(s.body))
			out = append(out, s)
			continue
		case offElsewhere:
			if o+8 > C {
				return nil, fmt.Errorf("bucket chunk at %d: a pointer past the chunk", off)
			}
			s.body = ch[o : o+8]
			ro, rl := int(le.Uint32(s.body)), int(le.Uint32(s.body[4:]))
			if ro+rl > len(blob) || ro < 0 {
				return nil, fmt.Errorf("bucket chunk at %d: a record past the blob", off)
			}
			rec = blob[ro : ro+rl]
		case 0:
			rec = ch[o:]
		default:
			return nil, fmt.Errorf("bucket chunk at %d: unknown entry flags", off)
		}
		key, size, ok := recordKey(p, rec)
		if !ok {
			return nil, fmt.Errorf("bucket chunk at %d: entry %d does not parse", off, i)
		}
		s.key = key
		if s.flag == 0 {
			s.body = rec[:size]
		}
		out = append(out, s)
	}
	return out, nil
}

// recordKey is the key of a record of partition p and the record's size.
func recordKey(p int, r []byte) ([]byte, int, bool) {
	le := binary.LittleEndian
	switch p {
	case 0, 1: // user
		if len(r) < 24 {
			return nil, 0, false
		}
		size := 24 + 4*int(le.Uint32(r[8:]))
		nameAt := size
		for i := 0; i < 4; i++ {
			size += int(le.Uint16(r[16+2*i:]))
		}
		if size > len(r) {
			return nil, 0, false
		}
		if p == 1 {
			return idKey(le.Uint32(r)), size, true
		}
		return r[nameAt : nameAt+int(le.Uint16(r[16:]))], size, true
	case 2, 3: // group
		if len(r) < 12 {
			return nil, 0, false
		}
		nl, ml := int(le.Uint32(r[4:])), le.Uint32(r[8:])
		size := 12 + nl
		if ml&piecedFlag != 0 {
			if size+5 > len(r) {
				return nil, 0, false
			}
			size += 5 + int(r[size+4])
		} else {
			size += int(ml)
		}
		if size > len(r) {
			return nil, 0, false
		}
		if p == 3 {
			return idKey(le.Uint32(r)), size, true
		}
		return r[12 : 12+nl], size, true
	case 4: // member piece
		if len(r) < 9 {
			return nil, 0, false
		}
		text := 9 + int(r[8])
		size := text + int(le.Uint32(r[4:]))
		if size > len(r) {
			return nil, 0, false
		}
		first, _, _ := strings.Cut(string(r[text:size]), ",")
		return append(slices.Clone(r[:4]), first...), size, true
	}
	return nil, 0, false
}

// writeBucket writes slots into chunk as layout does; false if they do
// not fit.
func writeBucket(chunk []byte, slots []slot) bool {
	le := binary.LittleEndian
	used := 2
	for _, s := range slots {
		used += 6 + len(s.body)
	}
	if used > len(chunk) || len(slots) > 0xFFFF {
		return false
	}
	clear(chunk)
	le.PutUint16(chunk, uint16(len(slots)))
	at := 2 + 6*len(slots)
	for i, s := range slots {
		le.PutUint32(chunk[2+4*i:], s.tag)
		le.PutUint16(chunk[2+4*len(slots)+2*i:], uint16(at)|s.flag)
		at += copy(chunk[at:], s.body)
	}
	return true
}
