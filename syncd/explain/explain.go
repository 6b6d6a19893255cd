package explain

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/scimbridge/scimbridge/syncd/cache"
	"github.com/scimbridge/scimbridge/syncd/keys"
)

// Gate is one gate's decision for the user.
type Gate struct {
	Verdict string `json:"verdict"` // allow, deny, ignore, absent, ...
	Reason  string `json:"reason"`
	// Options are what the decision was computed with, and where they
	// came from.
	Options string `json:"options,omitempty"`
}

// Report is everything explain knows about one user or group.
type Report struct {
	Kind     string `json:"kind"` // user or group
	Name     string `json:"name"`
	Snapshot struct {
		Path   string `json:"path"`
		Serial string `json:"serial"`
		Error  string `json:"error,omitempty"`
		// SlurmSyncedAt is when syncd last read the associations back
		// from slurmdbd; SlurmAssociations how many the snapshot holds
		// (0 and no time: syncd records none here).
		SlurmSyncedAt     string `json:"slurm_synced_at,omitempty"`
		SlurmAssociations int    `json:"slurm_associations"`
	} `json:"snapshot"`
	// Record: the source records of that name in the read behind the
	// snapshot (nil: not readable, or none).
	RecordNote string        `json:"record_note,omitempty"`
	Users      []UserRecord  `json:"source_users,omitempty"`
	Groups     []GroupRecord `json:"source_groups,omitempty"`

	Passwd       *cache.User         `json:"passwd,omitempty"`
	Group        *cache.Group        `json:"group,omitempty"`
	MemberOf     []string            `json:"member_of,omitempty"`
	Associations []cache.Association `json:"associations,omitempty"`
	Keys         int                 `json:"ssh_keys"`
	Gates        map[string]Gate     `json:"gates,omitempty"`

	// Namespaces: the Kubernetes namespaces the user's groups give
	// ([kubernetes] of the config; syncd/kube), with how.
	Namespaces []string `json:"kubernetes_namespaces,omitempty"`
	// Storage is the home and quota state (syncd/homes; set by package
	// main when a [homes] pass has run on this host).
	Storage any `json:"storage,omitempty"`
}

// Options are the gates' settings, as given or as read from the system.
type Options struct {
	// PAMAllowGroups: pam_scim's allow_groups; PAMSource says where they
	// were read.
	PAMAllowGroups []string
	PAMSource      string
	// KeysAllowGroups: scim-keys --allow-groups.
	KeysAllowGroups []string
	KeysSource      string
	// SPANK options: exempt users, mode, and the job's account (remote
	// context) if given.
	SpankExempt  []string
	SpankWarn    bool
	SpankSource  string
	SpankAccount string
	// SystemUID resolves a name through NSS (shadowing check); nil: skip.
	SystemUID func(string) (uint32, error)
}

// User explains one user name.
func User(c *cache.Cache, rec *Record, recErr error, name string, o Options) *Report {
	r := &Report{Kind: "user", Name: name, Gates: map[string]Gate{}}
	r.fillSnapshot(c)
	r.fillRecordUsers(rec, recErr, name)
	// Asked by the IdP's userName ("Alice@example.com"): the snapshot
	// knows the login name user_names made of it.
	if len(r.Users) == 1 && r.Users[0].Name != "" && r.Users[0].Name != name {
		name = r.Users[0].Name
	}

	u, err := c.User(name)
	switch {
	case err == nil:
		r.Passwd = &u
		gids, _ := c.UserGroups(name)
		for _, gid := range gids {
			if g, err := c.GroupByGID(gid); err == nil {
				r.MemberOf = append(r.MemberOf, g.Name)
			}
		}
		sort.Strings(r.MemberOf)
		r.Associations, _ = c.Associations(name)
		if k, err := c.Keys(name); err == nil {
			r.Keys = len(k)
		}
		r.Gates["nss"] = Gate{Verdict: "resolves", Reason: fmt.Sprintf("%s:x:%d:%d:%s:%s:%s", u.Name, u.UID, u.GID, u.GECOS, u.Home, u.Shell)}
	case errors.Is(err, cache.ErrNotFound):
		r.Gates["nss"] = Gate{Verdict: "absent", Reason: "not in the snapshot" + r.whyAbsent()}
	default:
		r.Gates["nss"] = Gate{Verdict: "unavailable", Reason: err.Error()}
		return r
	}
	shadowed := ""
	if r.Passwd != nil && o.SystemUID != nil {
		if uid, err := o.SystemUID(name); err == nil && uid != r.Passwd.UID {
			shadowed = fmt.Sprintf("the system resolves %s to uid %d, not the snapshot's %d (a local account listed before scim)", name, uid, r.Passwd.UID)
		}
	}
	r.Gates["pam_scim"] = pamGate(c, r.Passwd, shadowed, o)
	r.Gates["scim_keys"] = keysGate(c, name, r.Keys, o)
	r.Gates["spank_scim"] = spankGate(r.Passwd, r.Associations, o, r.Snapshot.SlurmAssociations == 0 && r.Snapshot.SlurmSyncedAt == "")
	return r
}

