package validate

import (
	"cmp"
	"fmt"
	"path"
	"reflect"
	"slices"
	"strings"

	"github.com/scimbridge/scimbridge/syncd/snapshot"
	"github.com/scimbridge/scimbridge/syncd/source"
)

// Incremental validates successive directories of one source (the
// daemon's polls, the receiver's bursts) with work proportional to what
// changed between them, and the result of Directory on each (issue 18
// item 2). See doc.go for what it keeps and why the result is the same.
//
// The zero value is ready; the first Validate is a whole validation. It
// is not safe for concurrent use (one pipeline drives it).
type Incremental struct {
	fp         string // the options it validated with (Live aside)
	activeSent bool
	run        int

	users  map[string]*ustate
	order  []*ustate // the last directory's users, in its order
	groups map[string]*gstate
	gorder []*gstate
	// gsig: gid -> what a user's primary gid check reads of it
	// (published name, the claiming group and its verdict).
	gsig  map[int64]string
	posix map[string]bool
	// gs is the last groups' verdicts, used again while no group
	// changed, arrived, left or moved and none shares a name or gid
	// (then the keeper could follow the live snapshot).
	gs         *groupSet
	gMoved     bool
	gContested bool

	// Pass 1 values of the users that are cluster users, for the records
	// that share one with a changed record (pass 2 reads nothing else).
	name, home index[string]
	uid, priv  index[int64]
	pgid       index[int64] // primary gid: pass 1 again when its group changes
	// desc counts, per directory, the indexed homes strictly under it
	// (the ancestors nestedHomes walks).
	desc map[string]int

	byID   map[string]string // published user: SCIM id -> name
	sorted []snapshot.User   // published users by uid (never written: results share it)
	gone   []*ustate         // users the last directory had and this one has not
	// selGone: a group posix_groups selected is gone.
	selGone bool
}

// ustate is one user as the last validation left it.
type ustate struct {
	src      source.User // as validated (a shallow copy)
	filtered bool        // not in posix_groups
	p1       userCand    // after pass 1
	deco     []Rejection // what pass 1 dropped of it (keys, GECOS, active)
	// fin is the verdict after pass 2: &p1 unless pass 2 changed it
	// (a contested value), so an uncontested record keeps one copy.
	fin     *userCand
	keys    ukeys      // what it is indexed under (pass 1 values)
	acc     bool       // published, as pub
	pubUID  uint32     // as published (acc)
	pubName string     // as published (acc)
	rej     *Rejection // its rejection, when neither filtered nor accepted
	pos     int        // position in the directory
	seen    int        // run that met it
	mark    int        // run that settles it again (pass 2)
	recheck int        // run whose pass 1 must run again
	pubRun  int        // run that published it again
	fresh   bool       // new in this directory
	gone    bool       // not in this directory
}

// ukeys are the values of one user that other records may share.
type ukeys struct {
	indexed                 bool
	name, home              string
	uid, gid                int64
	hasUID, hasGID, private bool
}

type gstate struct {
	src     source.Group
	p1      groupCand
	fin     groupCand
	changed bool // the source record differs from the last one
	fresh   bool // new in this directory
	sel     bool // selected by posix_groups
	seen    int
	// The group's entry and rejections as publishGroup made them.
	out     *snapshot.Group
	rej     []Rejection
	dropped int
	have    bool // out, rej and dropped are set
}

// index maps a value to the records holding it: one, or (contested)
// several.
type index[K comparable] struct {
	one  map[K]*ustate
	more map[K][]*ustate
}

func (x *index[K]) add(k K, s *ustate) {
	if x.one == nil {
		x.one, x.more = map[K]*ustate{}, map[K][]*ustate{}
	}
	if m, ok := x.more[k]; ok {
		x.more[k] = append(m, s)
		return
	}
	if o, ok := x.one[k]; ok {
		delete(x.one, k)
		x.more[k] = []*ustate{o, s}
		return
	}
	x.one[k] = s
}

