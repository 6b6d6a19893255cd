package validate

// Hardening against a hostile identity source (issue 9). Decisions:
//
//   - A user's primary gid is never below min_id. It is accepted when it
//     is in shared_primary_gids, or when it is inside gid_min..gid_max,
//     not a local group's gid, and either published by a SCIM group that
//     passed validation or (private_groups = true) free for a synthesised
//     user-private group. A primary gid that a rejected SCIM group holds
//     is refused: rejecting the group must not leave its gid usable.
//   - Names are compared with reserved_names case-insensitively (names
//     are folded to lower case before any check). A user name listed as a
//     member on a local /etc/group line is refused: the SCIM account would
//     inherit that group (a stale "sudo:x:27:ghost" line gives a SCIM
//     user named ghost sudo).
//   - Homes from the source must be strictly inside one of home_roots;
//     homes made from home_template, or defaulted to <first root>/<name>,
//     need not be. No home, however made, may be, contain or lie inside a
//     protected system path, a local account's home, or another SCIM
//     user's home. Paths are compared as clean strings: ".." and "//"
//     are already refused, and symlinks on the nodes cannot be seen from
//     here (home_roots themselves should not be symlinks).
//   - Records claiming the same name (after folding), uid, gid or home:
//     exactly one keeps it, and only the others are rejected. The keeper
//     is the record that holds that value in the live snapshot (same SCIM
//     id); when none does, the one whose SCIM id sorts first (byte
//     order). So a newcomer "SLURM-USERS" next to an existing
//     "slurm-users" is the one rejected, never both, and the choice does
//     not depend on listing order. Records rejected for another reason
//     still claim their values: a broken record must not hand its name or
//     uid to someone else for one poll.

import (
	"cmp"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/snapshot"
)

// reasonOption names the setting (or file) behind each reason, shown
// with every rejection so that an admin knows what would change it.
var reasonOption = map[string]string{
	BadName:               "user_names (userNames must map to POSIX names); group_names for groups",
	MissingName:           "attributes.user_name / attributes.group_name",
	MissingUID:            "attributes.uid",
	BadUID:                "attributes.uid",
	UIDZero:               "uid_min",
	UIDOutOfRange:         "uid_min, uid_max",
	MissingGID:            "attributes.gid / attributes.group_gid",
	BadGID:                "attributes.gid / attributes.group_gid",
	GIDZero:               "gid_min",
	GIDOutOfRange:         "gid_min, gid_max, shared_primary_gids",
	DuplicateUID:          "fix the source (the live holder keeps it)",
	DuplicateGID:          "fix the source (the live holder keeps it)",
	DuplicateName:         "fix the source (the live holder keeps it)",
	DuplicateHome:         "fix the source, or home_template",
	LocalClash:            "local_passwd, local_group (the local account wins)",
	BadHome:               "attributes.home, home_template",
	BadShell:              "allowed_shells, default_shell",
	BadGECOS:              "attributes.gecos",
	BadSSHKey:             "attributes.ssh_keys",
	BadActive:             "attributes.active",
	MissingActive:         "attributes.active (fix the source: send active for every user)",
	BadMembers:            "group_members",
	PrivateClashes:        "private_groups",
	ReservedID:            "uid_min, gid_min",
	BelowMinID:            "min_id, uid_min, gid_min",
	ReservedName:          "reserved_names",
	LocalGroupMember:      "local_group (remove the name from the local group line)",
	PrimaryGIDLocal:       "shared_primary_gids",
	PrimaryGIDUnpublished: "private_groups, shared_primary_gids (or publish a group with that gid)",
	PosixGroupInexact:     "posix_groups (write the group's exact displayName or its SCIM id)",
	HomeOutsideRoots:      "home_roots, home_template",
	HomeSystemPath:        "home_roots, home_template",
	HomeTaken:             "home_template, home_roots (or fix the source)",
}

// OptionFor returns the setting behind a rejection reason.
func OptionFor(reason string) string { return reasonOption[reason] }

