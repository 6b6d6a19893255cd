package scim

// The incremental read (issue 18): between full reads, the daemon hands
// Update the directory it holds and gets it back with what changed at
// the source applied, instead of reading everything.
//
// Decisions:
//
//   - The changed records come from the change check's own listing
//     (meta.lastModified gt W, with the attributes a full read asks for):
//     one request per endpoint, normally an empty page, finds the changes
//     and brings them in full. Every record in the window is applied again
//     (idempotent); only those the last read did not see with the same
//     lastModified count as changes.
//   - A group's membership change is a change of the group: RFC 7644
//     section 3.5.2 and RFC 7643 section 3.1 make lastModified move when
//     any attribute of the resource changes, members included; the group
//     arrives whole (members attribute) and replaces the held one. A group
//     whose listing carries no members is read one by one (GET
//     /Groups/{id}), as a full read does.
//   - Deletions leave no timestamp: when the removal check finds an
//     endpoint's total down by a few (at most maxProbeDeletions), the
//     records are looked for where the remembered order had them, by
//     probing single positions, each candidate confirmed gone before it
//     is dropped (removed.go: about 25 tiny requests at 100,000 users).
//     Otherwise, or when the probes cannot tell, in the same poll, that
//     endpoint is listed by id alone (attributes=id: small pages, the
//     largest the server allows, side by side where it pages by index:
//     ids.go) and the held records no listing names are dropped, the
//     first few confirmed gone one by one as a full read does. A listed
//     id that neither the held directory nor the window's changes hold
//     (a record the window missed) makes the caller read everything
//     (ErrFullRead).
//   - Servers the check cannot use (no filter, no lastModified) and the
//     membership modes that read memberships from elsewhere (per-user,
//     user-groups, or auto when the last read found them only in the
//     users' groups attribute) keep the full read: Update returns
//     ErrNoChangeCheck and the caller reads everything, logged once.
//   - The periodic full read (full_reconcile_interval) stays: it is the
//     reconcile that proves the incremental state (syncd/pipeline).

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"sync/atomic"

	"github.com/scimbridge/scimbridge/syncd/redact"
	"github.com/scimbridge/scimbridge/syncd/source"
)

// ErrFullRead means the incremental read found something it cannot apply
// safely; the caller reads everything.
var ErrFullRead = errors.New("scim: the change cannot be applied to the held directory")

// ErrNotIncremental means memberships are read apart from the groups'
// records (group_members = per-user or user-groups, or auto falling back
// to the users' groups attribute): the caller uses Check, and a full read
// on a change.
var ErrNotIncremental = errors.New("scim: memberships are not read from the groups' records; changes are applied by full reads")

// listQuery is the full read's query of an endpoint.
func (c *Client) listQuery(seg string) url.Values {
	if seg == c.opts.GroupsEndpoint {
		return c.groupQuery()
	}
	return c.userQuery()
}

// Update reads what changed since the last Fetch or Update and returns
// prev with it applied (prev itself is not modified). ch says what
// changed; with ch.Changed false the returned directory is prev.
// ErrNoChangeCheck and ErrFullRead: read everything instead.
func (c *Client) Update(ctx context.Context, prev *source.Directory, removals bool) (*source.Directory, Change, error) {
	dir, ch, err := c.update(withBudget(ctx, c.opts.MaxFetchBytes), prev, removals)
	return dir, ch, redact.Error(c.nameTimeout(ctx, err))
}

// changed collects an Update's records.
type changed struct {
	c              *Client
	users          []source.User
	groups         []source.Group
	userAt, grAt   map[string]int
	noAttr         []int
	perGroup       bool
	unresolved     atomic.Int64
	usersEP, grpEP string
}

func (cd *changed) add(seg string, r *resource) {
	if seg == cd.usersEP {
		u := cd.c.toUser(r)
		cd.userAt[u.ID] = len(cd.users)
		cd.users = append(cd.users, u)
		return
	}
	g, has, n := cd.c.toGroup(r)
	if !has || cd.perGroup {
		cd.noAttr = append(cd.noAttr, len(cd.groups))
	}
	cd.unresolved.Add(int64(n))
	cd.grAt[g.ID] = len(cd.groups)
	cd.groups = append(cd.groups, g)
}

func (cd *changed) dup(seg string, r *resource) {
	if seg == cd.usersEP {
		userRepeat(cd.c, cd.users, cd.userAt, r)
	} else {
		groupRepeat(cd.c, cd.groups, cd.grAt, r)
	}
}