// contested calls f with every record that shares its value with another.
func (x *index[K]) contested(f func(*ustate)) {
	for _, m := range x.more {
		for _, s := range m {
			f(s)
		}
	}
}

func (x *index[K]) remove(k K, s *ustate) {
	if m, ok := x.more[k]; ok {
		if i := slices.Index(m, s); i >= 0 {
			m = slices.Delete(m, i, i+1)
		}
		if len(m) == 1 {
			delete(x.more, k)
			x.one[k] = m[0]
		} else {
			x.more[k] = m
		}
		return
	}
	if x.one[k] == s {
		delete(x.one, k)
	}
}

func (x *index[K]) each(k K, f func(*ustate)) {
	if s, ok := x.one[k]; ok {
		f(s)
		return
	}
	for _, s := range x.more[k] {
		f(s)
	}
}

// Mode says how one Validate went.
type Mode struct {
	// Whole: every record was validated again; Why says why ("" on the
	// first validation).
	Whole bool
	Why   string
	// Checked is how many users ran pass 1 again, Settled how many
	// were settled again against the records sharing their values.
	Checked, Settled int
}

// Validate validates dir as Directory(dir, o) does, reusing what the last
// call found for the records that did not change.
func (v *Incremental) Validate(dir *source.Directory, opts Options) (*Result, Mode) {
	o := opts.withDefaults()
	o.activeSent = activeSent(dir)
	fp := fingerprint(o)
	mode := Mode{}
	switch {
	case v.users == nil:
		mode.Whole = true
	case fp != v.fp:
		mode.Whole, mode.Why = true, "the site's rules changed (configuration, or /etc/passwd or /etc/group)"
	case o.activeSent != v.activeSent:
		mode.Whole, mode.Why = true, "the source began or stopped sending active: every user's default changes"
	}
	if mode.Whole {
		*v = Incremental{}
		defer keyMemo.rotate()
	}
	v.fp, v.activeSent = fp, o.activeSent
	v.run++
	if why := v.place(dir); why != "" {
		// Records are kept by SCIM id: a directory that repeats one is
		// validated whole, and the next one too.
		*v = Incremental{}
		return Directory(dir, opts), Mode{Whole: true, Why: why}
	}
	res := &Result{Contents: &snapshot.Contents{Source: o.Source}}
	res.Rejections = posixHints(dir, o, res.Rejections)

	gs, changedGIDs := v.checkGroups(dir, o)
	posix := v.posixSet(dir, o)
	for gid := range changedGIDs {
		v.pgid.each(gid, func(s *ustate) { s.recheck = v.run })
	}

	// Pass 1 again for the users that changed, arrived, left, moved in
	// or out of posix_groups, or whose primary gid's group changed.
	allowed := make(map[string]bool, len(o.AllowedShells))
	for _, s := range o.AllowedShells {
		allowed[s] = true
	}
	var touched []*ustate
	var freed []ukeys // values the changed records held before
	for i, s := range v.order {
		su := &dir.Users[i]
		filtered := posix != nil && !posix[su.ID]
		if !s.fresh && s.recheck != v.run && s.filtered == filtered && source.SameUser(&s.src, su) {
			continue
		}
		s.fresh = false
		if s.keys.indexed {
			freed = append(freed, s.keys)
			v.unindex(s)
		}
		s.src, s.filtered = *su, filtered
		s.p1, s.deco = userCand{}, nil
		if !filtered {
			c := userCand{src: &s.src}
			scratch := &Result{}
			checkUser(&c, o, allowed, gs, scratch)
			s.p1, s.deco = c, scratch.Rejections
			v.index(s)
		}
		touched = append(touched, s)
	}
	mode.Checked = len(touched)
	for _, s := range v.gone {
		s.gone = true
		if s.keys.indexed {
			freed = append(freed, s.keys)
			v.unindex(s)
		}
		touched = append(touched, s)
	}

	// Pass 2 for the records sharing a value with a changed one, and
	// for every record that shares one at all (their keeper may change
	// with the live snapshot): closed under sharing, so settleUsers
	// decides each exactly as over the whole directory.
	set := v.closure(touched, freed, mode.Whole)
	mode.Settled = len(set)
	cands := make([]*userCand, len(set))
	for i, s := range set {
		c := s.p1
		c.detail = slices.Clone(s.p1.detail)
		cands[i] = &c
		s.fin = &c
	}
	settleUsers(cands, liveFor(o.Live, set, mode.Whole))
	for _, s := range set {
		if f := s.fin; f.reason == s.p1.reason && len(f.detail) == len(s.p1.detail) && f.home == s.p1.home && f.option == s.p1.option {
			s.fin = &s.p1 // pass 2 added nothing: one copy
		}
	}

	// What is published changes only for the records settled or
	// checked again.
	changedPub := v.publish(set, touched)

	wanted := 0
	for _, s := range v.order {
		if s.filtered {
			res.Filtered++
			continue
		}
		res.Rejections = append(res.Rejections, s.deco...)
		if s.acc && s.fin.private {
			wanted++
		}
	}
	private := make([]privateUser, 0, wanted)
	for _, s := range v.order {
		if s.filtered {
			continue
		}
		if !s.acc {
			res.Rejections = append(res.Rejections, *s.rej)
			continue
		}
		if s.fin.private {
			private = append(private, privateUser{id: s.fin.out.SCIMID, name: s.fin.out.Name, gid: s.fin.out.GID})
		}
	}
	if len(v.sorted) > 0 {
		// Shared with the last result (live now): publish never
		// writes into it, and the cap stops an append (the removal
		// guard's) from writing behind it.
		res.Contents.Users = slices.Clip(v.sorted)
	}

	for i, g := range v.gorder {
		c := gs.cands[i]
		if !g.have || g.changed || !sameGroupVerdict(&g.fin, c) {
			g.out, g.rej, g.dropped = publishGroup(c, v.byID)
			g.have = true
		} else if out, dropped, ok := patchMembers(g.out, g.dropped, g.src.MemberIDs, changedPub); ok {
			g.out, g.dropped = out, dropped
		}
		g.fin = *c
		g.fin.src = &g.src
		res.Rejections = append(res.Rejections, g.rej...)
		res.DroppedMembers += g.dropped
		if g.out != nil {
			res.Contents.Groups = append(res.Contents.Groups, *g.out)
		}
	}
	privateGroups(gs, o, private, res)
	for i := range res.Rejections {
		if res.Rejections[i].Option == "" {
			res.Rejections[i].Option = reasonOption[res.Rejections[i].Reason]
		}
	}
	slices.SortFunc(res.Contents.Groups, func(a, b snapshot.Group) int { return cmp.Compare(a.GID, b.GID) })
	v.gone = nil
	return res, mode
}

