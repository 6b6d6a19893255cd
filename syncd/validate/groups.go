package validate

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/scimbridge/scimbridge/syncd/names"

	"github.com/scimbridge/scimbridge/syncd/snapshot"
	"github.com/scimbridge/scimbridge/syncd/source"
)

type groupCand struct {
	src    *source.Group
	name   string
	gid    int64
	hasGID bool
	reason string
	detail []string
	// option overrides the reason's usual option (a name that cannot
	// be mapped names the group_names key that would map it).
	option string
}

func (g *groupCand) reject(reason, format string, a ...any) {
	if g.reason == "" {
		g.reason = reason
	}
	g.detail = append(g.detail, fmt.Sprintf(format, a...))
}

// checkGroups validates the source groups on their own (names, gids,
// duplicates), before users: a user's primary gid must be one a group
// that passed publishes.
func checkGroups(dir *source.Directory, o Options, live liveIndex) *groupSet {
	cands := make([]*groupCand, 0, len(dir.Groups))
	for i := range dir.Groups {
		cands = append(cands, checkGroup(&dir.Groups[i], o))
	}
	return settleGroups(cands, live)
}

// checkGroup is one group's checks on its own (name, gid, malformed
// attributes): what depends on no other record.
func checkGroup(sg *source.Group, o Options) *groupCand {
	g := &groupCand{src: sg}
	if why, ok := sg.Malformed[source.FieldName]; ok {
		g.reject(BadName, "displayName: %s", why)
	}
	if why, ok := sg.Malformed[source.FieldGID]; ok {
		g.reject(BadGID, "gid: %s", why)
	}
	if why, ok := sg.Malformed[source.FieldMembers]; ok {
		g.reject(BadMembers, "members: %s", why)
	}
	if sg.DisplayName == "" {
		if _, ok := sg.Malformed[source.FieldName]; !ok {
			g.reject(MissingName, "no displayName")
		}
	} else if n, err := o.GroupNames.Map(sg.ID, sg.DisplayName); err != nil {
		var ne *names.Error
		errors.As(err, &ne)
		g.reject(BadName, "displayName %q: %s", sg.DisplayName, ne.Why)
		g.option = ne.Option
	} else {
		g.name = n
		if r := o.reserved.Match(g.name); r != "" {
			g.reject(ReservedName, "name %q is reserved (%q grants privilege by convention or belongs to a system group)", g.name, r)
		} else if o.Local.GroupNames[g.name] {
			g.reject(LocalClash, "name %q is a local group in /etc/group", g.name)
		} else if o.Local.UserNames[g.name] {
			g.reject(LocalClash, "name %q is a local account in /etc/passwd (a group of that name would pass for its private group)", g.name)
		}
	}
	if sg.GID == nil {
		if _, ok := sg.Malformed[source.FieldGID]; !ok {
			g.reject(MissingGID, "no gid attribute")
		}
	} else {
		g.gid, g.hasGID = *sg.GID, true
		reason, detail := checkID("gid", g.gid, o.GIDMin, o.GIDMax)
		switch {
		case g.gid == 0:
			g.reject(GIDZero, "gid 0 is root's group")
		case g.gid > 0 && g.gid < o.MinID:
			g.reject(BelowMinID, "gid %d is below min_id %d (the local system range)", g.gid, o.MinID)
		case reason != "":
			g.reject(reason, "%s", detail)
		case o.Local.GIDs[g.gid]:
			g.reject(LocalClash, "gid %d belongs to a local group in /etc/group", g.gid)
		}
	}
	return g
}

// settleGroups settles groups claiming one name or gid and makes the
// set users' primary gids are checked against.
func settleGroups(cands []*groupCand, live liveIndex) *groupSet {
	id := func(g *groupCand) string { return g.src.ID }
	groupNameClaims(cands, live.groupName)
	claims(cands, id, func(g *groupCand) (int64, bool) { return g.gid, g.hasGID }, live.groupGID,
		func(g, k *groupCand) {
			g.reject(DuplicateGID, "gid %d is also claimed by group %s, which keeps it (%s)", g.gid, describe(k.src.ID, k.src.DisplayName), keepWhy(k.src.ID, live.groupGID[g.gid]))
		})
	gs := &groupSet{cands: cands, published: map[int64]string{}, claimed: map[int64]*groupCand{}}
	for _, g := range cands {
		if !g.hasGID {
			continue
		}
		if g.reason == "" {
			gs.published[g.gid] = g.name
			gs.claimed[g.gid] = g
		} else if gs.claimed[g.gid] == nil {
			gs.claimed[g.gid] = g
		}
	}
	return gs
}