func (c *Client) update(ctx context.Context, prev *source.Directory, removals bool) (*source.Directory, Change, error) {
	if prev == nil {
		return nil, Change{}, ErrNoChangeCheck
	}
	c.mu.Lock()
	fromUsers := c.membersFromUsers
	c.mu.Unlock()
	switch {
	case c.opts.GroupMembers == "per-user" || c.opts.GroupMembers == "user-groups" || fromUsers:
		c.incrementalOffOnce("group_members = " + c.opts.GroupMembers + " reads memberships apart from the groups' own records")
		return nil, Change{}, ErrNotIncremental
	}
	c.mu.Lock()
	askAll := c.askAllGroups
	c.mu.Unlock()
	cd := &changed{c: c, userAt: map[string]int{}, grAt: map[string]int{}, usersEP: c.opts.UsersEndpoint, grpEP: c.opts.GroupsEndpoint,
		perGroup: c.opts.GroupMembers == "per-group" || askAll}
	ch, err := c.check(ctx, removals, cd)
	if err != nil {
		return nil, ch, err
	}
	if len(cd.noAttr) > 0 {
		tmp := &source.Directory{Groups: cd.groups}
		if err := c.fillMembers(ctx, tmp, cd.noAttr, &cd.unresolved); err != nil {
			return nil, ch, err
		}
	}
	out, removed, added, err := apply(prev, cd, nil, nil)
	if err != nil {
		return nil, ch, err
	}
	// Deletions: an endpoint whose total differs from the records held
	// once the changes are applied has records gone. A few are looked
	// for where they were (removed.go); otherwise, or when that cannot
	// tell, the endpoint is listed by id alone (ids.go).
	totals := map[string]int{}
	held := map[string]int{c.opts.UsersEndpoint: len(out.Users), c.opts.GroupsEndpoint: len(out.Groups)}
	c.chg.mu.Lock()
	deltas := maps.Clone(c.chg.deltas)
	order := maps.Clone(c.chg.order)
	c.chg.mu.Unlock()
	for seg, ids := range added {
		if order[seg] != nil {
			// New records are taken as appended: the probes check it.
			order[seg] = append(slices.Clip(order[seg]), ids...)
		}
	}
	rm := map[string]*removal{}
	d, err := c.discovery(ctx)
	if err != nil {
		return nil, ch, err
	}
	for _, seg := range []string{c.opts.UsersEndpoint, c.opts.GroupsEndpoint} {
		now, ok := ch.totals[seg]
		if !ok || now+deltas[seg] == held[seg] {
			continue
		}
		if !ch.Changed {
			ch.Changed, ch.Reason = true, fmt.Sprintf("%s: %d records, %d held (added or deleted)", seg, now, held[seg])
		}
		var miss probeMiss
		switch ord := order[seg]; {
		case deltas[seg] != 0:
			miss = probeMiss(fmt.Sprintf("the server's count differs from the records it lists by %d", deltas[seg]))
		case c.listDeletions:
			miss = "asked to list"
		case ord == nil:
			miss = "no remembered order (the last id listing was read page after page)"
		case len(ord) != held[seg]:
			miss = probeMiss(fmt.Sprintf("the remembered order holds %d ids, %d records are held", len(ord), held[seg]))
		default:
			gone, m, err := c.findRemoved(ctx, d, seg, ord, now)
			if err != nil {
				return nil, ch, err
			}
			if miss = m; miss == "" {
				r := &removal{gone: make(map[string]struct{}, len(gone))}
				for _, id := range gone {
					r.gone[id] = struct{}{}
				}
				rm[seg], totals[seg] = r, now
				continue
			}
		}
		c.probeMissed(seg, miss)
		r, err := c.listRemoval(ctx, d, seg)
		if err != nil {
			return nil, ch, err
		}
		rm[seg], totals[seg] = r, r.total
	}
	if !ch.Changed {
		c.moveWindow(ch.since, ch.fresh)
		return prev, ch, nil
	}
	if len(rm) > 0 {
		if out, removed, _, err = apply(prev, cd, rm[c.opts.UsersEndpoint], rm[c.opts.GroupsEndpoint]); err != nil {
			return nil, ch, err
		}
		// The records confirmed gone must leave exactly the server's
		// count; if not, that endpoint is listed after all.
		relist := false
		for seg, r := range rm {
			if r.gone != nil && count(out, seg == c.opts.UsersEndpoint) != totals[seg] {
				c.probeMissed(seg, probeMiss(fmt.Sprintf("%d records held once %d confirmed gone were dropped, the server counts %d", count(out, seg == c.opts.UsersEndpoint), len(r.gone), totals[seg])))
				if rm[seg], err = c.listRemoval(ctx, d, seg); err != nil {
					return nil, ch, err
				}
				totals[seg], relist = rm[seg].total, true
			}
		}
		if relist {
			if out, removed, _, err = apply(prev, cd, rm[c.opts.UsersEndpoint], rm[c.opts.GroupsEndpoint]); err != nil {
				return nil, ch, err
			}
		}
		for seg, r := range rm {
			switch {
			case r.gone != nil:
				order[seg] = without(order[seg], r.gone)
			case r.order != nil && len(r.order) == count(out, seg == c.opts.UsersEndpoint):
				order[seg] = r.order
			default:
				order[seg] = nil
			}
		}
	}
	ch.Removed = removed
	c.moveWindow(ch.since, ch.fresh)
	c.settle(out, totals, order)
	if n := cd.unresolved.Load(); n > 0 {
		c.log.WithField("members", n).Warn("scim: group members with neither a value nor a $ref to a user are left out (a display name is not a userName)")
	}
	return out, ch, nil
}