// place lines the states up with dir's records (new ones made, the
// users that left in v.gone); not "" when a SCIM id repeats.
func (v *Incremental) place(dir *source.Directory) string {
	if v.users == nil {
		v.users, v.groups = map[string]*ustate{}, map[string]*gstate{}
	}
	order := make([]*ustate, len(dir.Users))
	off := 0 // where the last directory had the record of this position
	for i := range dir.Users {
		id := dir.Users[i].ID
		var s *ustate
		if j := i + off; j >= 0 && j < len(v.order) && v.order[j].src.ID == id {
			s = v.order[j]
		} else if s = v.users[id]; s != nil && !s.fresh {
			off = s.pos - i
		}
		switch {
		case s == nil:
			s = &ustate{fresh: true}
			s.fin = &s.p1
			v.users[id] = s
		case s.seen == v.run:
			return fmt.Sprintf("two users share the SCIM id %q", id)
		}
		s.seen, s.pos = v.run, i
		order[i] = s
	}
	for _, s := range v.order {
		if s.seen != v.run {
			delete(v.users, s.src.ID)
			v.gone = append(v.gone, s)
		}
	}
	v.order = order

	gorder := make([]*gstate, len(dir.Groups))
	for i := range dir.Groups {
		id := dir.Groups[i].ID
		g := v.groups[id]
		switch {
		case g == nil:
			g = &gstate{fresh: true}
			v.groups[id] = g
		case g.seen == v.run:
			return fmt.Sprintf("two groups share the SCIM id %q", id)
		}
		g.seen = v.run
		gorder[i] = g
		v.gMoved = v.gMoved || i >= len(v.gorder) || v.gorder[i] != g
	}
	for _, g := range v.gorder {
		if g.seen != v.run {
			delete(v.groups, g.src.ID)
			v.selGone = v.selGone || g.sel
		}
	}
	v.gMoved = v.gMoved || len(gorder) != len(v.gorder)
	v.gorder = gorder
	return ""
}

