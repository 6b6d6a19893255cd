// Package explain answers "why" for one user or group: from the record
// of the read behind the live snapshot (what the source sent, what
// validation decided and why), the snapshot itself read through the C
// reader (syncd/cache, the code every gate runs), and the gates'
// decisions on it.
//
// Decisions:
//   - The record is written beside the snapshot (<cache>.explain, gzip
//     JSON, mode 0600: it holds what the source sent, which the
//     world-readable snapshot does not) after every successful read whose
//     directory is the live snapshot's (committed, or unchanged), tagged
//     with that snapshot's serial. `explain` never fetches.
//   - A record that does not carry the live snapshot's serial is shown
//     with a warning (written by another serial: a rollback, a mirror).
//   - The previous record also tells which rejections are new or changed
//     since the last read, so each is logged once (issue 12: every full
//     read re-logged every rejection).
//   - Building the record after a one-change poll (issue 18, in the
//     background beside the next poll): the id order of 100,000 users
//     is found from the last record's (sortedByID: a walk and a merge of
//     the new ids, not a sort; 0.4 s of CPU per change), and a group's
//     dropped members are looked up among the few unpublished users, not
//     in two maps of every user.
//   - The daemon and the receiver patch the last record instead
//     (Builder, builder.go, issue 18's fifth session): only the records a
//     change names are made again, and only they are digested again
//     (encode.go). Build stays for `sync --once` and as the reference
//     the Builder is tested against.
package explain

import (
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/scimbridge/scimbridge/syncd/atomicfile"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/scimbridge/scimbridge/syncd/source"
	"github.com/scimbridge/scimbridge/syncd/validate"
)

// Verdicts of a source record.
const (
	Published = "published"
	Rejected  = "rejected"
	// Filtered: valid but in no posix_groups group (not a cluster user).
	Filtered = "not-in-posix-groups"
)

// Record is what one read decided, per source record.
type Record struct {
	Serial    int64     `json:"serial"`
	WrittenAt time.Time `json:"written_at"`
	Source    string    `json:"source"`
	// Rejections are every rejection of the read, first in the file so
	// that ReadRejections stops before the per-record part (100,000
	// users: the whole record takes seconds to decode).
	Rejections []validate.Rejection `json:"rejections"`
	Users      []UserRecord
	Groups     []GroupRecord
	// Other rejections (not tied to one user or group record).
	Other          []validate.Rejection `json:"other,omitempty"`
	DroppedMembers int                  `json:"dropped_members"`
	Filtered       int                  `json:"filtered"`
	// memo: each record's digest for Encode, kept by a Builder between
	// records (nil: Encode digests every record).
	memo *recordMemo
}

// nowSecond is a record's WrittenAt.
func nowSecond() time.Time { return time.Now().UTC().Truncate(time.Second) }

// UserRecord is one user as fetched and as decided.
type UserRecord struct {
	Source  source.User          `json:"source"`
	Verdict string               `json:"verdict"`
	Name    string               `json:"name,omitempty"` // published name
	Reasons []validate.Rejection `json:"reasons,omitempty"`
}

// GroupRecord is one group as fetched and as decided.
type GroupRecord struct {
	Source  source.Group         `json:"source"`
	Verdict string               `json:"verdict"`
	Name    string               `json:"name,omitempty"`
	Reasons []validate.Rejection `json:"reasons,omitempty"`
	// Dropped are member ids that are not published users.
	Dropped []string `json:"dropped,omitempty"`
}

// Path is the record's path for a snapshot path.
func Path(cachePath string) string { return cachePath + ".explain" }

// Build makes the record of one read.
func Build(serial int64, src string, dir *source.Directory, res *validate.Result) *Record {
	m, r := newMaker(serial, src, dir, res)
	// In id order, built so (an order of indexes sorted, not 100,000
	// records of ~300 bytes swapped).
	if len(m.userOrder) > 0 {
		r.Users = make([]UserRecord, len(m.userOrder))
		for k := range r.Users {
			m.user(&r.Users[k], k)
		}
	}
	if len(m.groupOrder) > 0 {
		r.Groups = make([]GroupRecord, len(m.groupOrder))
		for k := range r.Groups {
			m.group(&r.Groups[k], k)
		}
	}
	return r
}

// maker makes a read's user and group records one at a time, in id
// order: Build holds them all; EncodeRestOf (sync --once) encodes each as
// it is made and holds none (issue 18: at 100,000 users the record's
// users were 22 MB live beside the directory and the validated contents,
// the full sync's highest live heap before the write).
type maker struct {
	dir                   *source.Directory
	pubUser, pubGroup     map[string]string
	byUser, byGroup       map[string][]validate.Rejection
	unpublished           map[string]bool
	userOrder, groupOrder []int
}