func (o Options) withDefaults() Options {
	if o.Local == nil {
		o.Local = &Local{}
	}
	if o.MinID <= 0 {
		o.MinID = config.DefaultMinID
	}
	if o.ReservedNames == nil {
		o.ReservedNames = config.DefaultReservedNames
	}
	if len(o.HomeRoots) == 0 {
		o.HomeRoots = config.DefaultHomeRoots
	}
	if o.Protected == nil {
		o.Protected = config.SystemPaths
	}
	o.GroupNames = o.GroupNames.OrDefault()
	o.UserNames = o.UserNames.OrDefault()
	for _, d := range o.UserNameDomains {
		if !slices.Contains(o.UserNames.Domains, d) {
			o.UserNames.Domains = append(slices.Clip(o.UserNames.Domains), d)
		}
	}
	o.reserved = config.CompileReserved(o.ReservedNames)
	// Every ancestor of a local account's home, for "contains a local
	// home" in one lookup.
	o.localAnc = map[string]string{}
	for lh, u := range o.Local.Homes {
		if o.isRootOrAbove(lh) {
			continue
		}
		for p := path.Dir(lh); p != "/" && p != "."; p = path.Dir(p) {
			if o.localAnc[p] == "" {
				o.localAnc[p] = lh + " (the home of the local account " + u + ")"
			}
		}
	}
	return o
}

// liveIndex maps values of the live snapshot to the SCIM id holding them.
type liveIndex struct {
	userName, userHome, groupName map[string]string
	userUID, groupGID             map[int64]string
	// privGID: gid -> SCIM id of the user whose synthesised private
	// group (no SCIM id, named after the user) has that gid.
	privGID map[int64]string
}

func indexLive(c *snapshot.Contents) liveIndex {
	x := NewLiveIDs(0, 0)
	if c != nil {
		for i := range c.Groups {
			x.Group(&c.Groups[i])
		}
		for i := range c.Users {
			x.User(&c.Users[i])
		}
	}
	return x.l
}

// liveIDsRoom is the largest size hint NewLiveIDs takes (its six maps
// then take about 30 MB).
const liveIDsRoom = 1 << 17

// LiveIDs is the live snapshot as validation reads it (Options.LiveIDs):
// the SCIM id holding each user name, uid, home and private group's gid,
// and each group name and gid. Fed every group (Group) before any user
// (User), in the order Load lists them, it is what Options.Live gives;
// `sync --once` makes it from the file's rows (snapshot.EachID) instead
// of loading the live contents (pipeline/doc.go, recmem12).
type LiveIDs struct {
	l liveIndex
	// private: gid -> name of the groups without a SCIM id (the
	// synthesised private groups), for User.
	private map[uint32]string
}

// NewLiveIDs is an empty LiveIDs with room for about users and groups
// (a size hint: 0 is fine; at most liveIDsRoom each, so that a wrong
// count in a file's meta table cannot make it allocate much; more
// records grow the maps as they come).
func NewLiveIDs(users, groups int) *LiveIDs {
	users, groups = min(max(users, 0), liveIDsRoom), min(max(groups, 0), liveIDsRoom)
	return &LiveIDs{l: liveIndex{userName: make(map[string]string, users), userHome: make(map[string]string, users),
		groupName: make(map[string]string, groups), userUID: make(map[int64]string, users),
		groupGID: make(map[int64]string, groups), privGID: map[int64]string{}},
		private: map[uint32]string{}}
}

// Group adds a group of the live snapshot (every group before any user).
func (x *LiveIDs) Group(g *snapshot.Group) {
	if g.SCIMID == "" {
		x.private[g.GID] = g.Name
		return
	}
	x.l.groupName[g.Name] = g.SCIMID
	x.l.groupGID[int64(g.GID)] = g.SCIMID
}

// User adds a user of the live snapshot.
func (x *LiveIDs) User(u *snapshot.User) {
	if u.SCIMID == "" {
		return
	}
	x.l.userName[u.Name] = u.SCIMID
	x.l.userUID[int64(u.UID)] = u.SCIMID
	x.l.userHome[u.Home] = u.SCIMID
	if x.private[u.GID] == u.Name {
		x.l.privGID[int64(u.GID)] = u.SCIMID
	}
}

