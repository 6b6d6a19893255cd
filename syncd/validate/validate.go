// Package validate turns a raw directory from an identity source into
// snapshot contents that are safe to publish as passwd and group
// entries. Every value from the source is untrusted.
//
// One bad record never blocks the others: it is left out with a named
// reason (a Rejection), counted, and reported. Values that are only
// decoration (one SSH key, a GECOS field) are dropped with a reason and
// the user is kept.
//
// Decisions:
//   - userNames become login names by Options.UserNames
//     (syncd/names/users.go): a name that is already a POSIX portable
//     name once ASCII-folded to lower case ([a-z_][a-z0-9_.-]*[$]?, at
//     most 32 bytes; SCIM userName is case-insensitive, RFC 7643 section
//     4.1.1) is kept as it is, so "Alice" becomes "alice" as before;
//     others (emails, UPNs, accents, spaces) are mapped. Look-alikes are
//     refused, never folded: Unicode case mapping would turn the Kelvin
//     sign U+212A into an ASCII "k". Reserved, local and local-member
//     checks run on the login name. Of users on one login name the live
//     holder keeps it, else the one whose own name it is, else none
//     (userNameClaims in harden.go).
//   - Ids are at most 2^32-2 whatever the range says ((uid_t)-1 means
//     "no id" to chown and setreuid), and 65534 (nobody, the kernel's
//     and NFS's overflow id) and 65535 (the 16-bit -1) are never given
//     to a SCIM account or group, even when /etc/passwd does not list
//     them: a SCIM account there would own every unmapped file.
//   - A uid, gid, name or home claimed by several records stays with one
//     of them (the live snapshot's holder, else the SCIM id sorting
//     first); only the others are rejected, so the choice never flips
//     with listing order and a newcomer never displaces, nor freezes, an
//     existing account. See harden.go.
//   - A user's primary gid must be published by a SCIM group that passed
//     (or be free for a private group with Options.PrivateGroups, or be
//     listed in Options.SharedPrimaryGIDs); never below MinID, never a
//     local group's gid. See harden.go for reserved names, local group
//     member lines and homes.
//   - active=false users are kept and marked inactive (PAM refuses them);
//     they are not deleted: SCIM "inactive" is "disabled". An absent
//     active is active: RFC 7643 gives it no default and leaves its
//     meaning to the provider, and reading absence as disabled would lock
//     out every user of a provider that does not send it. But when the
//     source sends active (or null) for some users of the same fetch, a
//     user without it is kept DISABLED, with a named reason: that
//     provider knows the attribute, and servers that omit false values
//     (Go's omitempty, "skip defaults" serialisers) would otherwise turn
//     every disabled user active. An active the
//     source sent but that is not a boolean (nor Entra's "True"/"False")
//     rejects the user: whether it is disabled is unknown.
package validate

import (
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/names"
	"github.com/scimbridge/scimbridge/syncd/snapshot"
	"github.com/scimbridge/scimbridge/syncd/source"
)

// Reasons a record, or one value of it, is rejected.
const (
	BadName        = "bad-name"
	MissingName    = "missing-name"
	MissingUID     = "missing-uid"
	BadUID         = "bad-uid"
	UIDZero        = "uid-zero"
	UIDOutOfRange  = "uid-out-of-range"
	MissingGID     = "missing-gid"
	BadGID         = "bad-gid"
	GIDZero        = "gid-zero"
	GIDOutOfRange  = "gid-out-of-range"
	DuplicateUID   = "duplicate-uid"
	DuplicateGID   = "duplicate-gid"
	DuplicateName  = "duplicate-name"
	LocalClash     = "local-clash"
	BadHome        = "bad-home"
	BadShell       = "bad-shell"
	BadGECOS       = "bad-gecos"
	BadSSHKey      = "bad-ssh-key"
	BadActive      = "bad-active"
	MissingActive  = "missing-active"
	BadMembers     = "bad-members"
	PrivateClashes = "private-group-clash"
	ReservedID     = "reserved-id"
	// Hardening (issue 9): see harden.go.
	BelowMinID            = "below-min-id"
	ReservedName          = "reserved-name"
	LocalGroupMember      = "local-group-member"
	PrimaryGIDLocal       = "primary-gid-local"
	PrimaryGIDUnpublished = "primary-gid-unpublished"
	// PosixGroupInexact: a posix_groups entry selects no group exactly
	// while a group only looks like it (matching is exact since issue 20).
	PosixGroupInexact = "posix-group-inexact"
	HomeOutsideRoots  = "home-outside-roots"
	HomeSystemPath    = "home-system-path"
	HomeTaken         = "home-taken"
	DuplicateHome     = "duplicate-home"
)