// pamGate mirrors pam_scim.c decide(): the same reader calls in the same
// order (scim_getpwnam, the shadowing check, scim_user_active,
// scim_user_in_group per allowed group).
func pamGate(c *cache.Cache, u *cache.User, shadowed string, o Options) Gate {
	g := Gate{Options: optString("allow_groups", o.PAMAllowGroups, o.PAMSource)}
	switch {
	case u == nil:
		g.Verdict, g.Reason = "ignore", "PAM_IGNORE: not in the snapshot (not a SCIM account: other modules decide)"
	case shadowed != "":
		g.Verdict, g.Reason = "ignore", "PAM_IGNORE: "+shadowed
	case !u.Active:
		g.Verdict, g.Reason = "deny", "PAM_ACCT_EXPIRED: account "+u.Name+" is disabled in the identity provider"
	case len(o.PAMAllowGroups) == 0:
		g.Verdict, g.Reason = "allow", "PAM_SUCCESS: active"
	default:
		for _, grp := range o.PAMAllowGroups {
			if ok, err := c.InGroup(u.Name, grp); err == nil && ok {
				g.Verdict, g.Reason = "allow", "PAM_SUCCESS: active, member of "+grp
				return g
			}
		}
		g.Verdict, g.Reason = "deny", fmt.Sprintf("PAM_PERM_DENIED: account %s is not in an allowed group (%s)", u.Name, strings.Join(o.PAMAllowGroups, ", "))
	}
	return g
}

// keysGate runs scim-keys' own decision (keys.Check).
func keysGate(c *cache.Cache, name string, n int, o Options) Gate {
	g := Gate{Options: optString("--allow-groups", o.KeysAllowGroups, o.KeysSource)}
	u, d, err := keys.Check(c, name, o.KeysAllowGroups)
	if err != nil {
		g.Verdict, g.Reason = "unavailable", err.Error()
		return g
	}
	if d == keys.Allowed && o.SystemUID != nil && !keys.SameAccount(u, o.SystemUID) {
		d = keys.Shadowed
	}
	if d != keys.Allowed {
		g.Verdict, g.Reason = "no keys", d.String()
		return g
	}
	g.Verdict, g.Reason = "keys", fmt.Sprintf("%d key(s) offered to sshd", n)
	if n == 0 {
		g.Verdict, g.Reason = "no keys", "allowed, but the snapshot has no SSH key for this user"
	}
	return g
}

