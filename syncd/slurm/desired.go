package slurm

import (
	"fmt"
	"os/user"
	"regexp"
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
	// QOS every association asks for, for creating missing ones.
	QOS   []string
	Notes []string
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
}

// mapGroup returns the account group g maps to, or ok=false.
func (c *Config) mapGroup(g string, pat *regexp.Regexp) (groupMapping, bool) {
	gc, explicit := c.Groups[g]
	var name string
	switch {
	case explicit && gc.Account != "":
		name = strings.ToLower(gc.Account)
	case explicit:
		name = Normalize(c.AccountPrefix + g)
	case pat != nil:
		m := pat.FindStringSubmatch(g)
		if m == nil {
			return groupMapping{}, false
		}
		base := m[0]
		if len(m) > 1 {
			base = m[1]
		}
		name = Normalize(c.AccountPrefix + base)
	default:
		return groupMapping{}, false
	}
	if name == "" {
		return groupMapping{}, false
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
	return groupMapping{account: name, assoc: wantAssoc(qos, def), limits: lm}, true
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
	d := &Desired{Accounts: map[string]*WantAccount{}, Users: map[string]*WantUser{}, Known: map[string]bool{}, UIDs: map[string]uint32{}}
	users := map[string]snapshot.User{}
	for _, u := range c.Users {
		users[u.Name] = u
		d.Known[strings.ToLower(u.Name)] = true
		d.UIDs[strings.ToLower(u.Name)] = u.UID
	}
	landing := strings.ToLower(cfg.DefaultAccount)

	groups := append([]snapshot.Group(nil), c.Groups...)
	sort.Slice(groups, func(i, j int) bool { return groups[i].Name < groups[j].Name })
	settings := map[string]groupMapping{} // by account: the first group's settings win
	for _, g := range groups {
		m, ok := cfg.mapGroup(g.Name, pat)
		if !ok {
			continue
		}
		if m.account == landing {
			d.Notes = append(d.Notes, fmt.Sprintf("group %q maps to the landing account %q; its members land there only", g.Name, landing))
			continue
		}
		if prev, ok := settings[m.account]; ok {
			if !sameAssoc(prev.assoc, m.assoc) || !sameMap(prev.limits, m.limits) {
				d.Notes = append(d.Notes, fmt.Sprintf("groups %v and %q both map to account %q with different settings; the first one's apply",
					d.Accounts[m.account].Groups, g.Name, m.account))
			}
			m = prev
		} else {
			settings[m.account] = m
			d.Accounts[m.account] = &WantAccount{Name: m.account, Limits: m.limits}
		}
		a := d.Accounts[m.account]
		a.Groups = append(a.Groups, g.Name)
		for _, member := range g.Members {
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
			wu.Assocs[m.account] = m.assoc
		}
	}
	if landing != "" && len(d.Users) > 0 {
		lm, _ := parseLimits(cfg.DefaultAccountLimits)
		d.Accounts[landing] = &WantAccount{Name: landing, Limits: lm, Landing: true}
	}
	qos := map[string]bool{}
	for _, name := range sortedKeys(d.Users) {
		wu := d.Users[name]
		if landing != "" {
			wu.Assocs[landing] = wantAssoc(cfg.QOS, cfg.DefaultQOS)
			wu.Default = landing
		} else {
			wu.Default = sortedKeys(wu.Assocs)[0]
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
	d.QOS = sortedKeys(qos)
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