// liveGroups is the groups' part of the live index.
func liveGroups(c *snapshot.Contents) liveIndex {
	x := NewLiveIDs(0, 0)
	if c != nil {
		for i := range c.Groups {
			x.Group(&c.Groups[i])
		}
	}
	return liveIndex{groupName: x.l.groupName, groupGID: x.l.groupGID}
}

// claims finds values claimed by more than one record and calls reject
// for every claimant but the keeper (see the package decisions above).
func claims[T any, K comparable](cands []T, id func(T) string, key func(T) (K, bool), live map[K]string, reject func(c, keeper T)) {
	first := make(map[K]int, len(cands))
	dups := make(map[K][]int)
	for i, c := range cands {
		k, ok := key(c)
		if !ok {
			continue
		}
		if j, seen := first[k]; seen {
			if dups[k] == nil {
				dups[k] = []int{j}
			}
			dups[k] = append(dups[k], i)
		} else {
			first[k] = i
		}
	}
	for k, idx := range dups {
		keep := -1
		for _, i := range idx {
			if h := live[k]; h != "" && id(cands[i]) == h {
				keep = i
				break
			}
		}
		if keep < 0 {
			keep = slices.MinFunc(idx, func(a, b int) int {
				return cmp.Or(cmp.Compare(id(cands[a]), id(cands[b])), cmp.Compare(a, b))
			})
		}
		for _, i := range idx {
			if i != keep {
				reject(cands[i], cands[keep])
			}
		}
	}
}

// userNameClaims settles users landing on one login name (issue 20): the
// live holder keeps it; else a claimant whose name is its own (its
// userName up to case or a listed domain, or a rename: see names.Users),
// the SCIM id sorting first among several (as before user_names); else
// none does. A name derived by the mapping (an unlisted domain cut, a
// character replaced, a hash) never wins over nothing: of
// alice@a.example and alice@b.example neither becomes alice by the
// order of ids. Only the colliding users are refused, each naming the
// others and the option that separates them.
func userNameClaims(cands []*userCand, live map[string]string) {
	settleNames(cands, nameClaim[*userCand]{
		name: func(c *userCand) string { return c.name },
		id:   func(c *userCand) string { return c.src.ID },
		own:  func(c *userCand) bool { return c.own },
		ownWhy: func(name string, several bool) string {
			if several {
				return "no record holds it in the live snapshot and its SCIM id sorts first"
			}
			return fmt.Sprintf("%q is its own userName (up to case or a user_names.domains entry)", name)
		},
		describe: func(c *userCand) string { return describe(c.src.ID, c.src.UserName) },
		lose: func(c *userCand, name, keeper, why string) {
			c.reject(DuplicateName, "name %q is also claimed by %s, which keeps it (%s); give this one another name with user_names.rename", name, keeper, why)
			c.option = "user_names.rename, user_names.domains"
		},
		none: func(c *userCand, name string, all []string) {
			c.reject(DuplicateName, "users %s all map to the login name %q and none holds it already nor has it as its own userName: none gets it (list the right domain in user_names.domains, or give each a name with user_names.rename)", strings.Join(all, ", "), name)
			c.option = "user_names.domains, user_names.rename"
		},
	}, live)
}

// nameClaim is how settleNames reads and refuses one kind of record.
type nameClaim[T comparable] struct {
	name, id func(T) string
	// own: the record's name is its own, not derived by a mapping.
	own      func(T) bool
	ownWhy   func(name string, several bool) string
	describe func(T) string
	lose     func(c T, name, keeper, why string)
	none     func(c T, name string, all []string)
}

