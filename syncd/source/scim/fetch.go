package scim

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/scimbridge/scimbridge/syncd/redact"
	"github.com/scimbridge/scimbridge/syncd/source"
)

// perGroupWorkers bounds concurrent GET /Groups/{id} requests.
const perGroupWorkers = 4

// Fetch reads every user and group. It discovers the server first if
// that has not succeeded yet. Any failed request fails the fetch, and so
// does going over a cap (guard.go). Its error holds no credential; a
// timeout names its option.
func (c *Client) Fetch(ctx context.Context) (*source.Directory, error) {
	dir, err := c.fetch(withBudget(ctx, c.opts.MaxFetchBytes))
	return dir, redact.Error(c.nameTimeout(ctx, err))
}

func (c *Client) fetch(ctx context.Context) (*source.Directory, error) {
	d, err := c.discovery(ctx)
	if err != nil {
		return nil, err
	}
	// Users and groups are listed side by side: each walk mostly waits
	// for the server, and the server can render both at once.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rec := c.newRecorder()
	dir := &source.Directory{}
	// One string per distinct id across both walks (intern.go).
	ctx = withInterner(ctx, newInterner(0))
	var ust, gst *walkStats
	var uerr, gerr error
	// The first failure is the one to report, not the cancellation it
	// causes in the other walk.
	var (
		failMu   sync.Mutex
		firstErr error
	)
	fail := func(err error) {
		failMu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		failMu.Unlock()
		cancel()
	}
	var noAttr []int // groups whose listing carried no members attribute
	var unresolved atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		// A group listed twice keeps only the members both listings
		// name: a removal from an access group never depends on which
		// listing came first.
		// groupAt places each group by id, built at the first repeat
		// (paging drift is rare; most reads never need it).
		var groupAt map[string]int
		gctx := withDupHook(ctx, func(r *resource) {
			if groupAt == nil {
				groupAt = indexByID(dir.Groups, func(g *source.Group) string { return g.ID })
			}
			groupRepeat(c, dir.Groups, groupAt, r)
		})
		gctx = sizeHint(gctx, c.opts.MaxGroups, func(n int) {
			if dir.Groups == nil {
				dir.Groups = make([]source.Group, 0, n)
			}
		})
		gst, gerr = c.walk(gctx, c.opts.GroupsEndpoint, c.groupQuery(), d, func(r *resource) error {
			g, has, n := c.toGroup(r)
			if !has {
				noAttr = append(noAttr, len(dir.Groups))
			}
			if groupAt != nil {
				groupAt[g.ID] = len(dir.Groups)
			}
			unresolved.Add(int64(n))
			dir.Groups = append(dir.Groups, g)
			rec.see(c.opts.GroupsEndpoint, r)
			return nil
		})
		if gerr != nil {
			fail(gerr)
		}
	}()
	memberOf := &userGroups{}
	// A user listed twice (paging drift, a hostile server) is taken from
	// its first listing, except that a repeat that does not say active
	// (false, or unreadable) disables it: the same record must never be
	// active by listing order.
	var userAt map[string]int // as groupAt
	uctx := withDupHook(ctx, func(r *resource) {
		if userAt == nil {
			userAt = indexByID(dir.Users, func(u *source.User) string { return u.ID })
		}
		userRepeat(c, dir.Users, userAt, r)
	})
	uctx = sizeHint(uctx, c.opts.MaxUsers, func(n int) {
		if dir.Users == nil {
			dir.Users = make([]source.User, 0, n)
		}
	})
	ust, uerr = c.walk(uctx, c.opts.UsersEndpoint, c.userQuery(), d, func(r *resource) error {
		u := c.toUser(r)
		if c.opts.GroupMembers == "user-groups" {
			memberOf.add(c, r, u.ID)
		}
		if userAt != nil {
			userAt[u.ID] = len(dir.Users)
		}
		dir.Users = append(dir.Users, u)
		rec.see(c.opts.UsersEndpoint, r)
		return nil
	})
	if uerr != nil {
		fail(uerr)
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	fromUsers, askAll := false, false
	for seg, st := range map[string]*walkStats{c.opts.UsersEndpoint: ust, c.opts.GroupsEndpoint: gst} {
		if err := c.confirmRemovals(ctx, d, seg, st.seen); err != nil {
			return nil, err
		}
	}
	var ask []int // groups to read one by one
	switch c.opts.GroupMembers {
	case "per-user":
		if err := c.fillMembersPerUser(ctx, dir, d); err != nil {
			return nil, err
		}
	case "per-group":
		ask = allIndexes(len(dir.Groups))
	case "user-groups":
		memberOf.fill(dir)
	case "auto":
		// A listing where not one group has a member while there are
		// users is a server that leaves members out of listings (AWS
		// IAM Identity Center sends "members": []): ask every group.
		// Otherwise ask only the groups that came without the
		// attribute (servers drop it from large groups; an empty group
		// may omit it too, which costs one request).
		if len(dir.Users) > 0 && !anyMembers(dir) {
			ask = allIndexes(len(dir.Groups))
			askAll = true
		} else {
			ask = noAttr
		}
	}
	if len(ask) > 0 {
		c.log.WithField("groups", len(ask)).Info("scim: group listing carries no members for some groups; reading them one by one")
		if err := c.fillMembers(ctx, dir, ask, &unresolved); err != nil {
			return nil, err
		}
	}
	if c.opts.GroupMembers == "auto" && len(dir.Users) > 0 && len(dir.Groups) > 0 && !anyMembers(dir) {
		// Not one member in listings nor in single groups: the server
		// may keep memberships only on the users (RFC 7643 section
		// 4.1.2 "groups"). If the users say nothing either, the groups
		// are empty.
		var err error
		if fromUsers, err = c.fillMembersFromUsers(ctx, dir, d); err != nil {
			return nil, err
		}
		if !anyMembers(dir) {
			c.log.WithField("users", len(dir.Users)).WithField("groups", len(dir.Groups)).
				Warn("scim: no group has any member, in the listing, read one by one, or in the users' groups attribute: every group is published empty. A server that hides memberships (AWS IAM Identity Center answers only 'id eq ... and members eq ...') cannot be read as it is")
		}
	}
	if n := unresolved.Load(); n > 0 {
		c.log.WithField("members", n).Warn("scim: group members with neither a value nor a $ref to a user are left out (a display name is not a userName)")
	}
	c.mu.Lock()
	c.membersFromUsers, c.askAllGroups = fromUsers, askAll
	c.mu.Unlock()
	c.commitRead(rec,
		map[string]int{c.opts.UsersEndpoint: ust.first, c.opts.GroupsEndpoint: gst.first},
		map[string]map[string]struct{}{c.opts.UsersEndpoint: ust.seen, c.opts.GroupsEndpoint: gst.seen},
		// The read's order: where the next deletions are looked for
		// first (removed.go checks it against the server's index order).
		map[string][]string{c.opts.UsersEndpoint: idsOf(dir.Users, func(u *source.User) string { return u.ID }),
			c.opts.GroupsEndpoint: idsOf(dir.Groups, func(g *source.Group) string { return g.ID })})
	c.log.WithField("users", len(dir.Users)).WithField("groups", len(dir.Groups)).
		WithField("pages", ust.pages+gst.pages).WithField("repeats", ust.repeats+gst.repeats).
		WithField("paging", c.paging(d)).Debug("scim: fetched directory")
	return dir, nil
}