// removal is how an endpoint's deleted records are known: listed, every
// id the server lists (held records it does not name are dropped, ids.go),
// or gone, the records confirmed gone (removed.go).
type removal struct {
	listed, gone map[string]struct{}
	order        []string // the listing's order, when it proved whole
	total        int      // the listing's totalResults
}

// drop reports whether the held record id goes (isChanged: the change
// check listed it, so a listing that missed it does not drop it).
func (r *removal) drop(id string, isChanged bool) bool {
	switch {
	case r == nil:
		return false
	case r.gone != nil:
		_, ok := r.gone[id]
		return ok
	case isChanged:
		return false
	}
	_, ok := r.listed[id]
	return !ok
}

// listRemoval lists every id of seg (and confirms the first few held
// ones it does not name gone, as a full read does).
func (c *Client) listRemoval(ctx context.Context, d *Discovery, seg string) (*removal, error) {
	st, err := c.listIDs(ctx, d, seg)
	if err != nil {
		return nil, err
	}
	if err := c.confirmRemovals(ctx, d, seg, st.seen); err != nil {
		return nil, err
	}
	return &removal{listed: st.seen, order: st.order, total: st.first}, nil
}

func count(dir *source.Directory, users bool) int {
	if users {
		return len(dir.Users)
	}
	return len(dir.Groups)
}

// apply is prev with the changed records replacing the held ones (new
// ones appended, their ids returned by endpoint in added) and, for an
// endpoint with a removal, the held records it drops dropped.
func apply(prev *source.Directory, cd *changed, ru, rg *removal) (_ *source.Directory, removed int, added map[string][]string, _ error) {
	users, nu, heldU, addU := merge(prev.Users, func(u *source.User) string { return u.ID }, cd.users, cd.userAt, ru)
	groups, ng, heldG, addG := merge(prev.Groups, func(g *source.Group) string { return g.ID }, cd.groups, cd.grAt, rg)
	// A listed record that is neither held nor changed: the window
	// missed it.
	for _, l := range []struct {
		what string
		r    *removal
		held map[string]bool
	}{{"user", ru, heldU}, {"group", rg, heldG}} {
		if l.r == nil {
			continue
		}
		for id := range l.r.listed {
			if !l.held[id] {
				return nil, 0, nil, fmt.Errorf("%w: %s %q is listed but was neither read before nor modified since", ErrFullRead, l.what, id)
			}
		}
	}
	added = map[string][]string{cd.usersEP: addU, cd.grpEP: addG}
	return &source.Directory{Users: users, Groups: groups}, nu + ng, added, nil
}

// merge is held with changed applied (changedAt places each by id) and
// the held records r drops dropped. known holds every id of the result
// when r lists (apply checks every listed id against it; built only
// then: 100,000 ids hashed on every change cost 50 ms of CPU); added
// the ids of the changed records that were not held, in order.
func merge[T any](held []T, id func(*T) string, changed []T, changedAt map[string]int, r *removal) (out []T, removed int, known map[string]bool, added []string) {
	out = make([]T, 0, len(held)+len(changed))
	if r != nil && r.listed != nil {
		known = make(map[string]bool, len(held)+len(changed))
	}
	wasHeld := make([]bool, len(changed))
	for i := range held {
		k := id(&held[i])
		j, isChanged := changedAt[k]
		if isChanged {
			wasHeld[j] = true
		}
		if r.drop(k, isChanged) {
			removed++
			continue
		}
		if known != nil {
			known[k] = true
		}
		if isChanged {
			out = append(out, changed[j])
		} else {
			out = append(out, held[i])
		}
	}
	for i := range changed {
		// changedAt names each id's one record: repeats were merged.
		if k := id(&changed[i]); !wasHeld[i] && changedAt[k] == i {
			if r != nil && r.gone != nil && r.drop(k, true) {
				continue // modified, then deleted
			}
			if known != nil {
				known[k] = true
			}
			out = append(out, changed[i])
			added = append(added, k)
		}
	}
	return out, removed, known, added
}

// settle makes an applied update the base of the next checks: the
// directory held (whose ids the next full read's removal confirmations
// compare with: kept as the directory, not as maps of 100,000 ids built
// on every change), the totals of the endpoints whose deletions were
// read, and the order in which deletions are looked for.
func (c *Client) settle(dir *source.Directory, totals map[string]int, order map[string][]string) {
	st := &c.chg
	st.mu.Lock()
	defer st.mu.Unlock()
	st.ids, st.held = nil, dir
	st.order = order
	if st.totals == nil {
		st.totals = map[string]int{}
	}
	for seg, total := range totals {
		st.totals[seg] = total
		st.settleTotal(seg, count(dir, seg == c.opts.UsersEndpoint), total)
	}
}

// incrementalOffOnce says once why changes are applied by full reads.
func (c *Client) incrementalOffOnce(why string) {
	c.mu.Lock()
	logged := c.incrementalLogged
	c.incrementalLogged = true
	c.mu.Unlock()
	if !logged {
		c.log.Warn("scim: " + why + ": every change is applied by reading everything")
	}
}