// Kinds of rejected things.
const (
	KindUser   = "user"
	KindGroup  = "group"
	KindSSHKey = "ssh-key" // one key dropped, user kept
	KindGECOS  = "gecos"   // GECOS dropped, user kept
	KindActive = "active"  // active unknown: user kept, disabled
	// KindConfig: a setting that no longer means what it did (a
	// migration hint, logged like a rejection: once per distinct detail).
	KindConfig = "config"
)

// Rejection is one record (or one value) left out, and why.
type Rejection struct {
	Kind   string `json:"kind"`
	ID     string `json:"id"`   // the source's id
	Name   string `json:"name"` // as the source sent it (quoted when printed)
	Reason string `json:"reason"`
	Detail string `json:"detail,omitempty"`
	// Option names the setting (or file) that decides this rejection.
	Option string `json:"option,omitempty"`
}

func (r Rejection) String() string {
	s := fmt.Sprintf("%s %q (id %q): %s", r.Kind, r.Name, r.ID, r.Reason)
	if r.Detail != "" {
		s += ": " + r.Detail
	}
	if r.Option != "" {
		s += " [" + r.Option + "]"
	}
	return s
}

// Options are the site's rules.
type Options struct {
	UIDMin, UIDMax, GIDMin, GIDMax int64
	// HomeTemplate, when set, overrides every home ("%u" = user name).
	// Without it the source's home is used, or /home/<name> when absent.
	HomeTemplate string
	// DefaultShell is used when the source sends none.
	DefaultShell string
	// AllowedShells lists the shells a source may set; empty allows any
	// clean absolute path.
	AllowedShells []string
	// PosixGroups: only members of these source groups become users,
	// matched on the IdP's exact identity: the SCIM id or the exact
	// displayName, never a folded or mapped look-alike (" slurm-users ",
	// "SLURM-USERS"). Empty means every user.
	PosixGroups []string
	// PrivateGroups: which primary gids no group has get a synthesised
	// user-private group (the zero value is config.PrivateGroupsUID).
	PrivateGroups config.PrivateGroupMode
	// GroupNames maps IdP group names to Linux names (zero: names.Default).
	GroupNames names.Policy
	// UserNameDomains are stripped from email-style userNames (Entra and
	// Okta publish UPNs): alice@example.com becomes alice. A userName
	// with any other domain is rejected, so two people with the same
	// local part at different domains never share an account. Merged
	// into UserNames.Domains.
	UserNameDomains []string
	// UserNames maps userNames to login names (zero: names.DefaultUsers:
	// any domain cut, characters mapped as for groups; see
	// syncd/names/users.go).
	UserNames names.Users
	// Local is the node's own accounts; nil skips the clash check.
	Local *Local
	// MinID is the floor under every uid and gid (0: config.DefaultMinID).
	MinID int64
	// SharedPrimaryGIDs may be a primary gid without a SCIM group.
	SharedPrimaryGIDs []int64
	// ReservedNames no user or group may have (nil: the default list).
	ReservedNames []string
	// HomeRoots are where homes from the source may be (nil: /home).
	HomeRoots []string
	// Protected are trees no home may touch (nil: config.SystemPaths).
	Protected []string
	// Live is the live snapshot (nil: none). Of records claiming the
	// same name, uid, gid or home, the one holding it there keeps it.
	Live *snapshot.Contents
	// LiveIDs, when set, is the live snapshot as validation reads it,
	// in place of Live (Directory only; the incremental validator reads
	// Live).
	LiveIDs *LiveIDs

	// Compiled by withDefaults.
	reserved *config.Reserved
	localAnc map[string]string
	// activeSent: some user of this directory has an active attribute.
	activeSent bool
	// Source is recorded in the contents.
	Source string
}