// newMaker is the maker of dir's records and the record without its
// users and groups.
func newMaker(serial int64, src string, dir *source.Directory, res *validate.Result) (*maker, *Record) {
	r := &Record{Serial: serial, WrittenAt: nowSecond(), Source: src,
		DroppedMembers: res.DroppedMembers, Filtered: res.Filtered, Rejections: res.Rejections}
	m := &maker{dir: dir, pubUser: map[string]string{}, pubGroup: map[string]string{},
		byUser: map[string][]validate.Rejection{}, byGroup: map[string][]validate.Rejection{}}
	if res.Contents != nil {
		for _, u := range res.Contents.Users {
			m.pubUser[u.SCIMID] = u.Name
		}
		for _, g := range res.Contents.Groups {
			if g.SCIMID != "" {
				m.pubGroup[g.SCIMID] = g.Name
			}
		}
	}
	groupAt := idIndex(len(dir.Groups), func(i int) string { return dir.Groups[i].ID })
	userAt := idIndex(len(dir.Users), func(i int) string { return dir.Users[i].ID })
	isUser := func(id string) bool { _, ok := userAt[id]; return ok }
	for _, rj := range res.Rejections {
		_, isGroup := groupAt[rj.ID]
		switch {
		case isUser(rj.ID) && rj.Kind != validate.KindGroup:
			m.byUser[rj.ID] = append(m.byUser[rj.ID], rj)
		case isGroup:
			m.byGroup[rj.ID] = append(m.byGroup[rj.ID], rj)
		default:
			r.Other = append(r.Other, rj)
		}
	}
	// The users of the source that are not published (rejected or not
	// in posix_groups: a few of 100,000), for the groups' dropped
	// members: one lookup in a small map per member, not two in maps
	// of every user.
	m.unpublished = map[string]bool{}
	for i := range dir.Users {
		if _, ok := m.pubUser[dir.Users[i].ID]; !ok {
			m.unpublished[dir.Users[i].ID] = true
		}
	}
	m.userOrder = sortedByID('u', userAt, len(dir.Users), func(i int) string { return dir.Users[i].ID })
	m.groupOrder = sortedByID('g', groupAt, len(dir.Groups), func(i int) string { return dir.Groups[i].ID })
	return m, r
}

// user makes the k-th user record in id order into ur.
func (m *maker) user(ur *UserRecord, k int) {
	u := m.dir.Users[m.userOrder[k]]
	*ur = UserRecord{Source: u, Reasons: m.byUser[u.ID]}
	if n, ok := m.pubUser[u.ID]; ok {
		ur.Verdict, ur.Name = Published, n
	} else if rejectedRecord(ur.Reasons) {
		ur.Verdict = Rejected
	} else {
		ur.Verdict = Filtered
	}
}

// group makes the k-th group record in id order into gr.
func (m *maker) group(gr *GroupRecord, k int) {
	g := m.dir.Groups[m.groupOrder[k]]
	*gr = GroupRecord{Source: g, Reasons: m.byGroup[g.ID]}
	if n, ok := m.pubGroup[g.ID]; ok {
		gr.Verdict, gr.Name = Published, n
	} else {
		gr.Verdict = Rejected
	}
	for _, id := range g.MemberIDs {
		if m.unpublished[id] {
			gr.Dropped = append(gr.Dropped, id)
		}
	}
}

// idIndex maps each id to the position of its first record.
func idIndex(n int, id func(int) string) map[string]int {
	at := make(map[string]int, n)
	for i := n - 1; i >= 0; i-- {
		at[id(i)] = i
	}
	return at
}

// lastOrder is, per kind ('u', 'g'), the ids of the last record built in
// id order (issue 18): a poll that changed one user finds the order of
// 100,000 again by one walk of the last one, not by a sort (0.4 s of
// CPU per change at 100,000 users, in the background beside the next
// poll). Only ids that are unique are kept.
var lastOrder struct {
	sync.Mutex
	ids map[byte][]string
}

