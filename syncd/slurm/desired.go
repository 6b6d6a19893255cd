package slurm

import (
	"fmt"
	"maps"
	"os/user"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/scimbridge/scimbridge/syncd/snapshot"
)

// Desired is what the snapshot and the config ask for.
type Desired struct {
	Accounts map[string]*WantAccount
	Users    map[string]*WantUser
	// Known are all users in the snapshot (mapped or not), to tell a user
	// who left a group from an association nobody in SCIM asked for.
	Known map[string]bool
	// UIDs of the snapshot's users, by lowercase name.
	UIDs map[string]uint32
	// Disabled are the snapshot's users with active=false.
	Disabled map[string]bool
	// QOS every association asks for, for creating missing ones.
	QOS []string
	// QOSDefs are the QOS defined as code (qos_settings and each team's
	// project QOS): canonical settings by QOS name.
	QOSDefs map[string]map[string]string
	Notes   []string
	// Conflicts are mappings refused (see BuildDesired); Frozen are the
	// accounts they leave untouched, with the reason.
	Conflicts []string
	Frozen    map[string]string
	// Protected are members of groups in a conflict: nothing they have is
	// removed while it lasts (which group they are in is unclear).
	Protected map[string]bool
}

// WantAccount is one account scimbridge should own.
type WantAccount struct {
	Name    string
	Groups  []string // SCIM groups mapped to it
	Limits  map[string]string
	Landing bool
}

// WantUser is one provisioned user.
type WantUser struct {
	Name    string
	Default string
	Assocs  map[string]WantAssoc
	// Held: the user does not resolve on this host yet. Nothing is added
	// for them (slurmctld would cache the unknown user for up to an
	// hour); associations they already have are kept.
	Held   bool
	Active bool
}

// WantAssoc is the QOS of one association; empty QOS inherits.
type WantAssoc struct {
	QOS        []string
	DefaultQOS string
}

// Resolver answers getpwnam on this host: the uid, or ok=false when the
// name does not resolve.
type Resolver func(name string) (uid uint32, ok bool)

// GetpwnamResolver asks NSS (os/user uses getpwnam_r through cgo), which is
// what slurmctld will do with the name.
func GetpwnamResolver(name string) (uint32, bool) {
	u, err := user.Lookup(name)
	if err != nil {
		return 0, false
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return 0, false
	}
	return uint32(uid), true
}

type groupMapping struct {
	account string
	assoc   WantAssoc
	limits  map[string]string
	// projectQOS (with gpus) is the team's project tier, if any.
	projectQOS string
	gpus       int
}

// mapGroup returns the account group g maps to, whether the mapping is
// explicit, or ok=false.
func (c *Config) mapGroup(g string, pat *regexp.Regexp) (m groupMapping, explicit, ok bool) {
	gc, explicit := c.Groups[g]
	var name string
	switch {
	case explicit && gc.Account != "":
		name = strings.ToLower(gc.Account)
	case explicit:
		name = Normalize(c.AccountPrefix + g)
	case pat != nil:
		sub := pat.FindStringSubmatch(g)
		if sub == nil {
			return groupMapping{}, false, false
		}
		base := sub[0]
		if len(sub) > 1 {
			base = sub[1]
		}
		name = Normalize(c.AccountPrefix + base)
	default:
		return groupMapping{}, false, false
	}
	if name == "" {
		return groupMapping{}, false, false
	}
	qos, def, limits := c.QOS, c.DefaultQOS, c.Limits
	if explicit && len(gc.QOS) > 0 {
		qos, def = gc.QOS, gc.DefaultQOS
	}
	if explicit && gc.DefaultQOS != "" {
		def = gc.DefaultQOS
	}
	if explicit && gc.Limits != nil {
		limits = gc.Limits
	}
	lm, _ := parseLimits(limits) // checked by Config.Check
	m = groupMapping{account: name, limits: lm}
	tiers, gpus := c.Tiers, c.GuaranteedGPUs
	if explicit && gc.Tiers != nil {
		tiers = gc.Tiers
	}
	if explicit {
		gpus = gc.GuaranteedGPUs // the top-level one is for pattern groups
	}
	qos = append(append([]string(nil), qos...), tiers...)
	if gpus != nil {
		m.projectQOS, m.gpus = ProjectQOSName(name), *gpus
		qos = append(qos, m.projectQOS)
		if !(explicit && gc.DefaultQOS != "") {
			def = m.projectQOS
		}
		m.limits = withGPUs(m.limits, *gpus)
	}
	m.assoc = wantAssoc(dedupe(qos), def)
	return m, explicit, true
}