// checkGroups runs one group's checks again for the groups that changed
// and settles all of them (thousands, not users' hundred thousands);
// changed are the gids whose verdict a user's primary gid check reads.
func (v *Incremental) checkGroups(dir *source.Directory, o Options) (*groupSet, map[int64]bool) {
	again := v.gs == nil || v.gMoved || v.gContested
	for i, g := range v.gorder {
		sg := &dir.Groups[i]
		g.changed = g.fresh || !source.SameGroup(&g.src, sg)
		g.fresh = false
		if g.changed {
			g.src = *sg
			g.p1 = *checkGroup(&g.src, o)
			again = true
		}
	}
	v.gMoved = false
	if !again {
		return v.gs, nil
	}
	cands := make([]*groupCand, len(v.gorder))
	for i, g := range v.gorder {
		c := g.p1
		c.detail = slices.Clone(c.detail)
		cands[i] = &c
	}
	v.gContested = groupsContested(cands)
	gs := settleGroups(cands, liveGroups(o.Live))
	v.gs = gs
	sig := make(map[int64]string, len(gs.claimed))
	for gid, c := range gs.claimed {
		sig[gid] = gs.published[gid] + "\x00" + c.src.ID + "\x00" + c.src.DisplayName + "\x00" + c.reason
	}
	changed := map[int64]bool{}
	for gid, s := range sig {
		if v.gsig[gid] != s {
			changed[gid] = true
		}
	}
	for gid := range v.gsig {
		if _, ok := sig[gid]; !ok {
			changed[gid] = true
		}
	}
	v.gsig = sig
	return gs, changed
}

// groupsContested: two groups claim one name or gid.
func groupsContested(cands []*groupCand) bool {
	names := make(map[string]bool, len(cands))
	gids := make(map[int64]bool, len(cands))
	for _, c := range cands {
		if c.name != "" {
			if names[c.name] {
				return true
			}
			names[c.name] = true
		}
		if c.hasGID {
			if gids[c.gid] {
				return true
			}
			gids[c.gid] = true
		}
	}
	return false
}

// posixSet is the posix_groups members, made again only when a selected
// group changed, arrived or left.
func (v *Incremental) posixSet(dir *source.Directory, o Options) map[string]bool {
	if len(o.PosixGroups) == 0 {
		v.posix = nil
		return nil
	}
	want := make(map[string]bool, len(o.PosixGroups))
	for _, w := range o.PosixGroups {
		want[w] = true
	}
	dirty := v.posix == nil || v.selGone
	for _, g := range v.gorder {
		sel := want[g.src.ID] || want[g.src.DisplayName]
		if (sel || g.sel) && (g.changed || sel != g.sel) {
			dirty = true
		}
		g.sel = sel
	}
	v.selGone = false
	if dirty {
		v.posix = posixMembers(dir, o.PosixGroups)
	}
	return v.posix
}

// ancestors calls f with each directory above h that nestedHomes walks.
func ancestors(h string, f func(string) bool) {
	for p := path.Dir(h); p != "/" && p != "."; p = path.Dir(p) {
		if !f(p) {
			return
		}
	}
}