func (c *Client) discovery(ctx context.Context) (*Discovery, error) {
	c.mu.Lock()
	d := c.disc
	c.mu.Unlock()
	if d != nil {
		return d, nil
	}
	return c.discover(ctx)
}

func (c *Client) userQuery() url.Values {
	q := cloneValues(c.opts.UsersQuery)
	if !c.opts.NoAttributesParam {
		ps := c.paths
		list := []Path{Path{Attr: "externalId"}, ps.userName, ps.active, ps.uid, ps.gid, ps.gecos,
			ps.home, ps.shell, ps.quota, Path{Attr: "meta", Sub: "lastModified"}}
		list = append(list, c.sshKeyPaths()...)
		if c.opts.GroupMembers == "user-groups" {
			list = append(list, Path{Attr: "groups"})
		}
		q.Set("attributes", attrList(list...))
	}
	return q
}

// sshKeyPaths are the SSH key attribute paths to ask for and read, in
// order of preference.
func (c *Client) sshKeyPaths() []Path {
	c.mu.Lock()
	kp := c.keyPaths
	c.mu.Unlock()
	if kp != nil {
		return kp
	}
	var out []Path
	for _, p := range []Path{c.paths.sshKeys, c.paths.sshKeysAlt} {
		if p.Attr != "" {
			out = append(out, p)
		}
	}
	return out
}

