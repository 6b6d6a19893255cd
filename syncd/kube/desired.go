package kube

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"

	"github.com/scimbridge/scimbridge/syncd/snapshot"
)

// Want is one namespace a mapped group should have.
type Want struct {
	Namespace string
	Group     string // SCIM group name
	GroupID   string // SCIM id: the namespace follows it across renames
	Explicit  bool
	// NamedByConfig: the config names the namespace (groups.X.namespace),
	// so a rename does not keep the old one.
	NamedByConfig bool
	ClusterRole   string
	// Users are the group's active members (bind_members), sorted.
	Users []string
	// Hard is the ResourceQuota's spec.hard.
	Hard map[string]string
}

// Desired is what the snapshot and the config ask for.
type Desired struct {
	Namespaces map[string]*Want
	// Refused are mapped groups whose namespace name is not allowed, with
	// the reason; Conflicts are mappings refused because two groups land
	// on one namespace. Frozen are the namespaces conflicts leave alone.
	Refused   []string
	Conflicts []string
	Frozen    map[string]string
	// InDirectory are the snapshot's group names, to tell a group that
	// left the config from one that left the directory.
	InDirectory map[string]bool
}

// mapGroup returns the namespace group g maps to and whether the mapping
// is explicit, or ok=false.
func (c *Config) mapGroup(g string, pat *regexp.Regexp) (ns string, explicit, ok bool) {
	gc, explicit := c.Groups[g]
	switch {
	case explicit && gc.Namespace != "":
		return gc.Namespace, true, true
	case explicit:
		ns = Normalize(c.NamespacePrefix + g)
	case pat != nil:
		sub := pat.FindStringSubmatch(g)
		if sub == nil {
			return "", false, false
		}
		base := sub[0]
		if len(sub) > 1 {
			base = sub[1]
		}
		ns = Normalize(c.NamespacePrefix + base)
	default:
		return "", false, false
	}
	return ns, explicit, true
}

// BuildDesired maps the snapshot's groups (cfg after WithDefaults and
// Check). A pattern group landing on an explicitly mapped namespace is
// ignored (CONFLICT); two pattern groups landing on one namespace are
// both left unmapped and the namespace is frozen until one is renamed or
// mapped explicitly.
func BuildDesired(cfg Config, contents *snapshot.Contents) *Desired {
	d := &Desired{Namespaces: map[string]*Want{}, Frozen: map[string]string{}, InDirectory: map[string]bool{}}
	var pat *regexp.Regexp
	if cfg.GroupPattern != "" {
		pat = regexp.MustCompile(cfg.GroupPattern)
	}
	active := map[string]bool{}
	for _, u := range contents.Users {
		if u.Active {
			active[u.Name] = true
		}
	}
	groups := append([]snapshot.Group(nil), contents.Groups...)
	sort.Slice(groups, func(i, j int) bool { return groups[i].Name < groups[j].Name })
	claims := map[string][]string{} // namespace -> pattern groups
	for _, g := range groups {
		d.InDirectory[g.Name] = true
		ns, explicit, ok := cfg.mapGroup(g.Name, pat)
		if !ok {
			continue
		}
		if ns == "" {
			d.Refused = append(d.Refused, fmt.Sprintf("group %q: nothing of its name is usable as a namespace name (a-z, 0-9, -); map it explicitly with [kubernetes.groups.%q] namespace = ...", g.Name, g.Name))
			continue
		}
		if why := namespaceWhy(ns, cfg.ReservedPrefixes); why != "" {
			d.Refused = append(d.Refused, fmt.Sprintf("group %q: namespace %q refused: %s", g.Name, ns, why))
			continue
		}
		gc := cfg.Groups[g.Name]
		w := &Want{Namespace: ns, Group: g.Name, GroupID: g.SCIMID, Explicit: explicit,
			NamedByConfig: explicit && gc.Namespace != "", ClusterRole: cfg.ClusterRole,
			Hard: gc.Quota.over(cfg.Quota).hard(cfg.GPUResource)}
		if explicit && gc.ClusterRole != "" {
			w.ClusterRole = gc.ClusterRole
		}
		if cfg.BindMembers {
			for _, m := range g.Members {
				if active[m] {
					w.Users = append(w.Users, m)
				}
			}
			sort.Strings(w.Users)
		}
		if explicit {
			d.Namespaces[ns] = w
		} else {
			claims[ns] = append(claims[ns], g.Name)
			if len(claims[ns]) == 1 {
				d.Namespaces["\x00"+ns] = w // pattern candidates, settled below
			}
		}
	}
	for _, ns := range slices.Sorted(maps.Keys(claims)) {
		gs := claims[ns]
		w := d.Namespaces["\x00"+ns]
		delete(d.Namespaces, "\x00"+ns)
		switch {
		case d.Namespaces[ns] != nil:
			d.Conflicts = append(d.Conflicts, fmt.Sprintf("CONFLICT: pattern groups %q map to namespace %q, which [kubernetes.groups.%q] maps explicitly; they are ignored",
				gs, ns, d.Namespaces[ns].Group))
		case len(gs) > 1:
			d.Conflicts = append(d.Conflicts, fmt.Sprintf("CONFLICT: groups %q all map to namespace %q; none is mapped and the namespace is left as it is until one is renamed or mapped explicitly", gs, ns))
			d.Frozen[ns] = fmt.Sprintf("groups %q conflict", gs)
		default:
			d.Namespaces[ns] = w
		}
	}
	return d
}

// Reach is one namespace a user's groups give, and whether the cluster
// has it that way.
type Reach struct {
	Namespace string `json:"namespace"`
	Group     string `json:"group"`
	Role      string `json:"cluster_role"`
	// State: "bound" (the RoleBinding names the group), or why not.
	State string `json:"state"`
}

// NamespacesOf returns the namespaces user reaches through the groups the
// config maps. With o (the cluster as read) each says whether it is so
// there; without, what the next pass would make.
func NamespacesOf(cfg Config, contents *snapshot.Contents, o *Observed, user string) []Reach {
	cfg = cfg.WithDefaults()
	d := BuildDesired(cfg, contents)
	want := d.Namespaces
	if o != nil {
		want = followRenames(d, o, &Plan{})
	}
	member := map[string]bool{}
	for _, g := range contents.Groups {
		for _, m := range g.Members {
			if m == user {
				member[g.Name] = true
			}
		}
	}
	var out []Reach
	for _, ns := range slices.Sorted(maps.Keys(want)) {
		w := want[ns]
		if !member[w.Group] {
			continue
		}
		r := Reach{Namespace: ns, Group: w.Group, Role: w.ClusterRole, State: "as configured (cluster not read)"}
		if o != nil {
			r.State = reachState(cfg, w, o.Namespaces[ns])
		}
		out = append(out, r)
	}
	return out
}

func reachState(cfg Config, w *Want, ns *Namespace) string {
	switch {
	case ns == nil:
		return "not made yet (next pass)"
	case !ns.Managed:
		return "none: the namespace exists and was not created by scimbridge"
	case ns.Binding == nil:
		return "none: no RoleBinding (next pass, or hands-off)"
	}
	for _, s := range ns.Binding.Subjects {
		if s.Kind == "Group" && s.Name == cfg.GroupsPrefix+w.Group {
			return "bound"
		}
	}
	return "none: the RoleBinding does not name the group yet (next pass, or hands-off)"
}