func (v *Incremental) index(s *ustate) {
	if v.desc == nil {
		v.desc = map[string]int{}
	}
	k := ukeys{indexed: true, name: s.p1.name, home: s.p1.home, uid: s.p1.uid, gid: s.p1.gid,
		hasUID: s.p1.hasUID, hasGID: s.src.GID != nil, private: s.p1.private}
	s.keys = k
	if k.name != "" {
		v.name.add(k.name, s)
	}
	if k.hasUID {
		v.uid.add(k.uid, s)
	}
	if k.home != "" {
		v.home.add(k.home, s)
		ancestors(k.home, func(p string) bool { v.desc[p]++; return true })
	}
	if k.private {
		v.priv.add(k.gid, s)
	}
	if k.hasGID {
		v.pgid.add(k.gid, s)
	}
}

func (v *Incremental) unindex(s *ustate) {
	k := s.keys
	s.keys = ukeys{}
	if k.name != "" {
		v.name.remove(k.name, s)
	}
	if k.hasUID {
		v.uid.remove(k.uid, s)
	}
	if k.home != "" {
		v.home.remove(k.home, s)
		ancestors(k.home, func(p string) bool {
			if v.desc[p]--; v.desc[p] <= 0 {
				delete(v.desc, p)
			}
			return true
		})
	}
	if k.private {
		v.priv.remove(k.gid, s)
	}
	if k.hasGID {
		v.pgid.remove(k.gid, s)
	}
}

// maxDescentWalks bounds the walks over the directory that find homes
// inside a settled record's home; past it every record is settled.
const maxDescentWalks = 8

// closure is the users pass 2 settles again, in directory order: the
// ones checked again, the holders of the values changed records held
// (freed), every record sharing a value with another (its keeper may
// change with the live snapshot), and, repeatedly, the records sharing
// a value with any of these.
func (v *Incremental) closure(touched []*ustate, freed []ukeys, whole bool) []*ustate {
	all := func() []*ustate {
		set := make([]*ustate, 0, len(v.order))
		for _, s := range v.order {
			if !s.filtered {
				s.mark = v.run
				set = append(set, s)
			}
		}
		return set
	}
	if whole {
		return all()
	}
	var set, queue []*ustate
	add := func(s *ustate) {
		if s.mark != v.run && !s.gone && !s.filtered {
			s.mark = v.run
			queue = append(queue, s)
		}
	}
	pending := map[string]bool{}
	near := func(k ukeys) {
		if !k.indexed {
			return
		}
		if k.name != "" {
			v.name.each(k.name, add)
		}
		if k.hasUID {
			v.uid.each(k.uid, add)
		}
		if k.private {
			v.priv.each(k.gid, add)
		}
		if k.home != "" {
			v.home.each(k.home, add)
			ancestors(k.home, func(p string) bool { v.home.each(p, add); return true })
			if v.desc[k.home] > 0 {
				pending[k.home] = true
			}
		}
	}
	for _, s := range touched {
		add(s)
	}
	for _, k := range freed {
		near(k)
	}
	v.name.contested(add)
	v.uid.contested(add)
	v.home.contested(add)
	v.priv.contested(add)
	for p := range v.desc {
		v.home.each(p, add) // a home with homes inside it
	}
	for walks := 0; ; walks++ {
		for len(queue) > 0 {
			s := queue[len(queue)-1]
			queue = queue[:len(queue)-1]
			set = append(set, s)
			near(s.keys)
		}
		if len(pending) == 0 {
			break
		}
		if walks == maxDescentWalks {
			return all()
		}
		for _, s := range v.order {
			if s.mark == v.run || s.keys.home == "" {
				continue
			}
			ancestors(s.keys.home, func(p string) bool {
				if pending[p] {
					add(s)
					return false
				}
				return true
			})
		}
		clear(pending)
	}
	slices.SortFunc(set, func(a, b *ustate) int { return a.pos - b.pos })
	return set
}