// spankGate mirrors spank_scim.c decide(): submit context (no account)
// or, with an account, the job's task_init check.
// noneRecorded: the snapshot holds no association at all and no time
// they were read back, so "no association yet" would blame the user for
// a head that records none (Slurm not managed by syncd, or its Slurm
// step never ran).
func spankGate(u *cache.User, as []cache.Association, o Options, noneRecorded bool) Gate {
	opts := "exempt_users=" + strings.Join(o.SpankExempt, ",")
	if o.SpankWarn {
		opts += " mode=warn"
	}
	if o.SpankSource != "" {
		opts += " (" + o.SpankSource + ")"
	}
	g := Gate{Options: opts}
	deny := func(why string) Gate {
		g.Verdict, g.Reason = "deny", why
		if o.SpankWarn {
			g.Verdict, g.Reason = "warn", why+" (mode=warn: printed, allowed)"
		}
		return g
	}
	switch {
	case u == nil:
		return deny("not provisioned on this cluster (not in the SCIM snapshot)")
	case contains(o.SpankExempt, u.Name) || u.Name == "root" || u.Name == "slurm" || u.UID == 0:
		g.Verdict, g.Reason = "allow", "exempt"
		return g
	case !u.Active:
		return deny("user " + u.Name + " is disabled in the identity provider")
	}
	if o.SpankAccount != "" {
		for _, a := range as {
			if a.Account == o.SpankAccount {
				g.Verdict, g.Reason = "allow", "task_init: association with account "+a.Account
				if a.Blocked {
					g.Reason += " (blocked for removal: running and pending jobs still run)"
				}
				return g
			}
		}
		return deny(fmt.Sprintf("user %s has no Slurm association with account %s", u.Name, o.SpankAccount))
	}
	open, blocked := 0, 0
	for _, a := range as {
		if a.Blocked {
			blocked++
		} else {
			open++
		}
	}
	switch {
	case open > 0:
		g.Verdict, g.Reason = "allow", fmt.Sprintf("sbatch/salloc/srun: %d association(s)", open)
		return g
	case blocked > 0:
		return deny("user " + u.Name + "'s Slurm associations are being removed (no longer in a cluster group); running jobs finish, new ones are refused")
	}
	if noneRecorded {
		return deny("user " + u.Name + " has no Slurm association: the snapshot holds none for anyone (the head's syncd records none: " +
			"[slurm] is not enabled there, or its Slurm pass has not run yet); spank_scim refuses every job until it does, ask the cluster's administrators")
	}
	// spank_scim.c's words, so explain and the refusal agree.
	return deny("user " + u.Name + " has no Slurm association yet; it is created by the next Slurm pass of scimbridge once you are in a group " +
		"that grants Slurm access (if you are in none, ask your admin to be added to one)")
}

// Group explains one group name.
func Group(c *cache.Cache, rec *Record, recErr error, name string) *Report {
	r := &Report{Kind: "group", Name: name}
	r.fillSnapshot(c)
	if g, err := c.Group(name); err == nil {
		r.Group = &g
	}
	if rec == nil {
		r.RecordNote = recordNote(recErr)
		return r
	}
	for _, g := range rec.Groups {
		if g.Name == name || g.Source.DisplayName == name {
			r.Groups = append(r.Groups, g)
		}
	}
	if len(r.Groups) == 0 {
		r.RecordNote = "the source sent no group of this name in the read behind the snapshot"
	}
	return r
}

func (r *Report) fillSnapshot(c *cache.Cache) {
	r.Snapshot.Serial, _ = c.Meta("serial")
	r.Snapshot.SlurmSyncedAt, _ = c.Meta("slurm_synced_at")
	if n, err := c.Meta("associations"); err == nil {
		r.Snapshot.SlurmAssociations, _ = strconv.Atoi(n)
	}
	if err := c.Check(); err != nil {
		r.Snapshot.Error = err.Error()
	}
}

func (r *Report) fillRecordUsers(rec *Record, recErr error, name string) {
	if rec == nil {
		r.RecordNote = recordNote(recErr)
		return
	}
	if rec.Serial != 0 && r.Snapshot.Serial != "" && strconv.FormatInt(rec.Serial, 10) != r.Snapshot.Serial {
		r.RecordNote = fmt.Sprintf("the record is of serial %d, the live snapshot is serial %s", rec.Serial, r.Snapshot.Serial)
	}
	for _, u := range rec.Users {
		if u.Name == name || u.Source.UserName == name || localPart(u.Source.UserName) == name {
			r.Users = append(r.Users, u)
		}
	}
	if len(r.Users) == 0 && r.RecordNote == "" {
		r.RecordNote = "the source sent no user of this name in the read behind the snapshot"
	}
}