// groups publishes the groups that passed, resolves member ids to the
// names of published users, and (optionally) adds user-private groups.
func groups(gs *groupSet, o Options, byID map[string]string, private map[string]bool, res *Result) {
	for _, g := range gs.cands {
		out, rej, dropped := publishGroup(g, byID)
		res.Rejections = append(res.Rejections, rej...)
		res.DroppedMembers += dropped
		if out != nil {
			res.Contents.Groups = append(res.Contents.Groups, *out)
		}
	}
	var want []privateUser
	for i := range res.Contents.Users {
		if u := &res.Contents.Users[i]; private[u.SCIMID] {
			want = append(want, privateUser{id: u.SCIMID, name: u.Name, gid: u.GID})
		}
	}
	privateGroups(gs, o, want, res)
}

// publishGroup is one group's entry (nil when it was rejected) with its
// members resolved to the names of published users, the rejections it
// adds, and how many member references name no published user.
func publishGroup(g *groupCand, byID map[string]string) (*snapshot.Group, []Rejection, int) {
	if g.reason != "" {
		return nil, []Rejection{{
			Kind: KindGroup, ID: g.src.ID, Name: g.src.DisplayName, Reason: g.reason,
			Detail: strings.Join(g.detail, "; "), Option: g.option,
		}}, 0
	}
	out := snapshot.Group{Name: g.name, GID: uint32(g.gid), SCIMID: g.src.ID}
	var rejected []Rejection
	out.Quota, rejected = checkGroupQuota(g.src)
	dropped := 0
	out.Members = make([]string, 0, len(g.src.MemberIDs))
	for _, id := range g.src.MemberIDs {
		name, ok := byID[id]
		if !ok {
			dropped++
			continue
		}
		out.Members = append(out.Members, name)
	}
	// A member listed twice is kept once: sorted (as sortContents
	// leaves every list) and compacted, not through a set of every
	// member (slurm-users: 90,000 names on every poll).
	slices.Sort(out.Members)
	out.Members = slices.Compact(out.Members)
	if len(out.Members) == 0 {
		out.Members = nil // as before: no members is no list
	}
	return &out, rejected, dropped
}

// privateUser is what privateGroups reads of a user that wants a
// private group: a few fields, not a copy of the snapshot.User (issue
// 18: appending 100,000 whole users was half of this step's CPU).
type privateUser struct {
	id, name string
	gid      uint32
}

// privateGroups adds the user-private groups of users (each one a user
// that wants one, in the caller's order) whose primary gid no group has.
// The sets and the groups are sized up front: grown from the groups'
// size to 100,000 private groups, the maps' growth was about a third of
// an incremental validation's CPU at 100,000 users (issue 18, recv2).
func privateGroups(gs *groupSet, o Options, users []privateUser, res *Result) {
	usedGID := make(map[int64]bool, len(gs.cands)+len(users))
	usedName := make(map[string]bool, len(gs.cands)+len(users))
	res.Contents.Groups = slices.Grow(res.Contents.Groups, len(users))
	for _, g := range gs.cands {
		// A rejected group's gid and name stay taken: a private group
		// must not inherit them.
		if g.hasGID {
			usedGID[g.gid] = true
		}
		if g.name != "" {
			usedName[g.name] = true
		}
	}
	for i := range users {
		u := &users[i]
		gid := int64(u.gid)
		if usedGID[gid] || o.Local.GIDs[gid] {
			continue
		}
		if usedName[u.name] || o.Local.GroupNames[u.name] || gid < o.GIDMin || gid > o.GIDMax {
			res.Rejections = append(res.Rejections, Rejection{
				Kind: KindGroup, ID: u.id, Name: u.name, Reason: PrivateClashes,
				Detail: fmt.Sprintf("no group has gid %d and a private group %q cannot be made (name taken or gid out of range); the user keeps the bare gid", gid, u.name),
			})
			continue
		}
		usedGID[gid], usedName[u.name] = true, true
		res.Contents.Groups = append(res.Contents.Groups, snapshot.Group{Name: u.name, GID: u.gid})
		res.Synthesised++
	}
}