// Result is the outcome of validating one directory.
type Result struct {
	Contents   *snapshot.Contents
	Rejections []Rejection
	// Filtered counts users left out because they are in no POSIX group
	// (not rejections: they are simply not cluster users).
	Filtered int
	// Synthesised counts user-private groups made up for primary gids.
	Synthesised int
	// DroppedMembers counts member references to users not published.
	DroppedMembers int
}

// Counts returns how many rejections each reason has.
func (r *Result) Counts() map[string]int {
	m := make(map[string]int)
	for _, rj := range r.Rejections {
		m[rj.Reason]++
	}
	return m
}

// MaxID is the largest uid or gid a record may have: 2^32-1 is
// (uid_t)-1, and anything wider would be truncated by uid_t.
const MaxID = 1<<32 - 2

// reservedIDs are never given to a SCIM user or group.
var reservedIDs = map[int64]string{
	65534: "65534 is nobody (the kernel's and NFS's overflow id)",
	65535: "65535 is (uint16)-1, an invalid id on 16-bit interfaces",
}

// checkID returns a rejection reason and detail for an id outside the
// range or reserved; "" when it is usable.
func checkID(kind string, id, lo, hi int64) (string, string) {
	outside := UIDOutOfRange
	if kind != "uid" {
		outside = GIDOutOfRange
	}
	switch {
	case id < lo || id > hi:
		return outside, fmt.Sprintf("%s %d is outside %d-%d", kind, id, lo, hi)
	case id > MaxID:
		return outside, fmt.Sprintf("%s %d is larger than %d, the largest id", kind, id, int64(MaxID))
	}
	if why, ok := reservedIDs[id]; ok {
		return ReservedID, fmt.Sprintf("%s %s", kind, why)
	}
	return "", ""
}

// MaxGECOS bounds the GECOS field; NSS buffers are small and nothing
// useful is longer.
const MaxGECOS = 256

type userCand struct {
	src    *source.User
	name   string
	uid    int64
	gid    int64
	hasUID bool
	home   string
	// private: the primary gid is left for a synthesised private group.
	private bool
	// own: name is the userName up to case or a listed domain, or a
	// rename; not derived by the mapping (see names.Users).
	own bool
	// option overrides the reason's usual option.
	option string
	// homeFromName: home was made from the Linux name (home_template or
	// the default), so a user refused that name claims no such home.
	homeFromName bool
	reason       string
	detail       []string
	out          snapshot.User
}

// rejection is the user's rejection once every check has run.
func (u *userCand) rejection() Rejection {
	return Rejection{
		Kind: KindUser, ID: u.src.ID, Name: u.src.UserName, Reason: u.reason,
		Detail: strings.Join(u.detail, "; "), Option: u.option,
	}
}

// posixHints appends the migration hints of posix_groups entries.
func posixHints(dir *source.Directory, o Options, rej []Rejection) []Rejection {
	for _, h := range PosixGroupHints(dir, o.PosixGroups) {
		rej = append(rej, Rejection{Kind: KindConfig, ID: "posix_groups", Name: h.entry, Reason: PosixGroupInexact, Detail: h.text, Option: "posix_groups"})
	}
	return rej
}

func (u *userCand) reject(reason, format string, a ...any) {
	if u.reason == "" {
		u.reason = reason
	}
	u.detail = append(u.detail, fmt.Sprintf(format, a...))
}