func (c *Client) groupQuery() url.Values {
	q := cloneValues(c.opts.GroupsQuery)
	if !c.opts.NoAttributesParam {
		list := []Path{c.paths.groupName, c.paths.groupGID, c.paths.groupQuota, {Attr: "meta", Sub: "lastModified"}}
		switch c.opts.GroupMembers {
		case "per-group", "per-user", "user-groups":
		default:
			list = append(list, Path{Attr: "members"})
		}
		q.Set("attributes", attrList(list...))
	}
	return q
}

// attrList is the attributes= value: every path named explicitly, the
// extension ones fully qualified, so returned:request attributes come.
func attrList(ps ...Path) string {
	var out []string
	seen := map[string]bool{}
	for _, p := range ps {
		if p.Attr == "" {
			continue
		}
		s := p.String()
		if !seen[strings.ToLower(s)] {
			seen[strings.ToLower(s)] = true
			out = append(out, s)
		}
	}
	return strings.Join(out, ",")
}

// noteMalformed records that field was present but unreadable, so that
// validation can tell it from an absent one.
func noteMalformed(m *map[string]string, field string, err error) {
	if err == nil {
		return
	}
	if *m == nil {
		*m = make(map[string]string)
	}
	(*m)[field] = err.Error()
}

// toUser reads the configured attributes. Nothing is derived: a user
// without a uid attribute has a nil UID, whatever its id looks like.
func (c *Client) toUser(r *resource) source.User {
	var u source.User
	bad := func(field string, err error) { noteMalformed(&u.Malformed, field, err) }
	u.ID, _ = r.id()
	u.ExternalID, _, _ = r.str(Path{Attr: "externalId"})
	var err error
	ps := c.paths
	u.UserName, _, err = r.str(ps.userName)
	bad(source.FieldUserName, err)
	u.UID, err = r.integer(ps.uid)
	bad(source.FieldUID, err)
	u.GID, err = r.integer(ps.gid)
	bad(source.FieldGID, err)
	u.GECOS, _, err = r.str(ps.gecos)
	bad(source.FieldGECOS, err)
	u.Home, _, err = r.str(ps.home)
	bad(source.FieldHome, err)
	u.Shell, _, err = r.str(ps.shell)
	bad(source.FieldShell, err)
	u.Active, err = r.boolean(ps.active)
	bad(source.FieldActive, err)
	u.Quota, err = r.scalar(ps.quota)
	bad(source.FieldQuota, err)
	for _, p := range c.sshKeyPaths() {
		if _, present, _ := r.value(p); !present {
			continue
		}
		u.SSHKeys, err = r.strings(p)
		bad(source.FieldSSHKeys, err)
		break
	}
	scrubUser(&u)
	return u
}

// toGroup reads a group; has reports whether it carried a members
// attribute at all, unresolved how many members had no usable id.
func (c *Client) toGroup(r *resource) (g source.Group, has bool, unresolved int) {
	bad := func(field string, err error) { noteMalformed(&g.Malformed, field, err) }
	g.ID, _ = r.id()
	var err error
	g.DisplayName, _, err = r.str(c.paths.groupName)
	bad(source.FieldName, err)
	g.GID, err = r.integer(c.paths.groupGID)
	bad(source.FieldGID, err)
	g.Quota, err = r.scalar(c.paths.groupQuota)
	bad(source.FieldQuota, err)
	ids, unresolved, has, err := r.members(c.opts.UsersEndpoint, c.opts.GroupsEndpoint)
	bad(source.FieldMembers, err)
	g.MemberIDs = ids
	scrubGroup(&g)
	return g, has, unresolved
}