// explicitAccount is the account explicit group g maps to.
func (c *Config) explicitAccount(g string) string {
	if gc := c.Groups[g]; gc.Account != "" {
		return strings.ToLower(gc.Account)
	}
	return Normalize(c.AccountPrefix + g)
}

// explicitAccounts lists, per account, the explicit groups mapping to it.
func (c *Config) explicitAccounts() map[string][]string {
	out := map[string][]string{}
	for _, g := range slices.Sorted(maps.Keys(c.Groups)) {
		a := c.explicitAccount(g)
		out[a] = append(out[a], g)
	}
	return out
}

func quoteList(l []string) string {
	q := make([]string, len(l))
	for i, s := range l {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}

func wantAssoc(qos []string, def string) WantAssoc {
	return WantAssoc{QOS: splitList(strings.Join(qos, ",")), DefaultQOS: strings.ToLower(def)}
}

// BuildDesired computes the desired accounts and associations from the
// snapshot. resolve is called once per mapped user (nil: no check).
func BuildDesired(cfg Config, c *snapshot.Contents, resolve Resolver) (*Desired, error) {
	var pat *regexp.Regexp
	if cfg.GroupPattern != "" {
		var err error
		if pat, err = regexp.Compile(cfg.GroupPattern); err != nil {
			return nil, fmt.Errorf("slurm: group_pattern %q: %w", cfg.GroupPattern, err)
		}
	}
	d := &Desired{Accounts: map[string]*WantAccount{}, Users: map[string]*WantUser{}, Known: map[string]bool{}, UIDs: map[string]uint32{}, Disabled: map[string]bool{}, Frozen: map[string]string{}, Protected: map[string]bool{}, QOSDefs: map[string]map[string]string{}}
	for name, settings := range cfg.QOSSettings {
		d.QOSDefs[strings.ToLower(name)], _ = parseQOSSettings(settings) // checked by Config.Check
	}
	users := map[string]snapshot.User{}
	for _, u := range c.Users {
		users[u.Name] = u
		d.Known[strings.ToLower(u.Name)] = true
		d.UIDs[strings.ToLower(u.Name)] = u.UID
		if !u.Active {
			d.Disabled[strings.ToLower(u.Name)] = true
		}
	}
	landing := strings.ToLower(cfg.DefaultAccount)

	groups := append([]snapshot.Group(nil), c.Groups...)
	sort.Slice(groups, func(i, j int) bool { return groups[i].Name < groups[j].Name })
	// Which group maps where. An explicit mapping ([slurm.groups.NAME])
	// wins over group_pattern: a pattern group that lands on an account
	// the config maps explicitly is ignored. Two pattern groups landing on
	// one account (hpc-ML and hpc-ml, hpc-a.b and hpc-a_b) are a conflict:
	// neither is mapped, the account is frozen (nothing added or removed
	// there) until one is renamed, and the plan says so.
	explicitAcct := cfg.explicitAccounts()
	type mapped struct {
		group string
		m     groupMapping
	}
	byAccount := map[string][]mapped{}
	for _, g := range groups {
		m, explicit, ok := cfg.mapGroup(g.Name, pat)
		if !ok {
			continue
		}
		if m.account == landing {
			d.Notes = append(d.Notes, fmt.Sprintf("group %q maps to the landing account %q; its members land there only", g.Name, landing))
			continue
		}
		if !explicit {
			if from, ok := explicitAcct[m.account]; ok {
				d.Conflicts = append(d.Conflicts, fmt.Sprintf("group %q matches group_pattern and would map to account %q, which the config maps explicitly from %s: %q is ignored (an explicit mapping wins; rename the group or change the pattern)",
					g.Name, m.account, quoteList(from), g.Name))
				continue
			}
		}
		byAccount[m.account] = append(byAccount[m.account], mapped{g.Name, m})
	}
	members := map[string][]string{}
	for _, g := range groups {
		members[g.Name] = g.Members
	}
	for _, acct := range slices.Sorted(maps.Keys(byAccount)) {
		ms := byAccount[acct]
		var pattern []string
		for _, x := range ms {
			if _, explicit := cfg.Groups[x.group]; !explicit {
				pattern = append(pattern, x.group)
			}
		}
		if len(pattern) > 1 {
			d.Frozen[acct] = fmt.Sprintf("groups %s all map to account %q through group_pattern", quoteList(pattern), acct)
			d.Conflicts = append(d.Conflicts, fmt.Sprintf("%s: refused; account %s is left as it is (nothing added or removed) until all but one are renamed, or one is mapped explicitly in [slurm.groups]",
				d.Frozen[acct], acct))
			for _, g := range pattern {
				for _, member := range members[g] {
					d.Protected[strings.ToLower(member)] = true
				}
			}
			continue
		}
		m := ms[0].m
		a := &WantAccount{Name: acct, Limits: m.limits}
		d.Accounts[acct] = a
		if m.projectQOS != "" {
			d.QOSDefs[m.projectQOS] = cfg.projectQOSSettings(m.gpus)
		}
		for _, x := range ms {
			a.Groups = append(a.Groups, x.group)
			for _, member := range members[x.group] {
				su, ok := users[member]
				if !ok {
					continue
				}
				name := strings.ToLower(member)
				wu, ok := d.Users[name]
				if !ok {
					wu = &WantUser{Name: name, Assocs: map[string]WantAssoc{}, Active: su.Active}
					d.Users[name] = wu
				}
				wu.Assocs[acct] = m.assoc
			}
		}
	}
	if landing != "" && len(d.Users) > 0 {
		lm, _ := parseLimits(cfg.DefaultAccountLimits)
		d.Accounts[landing] = &WantAccount{Name: landing, Limits: lm, Landing: true}
	}
	qos := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(d.Users)) {
		wu := d.Users[name]
		if landing != "" {
			wu.Assocs[landing] = wantAssoc(cfg.QOS, cfg.DefaultQOS)
			wu.Default = landing
		} else {
			wu.Default = slices.Sorted(maps.Keys(wu.Assocs))[0]
		}
		for _, a := range wu.Assocs {
			for _, q := range a.QOS {
				qos[q] = true
			}
		}
		if resolve == nil {
			continue
		}
		su := users[lookupName(users, name)]
		uid, ok := resolve(su.Name)
		switch {
		case !ok:
			wu.Held = true
			d.Notes = append(d.Notes, fmt.Sprintf("user %s does not resolve on this host yet (getpwnam); not adding associations", name))
		case uid != su.UID:
			wu.Held = true
			d.Notes = append(d.Notes, fmt.Sprintf("user %s resolves to uid %d on this host, but SCIM says %d (a local account shadows it?); not adding associations", name, uid, su.UID))
		}
	}
	d.QOS = slices.Sorted(maps.Keys(qos))
	return d, nil
}

// lookupName finds the snapshot spelling of a lowercased name.
func lookupName(users map[string]snapshot.User, lower string) string {
	if _, ok := users[lower]; ok {
		return lower
	}
	for n := range users {
		if strings.ToLower(n) == lower {
			return n
		}
	}
	return lower
}

func sameAssoc(a, b WantAssoc) bool {
	return strings.Join(a.QOS, ",") == strings.Join(b.QOS, ",") && a.DefaultQOS == b.DefaultQOS
}

func sameMap(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