// Directory validates a whole directory.
func Directory(dir *source.Directory, o Options) *Result {
	defer keyMemo.rotate()
	res := &Result{Contents: &snapshot.Contents{Source: o.Source}}
	o = o.withDefaults()
	allowed := make(map[string]bool)
	for _, s := range o.AllowedShells {
		allowed[s] = true
	}
	var live liveIndex
	if o.LiveIDs != nil {
		live = o.LiveIDs.l
	} else {
		live = indexLive(o.Live)
	}
	o.activeSent = activeSent(dir)

	// Which users are cluster users at all.
	posix := posixMembers(dir, o.PosixGroups)
	res.Rejections = posixHints(dir, o, res.Rejections)

	// Groups first, without members: a user's primary gid must be one a
	// group publishes.
	gcands := checkGroups(dir, o, live)

	// Pass 1: each user on its own.
	// The candidates in one block (one allocation, not one per user).
	store := make([]userCand, 0, len(dir.Users))
	cands := make([]*userCand, 0, len(dir.Users))
	for i := range dir.Users {
		su := &dir.Users[i]
		if posix != nil && !posix[su.ID] {
			res.Filtered++
			continue
		}
		store = append(store, userCand{src: su}) // within its capacity: never moved
		c := &store[len(store)-1]
		checkUser(c, o, allowed, gcands, res)
		cands = append(cands, c)
	}

	// Pass 2: records claiming the same name, uid or home. One keeps it
	// (see harden.go); the others are rejected, and nothing else is.
	settleUsers(cands, live)

	byID := make(map[string]string, len(cands)) // source id -> published user name
	private := make(map[string]bool)
	// Sized once, to the users kept (none: nil, as before): grown by
	// append, the list cost 61 MB of copies at 100,000 users (issue 18).
	kept := 0
	for _, c := range cands {
		if c.reason == "" {
			kept++
		}
	}
	if kept > 0 {
		res.Contents.Users = make([]snapshot.User, 0, kept)
	}
	for _, c := range cands {
		if c.reason != "" {
			res.Rejections = append(res.Rejections, c.rejection())
			continue
		}
		res.Contents.Users = append(res.Contents.Users, c.out)
		byID[c.src.ID] = c.out.Name
		if c.private {
			private[c.src.ID] = true
		}
	}

	groups(gcands, o, byID, private, res)
	for i := range res.Rejections {
		if res.Rejections[i].Option == "" {
			res.Rejections[i].Option = reasonOption[res.Rejections[i].Reason]
		}
	}
	sortContents(res.Contents)
	return res
}

// settleUsers is pass 2: records claiming the same name, uid, home (or
// nesting homes) or private gid. One keeps it (see harden.go); the
// others are rejected, and nothing else is. It reads only the records it
// is given and the live holders of their values, so a set of records
// closed under sharing one of those values settles exactly as it does
// within the whole directory (the incremental validator relies on it).
func settleUsers(cands []*userCand, live liveIndex) {
	uid := func(c *userCand) string { return c.src.ID }
	userNameClaims(cands, live.userName)
	for _, c := range cands {
		if c.reason == DuplicateName && c.homeFromName {
			c.home = "" // made from a name it did not get
		}
	}
	claims(cands, uid, func(c *userCand) (int64, bool) { return c.uid, c.hasUID }, live.userUID,
		func(c, k *userCand) {
			c.reject(DuplicateUID, "uid %d is also claimed by %s, which keeps it (%s)", c.uid, describe(k.src.ID, k.src.UserName), keepWhy(k.src.ID, live.userUID[c.uid]))
		})
	claims(cands, uid, func(c *userCand) (string, bool) { return c.home, c.home != "" }, live.userHome,
		func(c, k *userCand) {
			c.reject(DuplicateHome, "home %q is also claimed by %s, which keeps it (%s)", c.home, describe(k.src.ID, k.src.UserName), keepWhy(k.src.ID, live.userHome[c.home]))
		})
	nestedHomes(cands, live)
	privateGIDs(cands, live)
}

// malformedOrder fixes which reason a record with several unreadable
// attributes is reported under.
var malformedOrder = []string{
	source.FieldUserName, source.FieldUID, source.FieldGID, source.FieldHome,
	source.FieldShell, source.FieldActive,
}