// liveFor is the live snapshot's holders of the values the settled
// records claim; none when no two of them share one (then pass 2 reads
// no holder).
func liveFor(c *snapshot.Contents, set []*ustate, whole bool) liveIndex {
	if whole {
		return indexLive(c)
	}
	l := indexLive(nil)
	if c == nil {
		return l
	}
	names, homes := map[string]bool{}, map[string]bool{}
	uids, gids := map[int64]bool{}, map[int64]bool{}
	for _, s := range set {
		k := s.keys
		if k.name != "" {
			names[k.name] = true
		}
		if k.home != "" {
			homes[k.home] = true
		}
		if k.hasUID {
			uids[k.uid] = true
		}
		if k.private {
			gids[k.gid] = true
		}
	}
	if len(set) < 2 {
		return l
	}
	private := map[uint32]string{}
	for _, g := range c.Groups {
		if g.SCIMID == "" && gids[int64(g.GID)] {
			private[g.GID] = g.Name
		}
	}
	for _, u := range c.Users {
		if u.SCIMID == "" {
			continue
		}
		if names[u.Name] {
			l.userName[u.Name] = u.SCIMID
		}
		if uids[int64(u.UID)] {
			l.userUID[int64(u.UID)] = u.SCIMID
		}
		if homes[u.Home] {
			l.userHome[u.Home] = u.SCIMID
		}
		if gids[int64(u.GID)] && private[u.GID] == u.Name {
			l.privGID[int64(u.GID)] = u.SCIMID
		}
	}
	return l
}

// publish brings the published users up to date with the records
// settled or checked again; it returns the SCIM ids whose published name
// changed (appeared, went, renamed), for the groups listing them.
func (v *Incremental) publish(set, touched []*ustate) map[string]pubChange {
	if v.byID == nil {
		v.byID = map[string]string{}
	}
	changed := map[string]pubChange{}
	drop := map[uint32]bool{}
	var adds []snapshot.User
	do := func(s *ustate) {
		if s.pubRun == v.run {
			return
		}
		s.pubRun = v.run
		id := s.src.ID
		wasAcc, oldName := s.acc, s.pubName
		if wasAcc {
			drop[s.pubUID] = true
			delete(v.byID, id)
		}
		s.acc = !s.gone && !s.filtered && s.fin.reason == ""
		s.pubUID, s.pubName, s.rej = 0, "", nil
		switch {
		case s.acc:
			s.pubUID, s.pubName = s.fin.out.UID, s.fin.out.Name
			adds = append(adds, s.fin.out)
			v.byID[id] = s.pubName
		case !s.gone && !s.filtered:
			r := s.fin.rejection()
			s.rej = &r
		}
		if wasAcc != s.acc || s.pubName != oldName {
			changed[id] = pubChange{old: oldName, new: s.pubName}
		}
	}
	for _, s := range set {
		do(s)
	}
	for _, s := range touched {
		do(s)
	}
	if len(drop) == 0 && len(adds) == 0 {
		return changed
	}
	slices.SortFunc(adds, func(a, b snapshot.User) int { return cmp.Compare(a.UID, b.UID) })
	// A new list every time: the last one is the live contents'.
	out := make([]snapshot.User, 0, len(v.sorted)-len(drop)+len(adds))
	i := 0
	for _, u := range v.sorted {
		if drop[u.UID] {
			continue
		}
		for i < len(adds) && adds[i].UID < u.UID {
			out = append(out, adds[i])
			i++
		}
		out = append(out, u)
	}
	v.sorted = append(out, adds[i:]...)
	return changed
}

// pubChange is a user's published name before and after ("": not
// published).
type pubChange struct{ old, new string }

