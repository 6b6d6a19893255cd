package validate

import (
	"fmt"
	"strings"

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
		sg := &dir.Groups[i]
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
		var foldWhy string
		g.name, foldWhy = foldName(sg.DisplayName)
		if sg.DisplayName == "" {
			if _, ok := sg.Malformed[source.FieldName]; !ok {
				g.reject(MissingName, "no displayName")
			}
		} else if foldWhy != "" {
			g.reject(BadName, "displayName %q: %s", sg.DisplayName, foldWhy)
		} else if why := checkName(g.name); why != "" {
			g.reject(BadName, "displayName %q: %s", sg.DisplayName, why)
			g.name = ""
		} else if r := o.reserved.Match(g.name); r != "" {
			g.reject(ReservedName, "name %q is reserved (%q grants privilege by convention or belongs to a system group)", g.name, r)
		} else if o.Local.GroupNames[g.name] {
			g.reject(LocalClash, "name %q is a local group in /etc/group", g.name)
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
		cands = append(cands, g)
	}
	id := func(g *groupCand) string { return g.src.ID }
	claims(cands, id, func(g *groupCand) (string, bool) { return g.name, g.name != "" }, live.groupName,
		func(g, k *groupCand) {
			g.reject(DuplicateName, "name %q is also claimed by group %s, which keeps it (%s)", g.name, describe(k.src.ID, k.src.DisplayName), keepWhy(k.src.ID, live.groupName[g.name]))
		})
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
func groups(gs *groupSet, o Options, byID map[string]string, res *Result) {
	usedGID := make(map[int64]bool)
	usedName := make(map[string]bool)
	for _, g := range gs.cands {
		// A rejected group's gid and name stay taken: a private group
		// must not inherit them.
		if g.hasGID {
			usedGID[g.gid] = true
		}
		if g.name != "" {
			usedName[g.name] = true
		}
		if g.reason != "" {
			res.Rejections = append(res.Rejections, Rejection{
				Kind: KindGroup, ID: g.src.ID, Name: g.src.DisplayName, Reason: g.reason,
				Detail: strings.Join(g.detail, "; "),
			})
			continue
		}
		out := snapshot.Group{Name: g.name, GID: uint32(g.gid), SCIMID: g.src.ID}
		seen := make(map[string]bool, len(g.src.MemberIDs))
		for _, id := range g.src.MemberIDs {
			name, ok := byID[id]
			if !ok {
				res.DroppedMembers++
				continue
			}
			if !seen[name] {
				seen[name] = true
				out.Members = append(out.Members, name)
			}
		}
		res.Contents.Groups = append(res.Contents.Groups, out)
	}

	if !o.PrivateGroups {
		return
	}
	for i := range res.Contents.Users {
		u := &res.Contents.Users[i]
		gid := int64(u.GID)
		if usedGID[gid] || o.Local.GIDs[gid] {
			continue
		}
		if usedName[u.Name] || o.Local.GroupNames[u.Name] || gid < o.GIDMin || gid > o.GIDMax {
			res.Rejections = append(res.Rejections, Rejection{
				Kind: KindGroup, ID: u.SCIMID, Name: u.Name, Reason: PrivateClashes,
				Detail: fmt.Sprintf("no group has gid %d and a private group %q cannot be made (name taken or gid out of range); the user keeps the bare gid", gid, u.Name),
			})
			continue
		}
		usedGID[gid], usedName[u.Name] = true, true
		res.Contents.Groups = append(res.Contents.Groups, snapshot.Group{Name: u.Name, GID: u.GID})
		res.Synthesised++
	}
}