func checkUser(c *userCand, o Options, allowed map[string]bool, gs *groupSet, res *Result) {
	su := c.src
	for _, field := range malformedOrder {
		why, ok := su.Malformed[field]
		if !ok {
			continue
		}
		switch field {
		case source.FieldUID:
			c.reject(BadUID, "uid: %s", why)
		case source.FieldGID:
			c.reject(BadGID, "gid: %s", why)
		case source.FieldUserName:
			c.reject(BadName, "userName: %s", why)
		case source.FieldHome:
			c.reject(BadHome, "home: %s", why)
		case source.FieldShell:
			c.reject(BadShell, "shell: %s", why)
		case source.FieldActive:
			c.reject(BadActive, "active: %s", why)
		}
	}

	// Name: mapped by user_names (syncd/names/users.go), then every check
	// runs on the Linux name, so no mapping reaches a reserved or local
	// name.
	switch {
	case su.UserName == "" && su.Malformed[source.FieldUserName] == "":
		c.reject(MissingName, "no userName")
	case su.UserName != "":
		name, own, err := o.UserNames.Map(su.ID, su.UserName)
		if err != nil {
			var ne *names.Error
			errors.As(err, &ne)
			c.reject(BadName, "userName %q: %s", su.UserName, ne.Why)
			c.option = ne.Option
			break
		}
		c.name, c.own = name, own
		if why := checkName(c.name); why != "" {
			c.reject(BadName, "userName %q: %s", su.UserName, why)
			c.name = ""
		} else if r := o.reserved.Match(c.name); r != "" {
			c.reject(ReservedName, "name %q is reserved (%q grants privilege by convention or belongs to a system account)", c.name, r)
		} else if o.Local.UserNames[c.name] {
			c.reject(LocalClash, "name %q is a local account in /etc/passwd", c.name)
		} else if gl := o.Local.Members[c.name]; len(gl) > 0 {
			c.reject(LocalGroupMember, "name %q is listed as a member of local group(s) %s in /etc/group: the account would inherit them; remove it from those lines", c.name, strings.Join(gl, ", "))
		}
	}

	// UID.
	if su.UID == nil {
		if su.Malformed[source.FieldUID] == "" {
			c.reject(MissingUID, "no uid attribute")
		}
	} else {
		c.uid, c.hasUID = *su.UID, true
		reason, detail := checkID("uid", c.uid, o.UIDMin, o.UIDMax)
		switch {
		case c.uid == 0:
			c.reject(UIDZero, "uid 0 is root")
		case c.uid > 0 && c.uid < o.MinID:
			c.reject(BelowMinID, "uid %d is below min_id %d (the local system range)", c.uid, o.MinID)
		case reason != "":
			c.reject(reason, "%s", detail)
		case o.Local.UIDs[c.uid]:
			c.reject(LocalClash, "uid %d belongs to a local account in /etc/passwd", c.uid)
		}
	}

	// Primary GID.
	if su.GID == nil {
		if su.Malformed[source.FieldGID] == "" {
			c.reject(MissingGID, "no gid attribute")
		}
	} else {
		c.gid = *su.GID
		checkPrimaryGID(c, o, gs)
	}

	// Home.
	home := su.Home
	fromTemplate := false
	switch {
	case o.HomeTemplate != "" && c.name != "":
		home, fromTemplate = config.ExpandHome(o.HomeTemplate, c.name), true
	case home == "" && c.name != "":
		home, fromTemplate = o.HomeRoots[0]+"/"+c.name, true
	}
	if su.Malformed[source.FieldHome] == "" && c.name != "" {
		if reason, why := checkHomeHardened(home, fromTemplate, o); reason != "" {
			c.reject(reason, "home %q: %s", home, why)
		} else {
			c.home, c.homeFromName = home, fromTemplate
		}
	}

	// Shell.
	shell := su.Shell
	if shell == "" {
		shell = o.DefaultShell
	}
	if su.Malformed[source.FieldShell] == "" {
		if why := checkPathField(shell); why != "" {
			c.reject(BadShell, "shell %q: %s", shell, why)
		} else if strings.ContainsFunc(shell, unicode.IsSpace) {
			// Programs that run "$SHELL -c cmd" through another shell
			// would split it into arguments.
			c.reject(BadShell, "shell %q: contains white space", shell)
		} else if len(allowed) > 0 && !allowed[shell] {
			c.reject(BadShell, "shell %q is not in allowed_shells", shell)
		}
	}

	// Active: absent means active (RFC 7643 leaves it to the provider;
	// a provider without the attribute has no disabled users), unless
	// the source sends it for other users (see the package comment).
	active := true
	if su.Active != nil {
		active = *su.Active
	}

	if c.reason != "" {
		return
	}
	if su.Active == nil && o.activeSent {
		active = false
		res.Rejections = append(res.Rejections, Rejection{Kind: KindActive, ID: su.ID, Name: su.UserName, Reason: MissingActive,
			Detail: "no active attribute while the source sends it for other users (a server that omits false values): kept disabled"})
	}

	// Decoration: dropped with a reason, user kept.
	gecos := su.GECOS
	if why := su.Malformed[source.FieldGECOS]; why != "" {
		res.Rejections = append(res.Rejections, Rejection{Kind: KindGECOS, ID: su.ID, Name: su.UserName, Reason: BadGECOS, Detail: why})
		gecos = ""
	} else if why := checkGECOS(gecos); why != "" {
		res.Rejections = append(res.Rejections, Rejection{Kind: KindGECOS, ID: su.ID, Name: su.UserName, Reason: BadGECOS, Detail: why})
		gecos = ""
	}
	keys, rejected := checkKeys(su)
	res.Rejections = append(res.Rejections, rejected...)
	quota, rejected := checkQuota(su)
	res.Rejections = append(res.Rejections, rejected...)

	c.out = snapshot.User{
		Name: c.name, UID: uint32(c.uid), GID: uint32(c.gid), GECOS: gecos,
		Home: home, Shell: shell, Active: active, SCIMID: su.ID, SSHKeys: keys, Quota: quota,
	}
}

