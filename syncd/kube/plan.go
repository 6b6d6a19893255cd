package kube

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Names, labels and annotations scimbridge puts on what it creates.
const (
	// ObjectName is the name of the RoleBinding and of the ResourceQuota
	// in each managed namespace.
	ObjectName = "scimbridge"
	// LabelManagedBy=ManagedByValue marks what scimbridge created and
	// owns; nothing without it is ever changed or removed.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedByValue = "scimbridge"
	// AnnoGroup and AnnoGroupID name the SCIM group a namespace serves
	// (annotations: a group name need not be a valid label value).
	AnnoGroup   = "scimbridge.io/group"
	AnnoGroupID = "scimbridge.io/group-id"
	// AnnoApplied is a digest of the spec scimbridge last wrote: an
	// object whose spec no longer matches it was edited outside
	// scimbridge (drift).
	AnnoApplied = "scimbridge.io/applied"
	// AnnoHandsOff = "true" on a managed namespace leaves it and all in
	// it alone; on a RoleBinding or ResourceQuota, that object alone.
	// Differences are still reported.
	AnnoHandsOff = "scimbridge.io/hands-off"
)

// Subject is one RoleBinding subject.
type Subject struct {
	Kind string // Group or User
	Name string
}

// Binding is a RoleBinding as the pass sees it.
type Binding struct {
	Role     string
	Subjects []Subject
	HandsOff bool
	Applied  string
	Version  string // resourceVersion, for updates
}

// QuotaObj is a ResourceQuota as the pass sees it.
type QuotaObj struct {
	Hard     map[string]string
	HandsOff bool
	Applied  string
	Version  string
}

// Namespace is one namespace as the pass sees it.
type Namespace struct {
	Name        string
	Managed     bool
	HandsOff    bool
	Terminating bool
	Group       string
	GroupID     string
	Version     string
	Binding     *Binding  // scimbridge's RoleBinding, if any
	Quota       *QuotaObj // scimbridge's ResourceQuota, if any
}

// Observed is the cluster as the pass read it: every namespace, with
// scimbridge's objects in the managed ones.
type Observed struct {
	Namespaces map[string]*Namespace
}

// Change is one write.
type Change struct {
	Action    string // create, update, delete, recreate
	Kind      string // Namespace, RoleBinding, ResourceQuota
	Namespace string
	Reason    string
	// Drift: the object was edited outside scimbridge.
	Drift bool
	// What to write (create/update/recreate).
	Group, GroupID string
	Role           string
	Subjects       []Subject
	Hard           map[string]string
	Version        string
}

// Plan is one pass's writes, in order, and what it left alone and why.
type Plan struct {
	Changes []Change
	Notes   []string
	// Managed counts the namespaces scimbridge owns (before the plan).
	Managed int
}

// Empty reports whether the plan writes nothing.
func (p *Plan) Empty() bool { return len(p.Changes) == 0 }

// DriftCount counts the changes that undo edits made outside scimbridge.
func (p *Plan) DriftCount() int {
	n := 0
	for _, c := range p.Changes {
		if c.Drift {
			n++
		}
	}
	return n
}

func (p *Plan) String() string {
	var b strings.Builder
	for _, n := range p.Notes {
		fmt.Fprintf(&b, "# %s\n", n)
	}
	for _, c := range p.Changes {
		name := c.Namespace
		if o := objName(c); o != "" {
			name += "/" + o
		}
		fmt.Fprintf(&b, "%-8s %-13s %s  # %s\n", c.Action, c.Kind, name, c.Reason)
	}
	if p.Empty() {
		fmt.Fprintf(&b, "# nothing to change (%d namespace(s) managed)\n", p.Managed)
	}
	return b.String()
}

func objName(c Change) string {
	if c.Kind == "Namespace" {
		return ""
	}
	return ObjectName
}

// subjectsFor is the RoleBinding's subjects for w: the group as the API
// server names it (groups_prefix + name), then the members as users.
func subjectsFor(cfg Config, w *Want) []Subject {
	s := []Subject{{Kind: "Group", Name: cfg.GroupsPrefix + w.Group}}
	for _, u := range w.Users {
		s = append(s, Subject{Kind: "User", Name: cfg.UsersPrefix + u})
	}
	return s
}