// settleNames settles records claiming one Linux name: the live holder
// keeps it; else the claimant whose own name it is (the SCIM id sorting
// first among several); else none does. Only the colliding records are
// refused, each naming the others.
func settleNames[T comparable](cands []T, k nameClaim[T], live map[string]string) {
	by := make(map[string][]T, len(cands)) // sized: growing it was a tenth of validation
	for _, c := range cands {
		if n := k.name(c); n != "" {
			by[n] = append(by[n], c)
		}
	}
	for name, cs := range by {
		if len(cs) < 2 {
			continue
		}
		var keep T
		found, why := false, ""
		for _, c := range cs {
			if h := live[name]; h != "" && k.id(c) == h {
				keep, found, why = c, true, "it holds it in the live snapshot"
			}
		}
		if !found {
			var own []T
			for _, c := range cs {
				if k.own(c) {
					own = append(own, c)
				}
			}
			if len(own) > 0 {
				keep = slices.MinFunc(own, func(a, b T) int { return cmp.Compare(k.id(a), k.id(b)) })
				found, why = true, k.ownWhy(name, len(own) > 1)
			}
		}
		var all []string
		for _, o := range cs {
			all = append(all, k.describe(o))
		}
		slices.Sort(all)
		for _, c := range cs {
			switch {
			case found && c == keep:
			case found:
				k.lose(c, name, k.describe(keep), why)
			default:
				k.none(c, name, all)
			}
		}
	}
}

func describe(id, name string) string { return fmt.Sprintf("%q (id %q)", name, id) }

func keepWhy(keeperID, liveID string) string {
	if liveID != "" && keeperID == liveID {
		return "it holds it in the live snapshot"
	}
	return "no record holds it in the live snapshot and its SCIM id sorts first"
}

// groupSet is the validated groups, before members are resolved.
type groupSet struct {
	cands     []*groupCand
	published map[int64]string     // gid -> name, groups that passed
	claimed   map[int64]*groupCand // gid -> a group claiming it, passed or not
}

func checkPrimaryGID(c *userCand, o Options, gs *groupSet) {
	g := c.gid
	why, reserved := reservedIDs[g]
	switch {
	case g == 0:
		c.reject(GIDZero, "gid 0 is root's group")
	case reserved:
		c.reject(ReservedID, "primary gid %s", why)
	case g < 0 || g > MaxID:
		c.reject(GIDOutOfRange, "primary gid %d is not a usable gid", g)
	case g < o.MinID:
		c.reject(BelowMinID, "primary gid %d is below min_id %d: a local system group%s is never a SCIM user's primary group", g, o.MinID, o.Local.groupLabel(g))
	case slices.Contains(o.SharedPrimaryGIDs, g):
	case o.Local.GIDs[g]:
		c.reject(PrimaryGIDLocal, "primary gid %d is the local group%s: add it to shared_primary_gids if every SCIM user may have it", g, o.Local.groupLabel(g))
	case g < o.GIDMin || g > o.GIDMax:
		c.reject(GIDOutOfRange, "primary gid %d is outside %d-%d", g, o.GIDMin, min(o.GIDMax, MaxID))
	case gs.published[g] != "":
	case gs.claimed[g] != nil:
		gc := gs.claimed[g]
		c.reject(PrimaryGIDUnpublished, "primary gid %d belongs to group %s, which was rejected (%s)", g, describe(gc.src.ID, gc.src.DisplayName), gc.reason)
	case o.PrivateGroups == config.PrivateGroupsAll,
		o.PrivateGroups == config.PrivateGroupsUID && c.hasUID && g == c.uid:
		// A user-private group is made for it (one user per gid: see
		// privateGIDs). By default only when the gid is the user's own
		// uid: the usual shape of a directory with per-user groups that
		// publishes none of them. Everything above already refused a gid
		// below min_id, a local group's, one outside the gid range and
		// one a SCIM group holds (passed or rejected).
		c.private = true
	case o.PrivateGroups == config.PrivateGroupsUID:
		c.reject(PrimaryGIDUnpublished, "no SCIM group has gid %d and it is not the user's uid (private_groups = \"uid\" makes a private group only when gid = uid): publish a group with that gid, set private_groups = true, or list it in shared_primary_gids", g)
	default:
		c.reject(PrimaryGIDUnpublished, "no SCIM group has gid %d: publish one, set private_groups = true (or \"uid\"), or list it in shared_primary_gids", g)
	}
}