// checkName checks a folded name against the POSIX portable set (a
// trailing $ allowed: Samba machine accounts), at most 32 bytes; "" is ok.
func checkName(n string) string { return names.CheckUser(n, 32) }

// fieldBad reports characters that would break a passwd or group line
// or a C string: ':' separates fields, ',' separates members, '\n' ends
// the entry, NUL ends the string. Other control characters (C0, DEL and
// C1, where U+0085 is a line break to some readers) have no business in
// an account field either, nor have Unicode line separators and the
// bidirectional controls that make a terminal show text reordered.
func fieldBad(s string) string {
	if !utf8.ValidString(s) {
		return "not valid UTF-8"
	}
	for _, r := range s {
		switch {
		case r == ':' || r == ',':
			return fmt.Sprintf("contains %q", r)
		case unicode.IsControl(r):
			return fmt.Sprintf("contains control character %U", r)
		case r == 0x2028 || r == 0x2029:
			return fmt.Sprintf("contains line separator %U", r)
		case (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) || r == 0x200e || r == 0x200f || r == 0x061c:
			return fmt.Sprintf("contains bidirectional control %U", r)
		}
	}
	return ""
}

func checkPathField(p string) string {
	if why := fieldBad(p); why != "" {
		return why
	}
	if !strings.HasPrefix(p, "/") {
		return "not an absolute path"
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return `contains ".."`
		}
	}
	if path.Clean(p) != p {
		return "not a clean path"
	}
	if len(p) > 4096 {
		return "too long"
	}
	return ""
}

func checkHome(h string) string {
	if why := checkPathField(h); why != "" {
		return why
	}
	if h == "/" {
		return "is the root directory"
	}
	return ""
}

func checkGECOS(g string) string {
	if why := fieldBad(g); why != "" {
		return why
	}
	if len(g) > MaxGECOS {
		return fmt.Sprintf("%d bytes, more than %d", len(g), MaxGECOS)
	}
	return ""
}

func sortContents(c *snapshot.Contents) {
	sort.Slice(c.Users, func(i, j int) bool { return c.Users[i].UID < c.Users[j].UID })
	sort.Slice(c.Groups, func(i, j int) bool { return c.Groups[i].GID < c.Groups[j].GID })
	for i := range c.Groups {
		sort.Strings(c.Groups[i].Members)
	}
}