// sortedByID is byID(n, id), from the last order of kind when the ids
// are unique (at, from idIndex, holds n of them): the ids still there in
// the last order, then the new ones sorted and merged in.
func sortedByID(kind byte, at map[string]int, n int, id func(int) string) []int {
	lastOrder.Lock()
	defer lastOrder.Unlock()
	if lastOrder.ids == nil {
		lastOrder.ids = map[byte][]string{}
	}
	if len(at) != n { // a repeated id: the directory's order among them
		delete(lastOrder.ids, kind)
		return byID(n, id)
	}
	last := lastOrder.ids[kind]
	var order []int
	if last == nil {
		order = byID(n, id)
	} else {
		order = make([]int, 0, n)
		placed := make([]bool, n)
		for _, s := range last {
			if i, ok := at[s]; ok {
				order = append(order, i)
				placed[i] = true
			}
		}
		if len(order) < n {
			var fresh []int
			for i, p := range placed {
				if !p {
					fresh = append(fresh, i)
				}
			}
			slices.SortFunc(fresh, func(a, b int) int { return strings.Compare(id(a), id(b)) })
			merged := make([]int, 0, n)
			for len(order) > 0 || len(fresh) > 0 {
				if len(fresh) == 0 || len(order) > 0 && id(order[0]) < id(fresh[0]) {
					merged, order = append(merged, order[0]), order[1:]
				} else {
					merged, fresh = append(merged, fresh[0]), fresh[1:]
				}
			}
			order = merged
		}
	}
	ids := make([]string, n)
	for k, i := range order {
		ids[k] = id(i)
	}
	lastOrder.ids[kind] = ids
	return order
}

// byID is 0..n-1 in the order of id(i); records with the same id (only
// a hostile directory repeats one) stay in the directory's order.
func byID(n int, id func(int) string) []int {
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return strings.Compare(id(a), id(b)) })
	return order
}

// rejectedRecord: some rejection dropped the whole record (GECOS and
// key rejections only drop a value).
func rejectedRecord(rs []validate.Rejection) bool {
	for _, r := range rs {
		if r.Kind == validate.KindUser || r.Kind == validate.KindGroup {
			return true
		}
	}
	return false
}

// Write stores r at path atomically, mode 0600.
func Write(path string, r *Record) error {
	b, err := Encode(r)
	if err != nil {
		return err
	}
	return atomicfile.Write(path, b, 0o600)
}

// ErrNoRecord: no record beside the snapshot (none written yet, or
// written by a version without it).
var ErrNoRecord = errors.New("no explain record")

// Read loads the record at path.
func Read(path string) (*Record, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNoRecord
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(io.LimitReader(f, 1<<30))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var r Record
	if err := json.NewDecoder(zr).Decode(&r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// Key identifies one rejection across reads.
func Key(r validate.Rejection) string { return r.Kind + "\x00" + r.ID + "\x00" + r.Reason }

// ReadSerial reads only the serial of the record at path.
func ReadSerial(path string) (int64, error) {
	var n int64
	err := readField(path, "serial", &n)
	return n, err
}

// ReadRejections reads only the rejections of the record at path.
func ReadRejections(path string) ([]validate.Rejection, error) {
	var rs []validate.Rejection
	err := readField(path, "rejections", &rs)
	return rs, err
}

// readField decodes one top-level field of the record at path, reading
// no further than it (the fields come before the per-record part).
func readField(path, field string, v any) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return ErrNoRecord
	}
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	dec := json.NewDecoder(zr)
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return fmt.Errorf("%s: not a record", path)
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if t == field {
			if err := dec.Decode(v); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			return nil
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	return fmt.Errorf("%s: no %s in the record", path, field)
}

// NewRejections returns the rejections of res that prev (the previous
// read's) did not have with the same reason and detail, and how many of
// prev's are gone. Rejections are compared whole (kind, id, reason and
// detail) and counted: a user with 100 rejected keys has 100 distinct
// rejections, none of them logged again while it stays the same (issue
// 20: the key kept one detail, so 99 were re-logged at every full read).
func NewRejections(prev []validate.Rejection, res *validate.Result) (fresh []validate.Rejection, gone int) {
	old := map[string]int{}
	for _, r := range prev {
		old[wholeKey(r)]++
	}
	for _, r := range res.Rejections {
		k := wholeKey(r)
		if old[k] > 0 {
			old[k]--
			continue
		}
		fresh = append(fresh, r)
	}
	for _, n := range old {
		gone += n
	}
	return fresh, gone
}

func wholeKey(r validate.Rejection) string { return Key(r) + "\x00" + r.Detail }

// logged is, per explain record path, the rejections of the last read
// this process logged: while commits are refused the record on disk is
// not rewritten, and comparing with it alone re-logged every rejection
// at every poll (~2,000 lines a minute in issue 20).
var logged struct {
	sync.Mutex
	last map[string][]validate.Rejection
}

// Fresh is NewRejections against the last read this process logged for
// the record at path, or, after a start, the record on disk. first: there
// was neither (every rejection is new).
func Fresh(path string, res *validate.Result) (fresh []validate.Rejection, gone int, first bool) {
	logged.Lock()
	defer logged.Unlock()
	prev, ok := logged.last[path]
	if !ok {
		var err error
		prev, err = ReadRejections(path)
		first = err != nil
	}
	fresh, gone = NewRejections(prev, res)
	if logged.last == nil {
		logged.last = map[string][]validate.Rejection{}
	}
	logged.last[path] = slices.Clone(res.Rejections)
	return fresh, gone, first
}