// bindingDigest and quotaDigest are the AnnoApplied values: what the
// spec was when scimbridge wrote it, in canonical form.
func bindingDigest(role string, subjects []Subject) string {
	h := sha256.New()
	fmt.Fprintf(h, "role=%s\n", role)
	for _, s := range subjects {
		fmt.Fprintf(h, "%s=%s\n", s.Kind, s.Name)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func quotaDigest(hard map[string]string) string {
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(hard)) {
		fmt.Fprintf(h, "%s=%s\n", k, canonQty(hard[k]))
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// canonQty is a quantity in the form the API server stores ("1000m" is
// "1"); unparsable values stay as they are (and differ).
func canonQty(v string) string {
	q, err := resource.ParseQuantity(v)
	if err != nil {
		return v
	}
	return q.String()
}

func sameHard(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || canonQty(v) != canonQty(w) {
			return false
		}
	}
	return true
}

func sameSubjects(a, b []Subject) bool {
	if len(a) != len(b) {
		return false
	}
	as, bs := sortedSubjects(a), sortedSubjects(b)
	for i := range as {
		if as[i] != bs[i] {
			return false
		}
	}
	return true
}

func sortedSubjects(s []Subject) []Subject {
	out := append([]Subject(nil), s...)
	sort.Slice(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind < out[j].Kind
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// zeroHard is the quota of a namespace whose group is gone: every
// resource the quota limits, and pods, at 0 (running pods stay; nothing
// new is admitted).
func zeroHard(cur map[string]string) map[string]string {
	z := map[string]string{"pods": "0"}
	for k := range cur {
		z[k] = "0"
	}
	return z
}

// MakePlan compares what the snapshot asks for with the cluster. It is a
// pure function: `syncd kubernetes plan` prints it, apply runs it.
func MakePlan(cfg Config, d *Desired, o *Observed) *Plan {
	p := &Plan{}
	p.Notes = append(p.Notes, d.Conflicts...)
	p.Notes = append(p.Notes, d.Refused...)
	for _, ns := range o.Namespaces {
		if ns.Managed {
			p.Managed++
		}
	}
	want := followRenames(d, o, p)
	names := map[string]bool{}
	for n := range want {
		names[n] = true
	}
	for n, ns := range o.Namespaces {
		if ns.Managed {
			names[n] = true
		}
	}
	for _, n := range slices.Sorted(maps.Keys(names)) {
		w, ns := want[n], o.Namespaces[n]
		switch {
		case d.Frozen[n] != "":
			p.Notes = append(p.Notes, fmt.Sprintf("namespace %s: left as it is (%s)", n, d.Frozen[n]))
		case ns != nil && !ns.Managed:
			p.Notes = append(p.Notes, fmt.Sprintf("namespace %s exists and was not created by scimbridge: group %q gets nothing there (label it %s=%s to hand it over, or map the group to another namespace)",
				n, w.Group, LabelManagedBy, ManagedByValue))
		case ns != nil && ns.Terminating:
			p.Notes = append(p.Notes, fmt.Sprintf("namespace %s is being deleted; the next pass acts once it is gone", n))
		case w != nil && ns == nil:
			how := "group_pattern"
			if w.Explicit {
				how = "[kubernetes.groups]"
			}
			p.add(Change{Action: "create", Kind: "Namespace", Namespace: n, Group: w.Group, GroupID: w.GroupID,
				Reason: fmt.Sprintf("source: group %q is mapped (%s) and has no namespace", w.Group, how)})
			p.wantBinding(cfg, n, w, nil, false)
			p.wantQuota(n, w.Hard, nil, false, fmt.Sprintf("group %q", w.Group))
		case w != nil:
			p.keep(cfg, n, w, ns)
		default:
			p.removed(cfg, d, ns)
		}
	}
	return p
}

func (p *Plan) add(c Change) { p.Changes = append(p.Changes, c) }

// followRenames keys the wanted namespaces by where they will be: a group
// renamed at the source (same SCIM id) keeps the namespace it has, since
// Kubernetes cannot rename a namespace and its data is in it — unless the
// config names the namespace.
func followRenames(d *Desired, o *Observed, p *Plan) map[string]*Want {
	byID := map[string]*Namespace{}
	for _, ns := range o.Namespaces {
		if ns.Managed && ns.GroupID != "" && !ns.Terminating {
			byID[ns.GroupID] = ns
		}
	}
	want := map[string]*Want{}
	for n, w := range d.Namespaces {
		old := byID[w.GroupID]
		if w.GroupID != "" && old != nil && old.Name != n && !w.NamedByConfig && d.Namespaces[old.Name] == nil && o.Namespaces[n] == nil {
			p.Notes = append(p.Notes, fmt.Sprintf("group %q (was %q, same SCIM id) keeps namespace %s; its name would now be %s, but a namespace cannot be renamed",
				w.Group, old.Group, old.Name, n))
			cp := *w
			cp.Namespace = old.Name
			want[old.Name] = &cp
			continue
		}
		want[n] = w
	}
	return want
}

// keep converges a managed namespace whose group is still mapped.
func (p *Plan) keep(cfg Config, n string, w *Want, ns *Namespace) {
	if ns.HandsOff {
		var diffs []string
		if ns.Binding == nil || ns.Binding.Role != w.ClusterRole || !sameSubjects(ns.Binding.Subjects, subjectsFor(cfg, w)) {
			diffs = append(diffs, "RoleBinding")
		}
		if ns.Quota == nil || !sameHard(ns.Quota.Hard, w.Hard) {
			diffs = append(diffs, "ResourceQuota")
		}
		if len(diffs) > 0 {
			p.Notes = append(p.Notes, fmt.Sprintf("namespace %s is hands-off (%s): its %s differ from what group %q would get; left alone",
				n, AnnoHandsOff, strings.Join(diffs, " and "), w.Group))
		}
		return
	}
	if ns.Group != w.Group || ns.GroupID != w.GroupID {
		p.add(Change{Action: "update", Kind: "Namespace", Namespace: n, Group: w.Group, GroupID: w.GroupID, Version: ns.Version,
			Reason: fmt.Sprintf("source: serves group %q (was %q)", w.Group, ns.Group)})
	}
	p.wantBinding(cfg, n, w, ns.Binding, true)
	p.wantQuota(n, w.Hard, ns.Quota, true, fmt.Sprintf("group %q", w.Group))
}

func (p *Plan) wantBinding(cfg Config, n string, w *Want, b *Binding, nsExists bool) {
	subj := subjectsFor(cfg, w)
	c := Change{Kind: "RoleBinding", Namespace: n, Role: w.ClusterRole, Subjects: subj, Group: w.Group}
	switch {
	case b == nil:
		c.Action = "create"
		c.Reason = fmt.Sprintf("source: ClusterRole %s for group %q", w.ClusterRole, w.Group)
		if nsExists {
			c.Reason = fmt.Sprintf("missing (deleted outside scimbridge, or never made): ClusterRole %s for group %q", w.ClusterRole, w.Group)
		}
	case b.Role == w.ClusterRole && sameSubjects(b.Subjects, subj):
		return
	case b.HandsOff:
		p.Notes = append(p.Notes, fmt.Sprintf("RoleBinding %s/%s is hands-off (%s): it differs from what group %q would get; left alone", n, ObjectName, AnnoHandsOff, w.Group))
		return
	default:
		c.Action, c.Version = "update", b.Version
		if b.Role != w.ClusterRole {
			c.Action = "recreate" // roleRef cannot be changed in place
		}
		c.Drift = b.Applied != bindingDigest(b.Role, b.Subjects)
		c.Reason = bindingDiff(b, w.ClusterRole, subj, c.Drift)
	}
	p.add(c)
}

func bindingDiff(b *Binding, role string, subj []Subject, drift bool) string {
	var parts []string
	if b.Role != role {
		parts = append(parts, fmt.Sprintf("role %s -> %s", b.Role, role))
	}
	have := map[Subject]bool{}
	for _, s := range b.Subjects {
		have[s] = true
	}
	want := map[Subject]bool{}
	var add, del []string
	for _, s := range subj {
		want[s] = true
		if !have[s] {
			add = append(add, s.Kind+":"+s.Name)
		}
	}
	for _, s := range sortedSubjects(b.Subjects) {
		if !want[s] {
			del = append(del, s.Kind+":"+s.Name)
		}
	}
	if len(add) > 0 {
		parts = append(parts, "add "+strings.Join(add, ", "))
	}
	if len(del) > 0 {
		parts = append(parts, "remove "+strings.Join(del, ", "))
	}
	if drift {
		return "drift: edited outside scimbridge: " + strings.Join(parts, "; ")
	}
	return "source/config: " + strings.Join(parts, "; ")
}

func (p *Plan) wantQuota(n string, hard map[string]string, q *QuotaObj, nsExists bool, who string) {
	c := Change{Kind: "ResourceQuota", Namespace: n, Hard: hard}
	switch {
	case q == nil:
		c.Action = "create"
		c.Reason = fmt.Sprintf("config: quota of %s: %s", who, fmtHard(hard))
		if nsExists {
			c.Reason = "missing (deleted outside scimbridge, or never made): " + fmtHard(hard)
		}
	case sameHard(q.Hard, hard):
		return
	case q.HandsOff:
		p.Notes = append(p.Notes, fmt.Sprintf("ResourceQuota %s/%s is hands-off (%s): %s would be %s; left alone", n, ObjectName, AnnoHandsOff, fmtHard(q.Hard), fmtHard(hard)))
		return
	default:
		c.Action, c.Version = "update", q.Version
		c.Drift = q.Applied != quotaDigest(q.Hard)
		if c.Drift {
			c.Reason = fmt.Sprintf("drift: edited outside scimbridge: %s -> %s", fmtHard(q.Hard), fmtHard(hard))
		} else {
			c.Reason = fmt.Sprintf("config: quota of %s: %s -> %s", who, fmtHard(q.Hard), fmtHard(hard))
		}
	}
	p.add(c)
}

func fmtHard(h map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(h)) {
		parts = append(parts, k+"="+canonQty(h[k]))
	}
	return strings.Join(parts, ",")
}

// removed handles a managed namespace no mapped group wants.
func (p *Plan) removed(cfg Config, d *Desired, ns *Namespace) {
	why := fmt.Sprintf("source: group %q is gone from the directory", ns.Group)
	if d.InDirectory[ns.Group] {
		why = fmt.Sprintf("config: group %q is no longer mapped", ns.Group)
	}
	if ns.HandsOff {
		if ns.Binding != nil || (ns.Quota != nil && !sameHard(ns.Quota.Hard, zeroHard(ns.Quota.Hard))) {
			p.Notes = append(p.Notes, fmt.Sprintf("namespace %s is hands-off (%s); %s, but its RoleBinding and quota are left alone", ns.Name, AnnoHandsOff, why))
		}
		return
	}
	if cfg.OnGroupRemoved == "delete" {
		p.add(Change{Action: "delete", Kind: "Namespace", Namespace: ns.Name, Version: ns.Version,
			Reason: why + "; on_group_removed = \"delete\" deletes the namespace and everything in it"})
		return
	}
	if ns.Binding != nil {
		if ns.Binding.HandsOff {
			p.Notes = append(p.Notes, fmt.Sprintf("RoleBinding %s/%s is hands-off; %s, but it stays", ns.Name, ObjectName, why))
		} else {
			p.add(Change{Action: "delete", Kind: "RoleBinding", Namespace: ns.Name, Version: ns.Binding.Version,
				Reason: why + "; the namespace and its data stay (on_group_removed = \"keep\")"})
		}
	}
	var cur map[string]string
	if ns.Quota != nil {
		cur = ns.Quota.Hard
	}
	p.wantQuota(ns.Name, zeroHard(cur), ns.Quota, true, "a namespace whose group is gone ("+why+")")
}