// posixMembers is the set of SCIM user ids in the posix_groups groups;
// nil when every user is a cluster user. A group is selected by its SCIM
// id or its exact displayName only: a look-alike (" slurm-users ",
// "Slurm-Users") maps to a Linux name but never selects anyone, whether
// or not it passes validation (see PosixGroupHints for configs written
// for the old case-insensitive match).
func posixMembers(dir *source.Directory, want []string) map[string]bool {
	if len(want) == 0 {
		return nil
	}
	set := make(map[string]bool, len(want))
	for _, g := range want {
		set[g] = true
	}
	posix := make(map[string]bool)
	for _, g := range dir.Groups {
		if set[g.ID] || set[g.DisplayName] {
			for _, id := range g.MemberIDs {
				posix[id] = true
			}
		}
	}
	return posix
}

// PosixHint is one posix_groups entry and what to write instead.
type PosixHint struct{ entry, text string }

func (h PosixHint) String() string { return h.text }

// PosixGroupHints names the posix_groups entries that select no group
// exactly while some group only looks like them (differs in case or
// surrounding spaces): until release 0.x they matched case-insensitively.
// One line each, for a migration hint: Directory adds them as KindConfig
// rejections, logged once like any rejection.
func PosixGroupHints(dir *source.Directory, want []string) []PosixHint {
	var out []PosixHint
	for _, w := range want {
		exact, like := false, ""
		for _, g := range dir.Groups {
			if g.ID == w || g.DisplayName == w {
				exact = true
				break
			}
			if like == "" && strings.EqualFold(strings.TrimSpace(g.DisplayName), strings.TrimSpace(w)) {
				like = describe(g.ID, g.DisplayName)
			}
		}
		if !exact && like != "" {
			out = append(out, PosixHint{w, fmt.Sprintf("posix_groups entry %q matches no group exactly (matching is exact since issue 20); group %s only looks like it: write its exact displayName or its id in posix_groups", w, like)})
		}
	}
	return out
}

// groupNameClaims settles groups whose Linux names collide (two IdP
// names mapping to one Linux name, or one displayName used twice). The
// group holding the name in the live snapshot keeps it; else a group
// whose IdP name is exactly the Linux name (the SCIM id sorting first
// among several); else none does and every claimant is refused: of
// "Sales Team" and "Sales-Team" neither has a better claim to
// "sales_team", and a look-alike must never win a name by the order of
// ids. Only the colliding groups are refused.
func groupNameClaims(cands []*groupCand, live map[string]string) {
	settleNames(cands, nameClaim[*groupCand]{
		name: func(g *groupCand) string { return g.name },
		id:   func(g *groupCand) string { return g.src.ID },
		own:  func(g *groupCand) bool { return g.src.DisplayName == g.name },
		ownWhy: func(name string, several bool) string {
			why := fmt.Sprintf("its IdP name is exactly %q", name)
			if several {
				why += " and its SCIM id sorts first"
			}
			return why
		},
		describe: func(g *groupCand) string { return describe(g.src.ID, g.src.DisplayName) },
		lose: func(g *groupCand, name, keeper, why string) {
			g.reject(DuplicateName, "name %q is also claimed by group %s, which keeps it (%s)", name, keeper, why)
		},
		none: func(g *groupCand, name string, all []string) {
			g.reject(DuplicateName, "groups %s all map to the Linux name %q and none holds it already: none gets it (rename them in the IdP or with group_names.rename)", strings.Join(all, ", "), name)
			g.option = "group_names.rename"
		},
	}, live)
}