func (r *Report) whyAbsent() string {
	var parts []string
	for _, u := range r.Users {
		switch u.Verdict {
		case Rejected:
			for _, rj := range u.Reasons {
				s := rj.Reason
				if rj.Detail != "" {
					s += ": " + rj.Detail
				}
				if rj.Option != "" {
					s += " (" + rj.Option + ")"
				}
				parts = append(parts, s)
			}
		case Filtered:
			parts = append(parts, "in no posix_groups group")
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return ": " + strings.Join(parts, "; ")
}

func recordNote(err error) string {
	switch {
	case err == nil:
		return ""
	case err == ErrNoRecord:
		return "no record of the last read beside the snapshot (written by syncd at its next read)"
	case os.IsPermission(err):
		return "what the source sent and why it was rejected is readable by root only"
	}
	return err.Error()
}

func localPart(s string) string {
	if i := strings.IndexByte(s, '@'); i > 0 {
		return s[:i]
	}
	return s
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func optString(key string, vals []string, src string) string {
	s := key + "=" + strings.Join(vals, ",")
	if src != "" {
		s += " (" + src + ")"
	}
	return s
}

// PAMOptions reads pam_scim's options from the account stack of
// /etc/pam.d/<service>, following @include and include/substack lines.
func PAMOptions(dir, service string) (allow []string, src string, found bool) {
	seen := map[string]bool{}
	var walk func(name string) bool
	walk = func(name string) bool {
		if seen[name] || len(seen) > 32 {
			return false
		}
		seen[name] = true
		p := filepath.Join(dir, name)
		f, err := os.Open(p)
		if err != nil {
			return false
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if line == "" || line[0] == '#' {
				continue
			}
			fs := strings.Fields(line)
			if fs[0] == "@include" && len(fs) > 1 {
				if walk(fs[1]) {
					return true
				}
				continue
			}
			if len(fs) < 3 || strings.TrimPrefix(fs[0], "-") != "account" {
				continue
			}
			if (fs[1] == "include" || fs[1] == "substack") && walk(fs[2]) {
				return true
			}
			i := 1
			if strings.HasPrefix(fs[1], "[") {
				for i < len(fs) && !strings.HasSuffix(fs[i], "]") {
					i++
				}
			}
			if i+1 < len(fs) && filepath.Base(fs[i+1]) == "pam_scim.so" {
				for _, a := range fs[i+2:] {
					if v, ok := strings.CutPrefix(a, "allow_groups="); ok {
						allow = splitList(v)
					}
				}
				src, found = p, true
				return true
			}
		}
		return false
	}
	walk(service)
	return allow, src, found
}

// KeysOptions reads --allow-groups from sshd_config's
// AuthorizedKeysCommand when it runs scim-keys.
func KeysOptions(sshdConfig string) (allow []string, found bool) {
	f, err := os.Open(sshdConfig)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 2 || !strings.EqualFold(fs[0], "AuthorizedKeysCommand") || !strings.Contains(fs[1], "scim-keys") {
			continue
		}
		for i, a := range fs {
			if v, ok := strings.CutPrefix(a, "--allow-groups="); ok {
				allow = splitList(v)
			} else if a == "--allow-groups" && i+1 < len(fs) {
				allow = splitList(fs[i+1])
			}
		}
		return allow, true
	}
	return nil, false
}

// SpankOptions reads spank_scim's options from plugstack.conf (and the
// files it includes).
func SpankOptions(plugstack string) (exempt []string, warn bool, found bool) {
	var walk func(p string, depth int) bool
	walk = func(p string, depth int) bool {
		if depth > 8 {
			return false
		}
		f, err := os.Open(p)
		if err != nil {
			return false
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) >= 2 && fs[0] == "include" {
				ms, _ := filepath.Glob(fs[1])
				for _, m := range ms {
					if walk(m, depth+1) {
						return true
					}
				}
				continue
			}
			if len(fs) < 2 || filepath.Base(fs[1]) != "spank_scim.so" {
				continue
			}
			for _, a := range fs[2:] {
				if v, ok := strings.CutPrefix(a, "exempt_users="); ok {
					exempt = splitList(v)
				} else if a == "mode=warn" {
					warn = true
				}
			}
			return true
		}
		return false
	}
	found = walk(plugstack, 0)
	return exempt, warn, found
}

func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