// userRepeat applies a repeated listing of a user (paging drift, a
// hostile server) to users, where userAt places the first one: the first
// listing is kept, except that a repeat that does not say active (false,
// or unreadable) disables it: the same record must never be active by
// listing order.
func userRepeat(c *Client, users []source.User, userAt map[string]int, r *resource) {
	u := c.toUser(r)
	i, ok := userAt[u.ID]
	if !ok || (u.Active != nil && *u.Active && u.Malformed[source.FieldActive] == "") {
		return
	}
	if u.Active != nil || u.Malformed[source.FieldActive] != "" {
		f := false
		users[i].Active = &f
	}
}

// groupRepeat applies a repeated listing of a group: it keeps only the
// members both listings name, so a removal from an access group never
// depends on which listing came first.
func groupRepeat(c *Client, groups []source.Group, groupAt map[string]int, r *resource) {
	g, has, _ := c.toGroup(r)
	i, ok := groupAt[g.ID]
	if !ok || !has {
		return
	}
	in := make(map[string]bool, len(g.MemberIDs))
	for _, m := range g.MemberIDs {
		in[m] = true
	}
	kept := groups[i].MemberIDs[:0:0]
	for _, m := range groups[i].MemberIDs {
		if in[m] {
			kept = append(kept, m)
		}
	}
	groups[i].MemberIDs = kept
}

// indexByID places each record by its id (the first of a repeated id;
// a walk lists each id once).
func indexByID[T any](recs []T, id func(*T) string) map[string]int {
	m := make(map[string]int, len(recs))
	for i := range recs {
		if _, dup := m[id(&recs[i])]; !dup {
			m[id(&recs[i])] = i
		}
	}
	return m
}

// anyMembers reports whether any group has a member.
func anyMembers(dir *source.Directory) bool {
	for i := range dir.Groups {
		if len(dir.Groups[i].MemberIDs) > 0 {
			return true
		}
	}
	return false
}

// userGroups collects memberships from the users' groups attributes.
type userGroups struct {
	members map[string][]string // group id -> user ids
	seen    bool                // some user carried the attribute
}

func (ug *userGroups) add(c *Client, r *resource, userID string) {
	gids, has, _ := r.groupsOf(c.opts.UsersEndpoint, c.opts.GroupsEndpoint)
	if !has {
		return
	}
	ug.seen = true
	if ug.members == nil {
		ug.members = make(map[string][]string)
	}
	for _, g := range gids {
		ug.members[g] = append(ug.members[g], userID)
	}
}

// fill replaces every group's members with what the users said.
func (ug *userGroups) fill(dir *source.Directory) {
	for i := range dir.Groups {
		dir.Groups[i].MemberIDs = ug.members[dir.Groups[i].ID]
	}
}

// fillMembersFromUsers lists the users once more for their groups
// attribute alone, and takes the groups' members from it when any user
// carried it.
func (c *Client) fillMembersFromUsers(ctx context.Context, dir *source.Directory, d *Discovery) (bool, error) {
	q := cloneValues(c.opts.UsersQuery)
	if !c.opts.NoAttributesParam {
		q.Set("attributes", "groups")
	}
	ug := &userGroups{}
	if _, err := c.walk(ctx, c.opts.UsersEndpoint, q, d, func(r *resource) error {
		id, _ := r.id()
		ug.add(c, r, id)
		return nil
	}); err != nil {
		return false, fmt.Errorf("scim: reading the users' groups: %w", err)
	}
	if ug.seen {
		c.log.Info("scim: no group lists members; taking memberships from the users' groups attribute")
		ug.fill(dir)
	}
	return ug.seen, nil
}