// checkHomeHardened checks a home; reason "" when it is acceptable.
// fromTemplate: made by syncd (home_template or the default), not taken
// from the source.
func checkHomeHardened(h string, fromTemplate bool, o Options) (reason, why string) {
	if why := checkHome(h); why != "" {
		return BadHome, why
	}
	if s := config.SystemPathClash(h, o.Protected); s != "" {
		return HomeSystemPath, fmt.Sprintf("overlaps the system path %s", s)
	}
	if !fromTemplate {
		inside := false
		for _, r := range o.HomeRoots {
			if h == r {
				return HomeOutsideRoots, fmt.Sprintf("is the home root %s itself", r)
			}
			if config.Within(h, r) {
				inside = true
				break
			}
		}
		if !inside {
			return HomeOutsideRoots, fmt.Sprintf("is not inside home_roots %q", o.HomeRoots)
		}
	}
	for p := h; p != "/"; p = path.Dir(p) {
		if u := o.Local.Homes[p]; u != "" && !o.isRootOrAbove(p) {
			if p == h {
				return HomeTaken, fmt.Sprintf("is the home of the local account %s", u)
			}
			return HomeTaken, fmt.Sprintf("is inside %s, the home of the local account %s", p, u)
		}
	}
	if what := o.localAnc[h]; what != "" {
		return HomeTaken, "contains " + what
	}
	return "", ""
}

// isRootOrAbove reports whether p is a home root or contains one: such a
// local "home" (a daemon whose home is /home) is not one user's home.
func (o Options) isRootOrAbove(p string) bool {
	for _, r := range o.HomeRoots {
		if config.Within(r, p) {
			return true
		}
	}
	return p == "/"
}

// nestedHomes rejects one of two users whose homes nest (the owner of
// the outer one could replace the inner one's files). The one whose
// home is in the live snapshot keeps it; else the SCIM id sorting first.
func nestedHomes(cands []*userCand, live liveIndex) {
	by := make(map[string]*userCand, len(cands))
	for _, c := range cands {
		if c.home != "" {
			by[c.home] = c
		}
	}
	for _, d := range cands {
		if d.home == "" {
			continue
		}
		for p := path.Dir(d.home); p != "/" && p != "."; p = path.Dir(p) {
			a := by[p]
			if a == nil || a == d {
				continue
			}
			aLive, dLive := live.userHome[a.home] == a.src.ID, live.userHome[d.home] == d.src.ID
			off, keep := d, a
			switch {
			case dLive && !aLive:
				off, keep = a, d
			case aLive == dLive && d.src.ID < a.src.ID:
				off, keep = a, d
			}
			off.reject(HomeTaken, "home %q and the home %q of %s nest (one owner could replace the other's files); %s keeps its home",
				off.home, keep.home, describe(keep.src.ID, keep.src.UserName), describe(keep.src.ID, keep.src.UserName))
			break
		}
	}
}

// privateGIDs rejects all but one of the users sharing a primary gid that
// no SCIM group publishes (private_groups = true): the group made for the
// first would otherwise be the second one's primary group too, with
// access to the first one's files. The user whose private group it is in
// the live snapshot keeps it, else the SCIM id sorting first.
func privateGIDs(cands []*userCand, live liveIndex) {
	var priv []*userCand
	for _, c := range cands {
		if c.private {
			priv = append(priv, c)
		}
	}
	claims(priv, func(c *userCand) string { return c.src.ID }, func(c *userCand) (int64, bool) { return c.gid, true }, live.privGID,
		func(c, k *userCand) {
			c.reject(DuplicateGID, "primary gid %d has no SCIM group and is also the primary gid of %s, which keeps it as its private group (%s)",
				c.gid, describe(k.src.ID, k.src.UserName), keepWhy(k.src.ID, live.privGID[c.gid]))
		})
}