// patchMembers is a published group's entry after its members' published
// names changed (ch), from the last entry: the same as publishGroup would
// make again (names are unique among published users, so each changed
// member adds or removes exactly its own name), without resolving and
// sorting every member again (slurm-users: 90,000). ok is false when no
// member of the group changed.
func patchMembers(out *snapshot.Group, dropped int, ids []string, ch map[string]pubChange) (*snapshot.Group, int, bool) {
	if len(ch) == 0 || out == nil {
		return out, dropped, false
	}
	var hits map[string]int // changed member -> times listed
	for _, id := range ids {
		if _, ok := ch[id]; ok {
			if hits == nil {
				hits = map[string]int{}
			}
			hits[id]++
		}
	}
	if hits == nil {
		return out, dropped, false
	}
	members := slices.Clone(out.Members) // the last one is the live contents'
	for id, k := range hits {
		if old := ch[id].old; old != "" {
			if i, found := slices.BinarySearch(members, old); found {
				members = slices.Delete(members, i, i+1)
			}
		} else {
			dropped -= k
		}
	}
	for id, k := range hits {
		if name := ch[id].new; name != "" {
			if i, found := slices.BinarySearch(members, name); !found {
				members = slices.Insert(members, i, name)
			}
		} else {
			dropped += k
		}
	}
	if len(members) == 0 {
		members = nil
	}
	n := *out
	n.Members = members
	return &n, dropped, true
}

func sameGroupVerdict(a, b *groupCand) bool {
	return a.name == b.name && a.gid == b.gid && a.hasGID == b.hasGID && a.reason == b.reason &&
		a.option == b.option && slices.Equal(a.detail, b.detail)
}

// activeSent: some user of dir has an active attribute (see the package
// comment: then a user without one is kept disabled).
func activeSent(dir *source.Directory) bool {
	for i := range dir.Users {
		if dir.Users[i].Active != nil || dir.Users[i].Malformed[source.FieldActive] != "" {
			return true
		}
	}
	return false
}

// fingerprint is the options a validation ran with, the live snapshot
// aside: the same text, the same verdict for the same record.
func fingerprint(o Options) string {
	f := o
	f.Live, f.Local, f.reserved, f.localAnc, f.activeSent = nil, nil, nil, nil, false
	var b strings.Builder
	fmt.Fprintf(&b, "%#v\n%#v", f, *o.Local)
	return b.String()
}

// Difference names the first difference between two results ("" when
// they are equal): the whole validation checking the incremental one.
func (r *Result) Difference(o *Result) string {
	if reflect.DeepEqual(r, o) {
		return ""
	}
	switch {
	case r.Filtered != o.Filtered || r.Synthesised != o.Synthesised || r.DroppedMembers != o.DroppedMembers:
		return fmt.Sprintf("filtered %d/%d, synthesised %d/%d, dropped members %d/%d", r.Filtered, o.Filtered, r.Synthesised, o.Synthesised, r.DroppedMembers, o.DroppedMembers)
	case len(r.Rejections) != len(o.Rejections):
		return fmt.Sprintf("%d rejections against %d", len(r.Rejections), len(o.Rejections))
	}
	for i := range r.Rejections {
		if r.Rejections[i] != o.Rejections[i] {
			return fmt.Sprintf("rejection %d: %v against %v", i, r.Rejections[i], o.Rejections[i])
		}
	}
	if a, b := r.Contents, o.Contents; a != nil && b != nil {
		if len(a.Users) != len(b.Users) || len(a.Groups) != len(b.Groups) {
			return fmt.Sprintf("%d users and %d groups against %d and %d", len(a.Users), len(a.Groups), len(b.Users), len(b.Groups))
		}
		for i := range a.Users {
			if !reflect.DeepEqual(a.Users[i], b.Users[i]) {
				return fmt.Sprintf("user %q (id %q) against %q (id %q)", a.Users[i].Name, a.Users[i].SCIMID, b.Users[i].Name, b.Users[i].SCIMID)
			}
		}
		for i := range a.Groups {
			if !reflect.DeepEqual(a.Groups[i], b.Groups[i]) {
				return fmt.Sprintf("group %q (gid %d) against %q (gid %d)", a.Groups[i].Name, a.Groups[i].GID, b.Groups[i].Name, b.Groups[i].GID)
			}
		}
	}
	return "the contents differ"
}