func allIndexes(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// fillMembers reads the members of the groups at the given indexes with
// GET /Groups/{id}, a few at a time. Here an absent members attribute
// means an empty group (RFC 7643 lets an empty multi-valued attribute be
// omitted). Any failed request fails the fetch.
func (c *Client) fillMembers(ctx context.Context, dir *source.Directory, which []int, unresolved *atomic.Int64) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	q := url.Values{}
	if !c.opts.NoAttributesParam {
		q.Set("attributes", "members")
	}
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
		next     = make(chan int)
	)
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
			cancel()
		}
		mu.Unlock()
	}
	for w := 0; w < perGroupWorkers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				g := &dir.Groups[i]
				u := c.endpoint(c.opts.GroupsEndpoint+"/"+url.PathEscape(g.ID), q)
				var raw json.RawMessage
				if err := c.get(ctx, u, &raw); err != nil {
					fail(fmt.Errorf("scim: members of group %q: %w", g.ID, err))
					continue
				}
				r, err := parseResource(raw)
				if err != nil {
					fail(fmt.Errorf("scim: GET %s: %v", u, err))
					continue
				}
				ids, n, has, err := r.members(c.opts.UsersEndpoint, c.opts.GroupsEndpoint)
				if err != nil {
					fail(fmt.Errorf("scim: GET %s: %v", u, err))
					continue
				}
				unresolved.Add(int64(n))
				if !has {
					ids = nil // a group with no members may omit the attribute
				}
				g.MemberIDs = ids
			}
		}()
	}
	for _, i := range which {
		select {
		case next <- i:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

// fillMembersPerUser asks, for each user, which groups list it as a
// member (filter members.value eq "<id>"). It costs a request per user,
// but it is the one way to read memberships from a server that truncates
// member lists (servers capping at 100 members, or failing on large
// groups).
func (c *Client) fillMembersPerUser(ctx context.Context, dir *source.Directory, d *Discovery) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	byID := make(map[string]int, len(dir.Groups))
	for i := range dir.Groups {
		dir.Groups[i].MemberIDs = nil
		byID[dir.Groups[i].ID] = i
	}
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
		next     = make(chan string)
	)
	for w := 0; w < perGroupWorkers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for uid := range next {
				lit, _ := json.Marshal(uid) // a SCIM filter string is a JSON string
				q := cloneValues(c.opts.GroupsQuery)
				q.Set("filter", "members.value eq "+string(lit))
				q.Set("attributes", "id")
				var ids []string
				_, err := c.walk(ctx, c.opts.GroupsEndpoint, q, d, func(r *resource) error {
					id, _ := r.id()
					ids = append(ids, id)
					return nil
				})
				mu.Lock()
				if err != nil {
					if firstErr == nil {
						firstErr = fmt.Errorf("scim: groups of user %q: %w", uid, err)
						cancel()
					}
				} else {
					for _, gid := range ids {
						if i, ok := byID[gid]; ok {
							dir.Groups[i].MemberIDs = append(dir.Groups[i].MemberIDs, uid)
						}
					}
				}
				mu.Unlock()
			}
		}()
	}
	for _, u := range dir.Users {
		select {
		case next <- u.ID:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(dir.Users) > 0 && !anyMembers(dir) {
		return c.checkMemberFilter(ctx, dir)
	}
	return nil
}

// memberFilterProbes bounds the groups read to check a members filter
// that matched nothing.
const memberFilterProbes = 10

// checkMemberFilter is run when members.value filters put no user in any
// group. Some servers answer that filter with an empty list instead of
// an error (elimity-com/scim cannot evaluate a sub-attribute of a
// multi-valued attribute): reading a few groups tells an empty directory
// from a filter the server ignores.
func (c *Client) checkMemberFilter(ctx context.Context, dir *source.Directory) error {
	users := make(map[string]bool, len(dir.Users))
	for _, u := range dir.Users {
		users[u.ID] = true
	}
	q := url.Values{}
	if !c.opts.NoAttributesParam {
		q.Set("attributes", "members")
	}
	for i := 0; i < len(dir.Groups) && i < memberFilterProbes; i++ {
		g := dir.Groups[i]
		u := c.endpoint(c.opts.GroupsEndpoint+"/"+url.PathEscape(g.ID), q)
		var raw json.RawMessage
		if err := c.get(ctx, u, &raw); err != nil {
			return fmt.Errorf("scim: members of group %q: %w", g.ID, err)
		}
		r, err := parseResource(raw)
		if err != nil {
			return fmt.Errorf("scim: GET %s: %v", u, err)
		}
		ids, _, _, _ := r.members(c.opts.UsersEndpoint, c.opts.GroupsEndpoint)
		for _, id := range ids {
			if users[id] {
				return fmt.Errorf("scim: group_members = per-user: the filter members.value eq \"<user id>\" put no user in any group, yet group %q lists user %q: the server does not evaluate that filter; use group_members = per-group", g.ID, id)
			}
		}
	}
	return nil
}
