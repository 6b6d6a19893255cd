package kube

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/scimbridge/scimbridge/syncd/snapshot"
)

func testConfig() Config {
	c := Config{GroupPattern: "^k8s-(.+)$", GroupsPrefix: "oidc:", UsersPrefix: "oidc:", BindMembers: true,
		Quota:  Quota{GPUs: "2", CPU: "8"},
		Groups: map[string]GroupConfig{"vision": {Namespace: "cv", Quota: Quota{GPUs: "4"}, ClusterRole: "admin"}}}
	return c.WithDefaults()
}

func testContents() *snapshot.Contents {
	return &snapshot.Contents{
		Users: []snapshot.User{{Name: "alice", Active: true}, {Name: "bob", Active: true}, {Name: "dave", Active: false}},
		Groups: []snapshot.Group{
			{Name: "k8s-ml", SCIMID: "g1", Members: []string{"bob", "alice", "dave"}},
			{Name: "vision", SCIMID: "g2", Members: []string{"bob"}},
			{Name: "k8s-kube-system", SCIMID: "g3", Members: []string{"alice"}},
			{Name: "k8s-default", SCIMID: "g4", Members: []string{"alice"}},
			{Name: "k8s-a.b", SCIMID: "g5"},
			{Name: "k8s-a_b", SCIMID: "g6"},
			{Name: "k8s-_", SCIMID: "g7"},
			{Name: "other", SCIMID: "g8", Members: []string{"alice"}},
		},
	}
}

func TestNormalizeAndRefuse(t *testing.T) {
	for in, want := range map[string]string{
		"ML_Team": "ml-team", "a..b": "a-b", "-x-": "x", "___": "", strings.Repeat("a", 70): strings.Repeat("a", 63),
		strings.Repeat("a", 62) + "_b": strings.Repeat("a", 62),
	} {
		if got := Normalize(in); got != want {
			t.Errorf("Normalize(%q) = %q, want %q", in, got, want)
		}
	}
	for _, n := range []string{"default", "kube-system", "kube-public", "kube-node-lease", "kube-x", "Bad", "a_b", "", strings.Repeat("a", 64), "ops-x"} {
		if namespaceWhy(n, []string{"ops-"}) == "" {
			t.Errorf("namespace %q accepted", n)
		}
	}
	for _, n := range []string{"ml", "kubeflow", "defaults", "a-1"} {
		if why := namespaceWhy(n, []string{"ops-"}); why != "" {
			t.Errorf("namespace %q refused: %s", n, why)
		}
	}
}

func TestBuildDesired(t *testing.T) {
	d := BuildDesired(testConfig(), testContents())
	var got []string
	for _, n := range slices.Sorted(maps.Keys(d.Namespaces)) {
		w := d.Namespaces[n]
		got = append(got, n+"="+w.Group+":"+w.ClusterRole+":"+strings.Join(w.Users, ",")+":"+fmtHard(w.Hard))
	}
	want := []string{
		"cv=vision:admin:bob:pods=100,requests.cpu=8,requests.nvidia.com/gpu=4",
		"ml=k8s-ml:edit:alice,bob:pods=100,requests.cpu=8,requests.nvidia.com/gpu=2",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("namespaces:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	refused := strings.Join(d.Refused, "\n")
	for _, s := range []string{`"k8s-kube-system": namespace "kube-system" refused`, `"k8s-default": namespace "default" refused`, `group "k8s-_": nothing`} {
		if !strings.Contains(refused, s) {
			t.Errorf("refusals lack %q:\n%s", s, refused)
		}
	}
	if d.Frozen["a-b"] == "" || len(d.Conflicts) != 1 {
		t.Errorf("k8s-a.b and k8s-a_b should conflict on a-b: %v %v", d.Frozen, d.Conflicts)
	}
}

// apply plays a plan onto o the way the API server would store it.
func apply(cfg Config, o *Observed, p *Plan) {
	for _, c := range p.Changes {
		ns := o.Namespaces[c.Namespace]
		switch c.Kind + " " + c.Action {
		case "Namespace create":
			o.Namespaces[c.Namespace] = &Namespace{Name: c.Namespace, Managed: true, Group: c.Group, GroupID: c.GroupID}
		case "Namespace update":
			ns.Group, ns.GroupID = c.Group, c.GroupID
		case "Namespace delete":
			delete(o.Namespaces, c.Namespace)
		case "RoleBinding create", "RoleBinding update", "RoleBinding recreate":
			ns.Binding = &Binding{Role: c.Role, Subjects: c.Subjects, Applied: bindingDigest(c.Role, c.Subjects)}
		case "RoleBinding delete":
			ns.Binding = nil
		case "ResourceQuota create", "ResourceQuota update":
			ns.Quota = &QuotaObj{Hard: c.Hard, Applied: quotaDigest(c.Hard)}
		}
	}
}

func TestPlanConvergesDriftHandsOffRemoval(t *testing.T) {
	cfg, contents := testConfig(), testContents()
	o := &Observed{Namespaces: map[string]*Namespace{"default": {Name: "default"}, "kube-system": {Name: "kube-system"}}}
	p := MakePlan(cfg, BuildDesired(cfg, contents), o)
	if len(p.Changes) != 6 {
		t.Fatalf("first plan: want 6 changes (2 namespaces x 3), got:\n%s", p)
	}
	apply(cfg, o, p)
	if p2 := MakePlan(cfg, BuildDesired(cfg, contents), o); !p2.Empty() {
		t.Fatalf("second plan not empty:\n%s", p2)
	}
	// An admin edits the quota: drift, undone.
	o.Namespaces["ml"].Quota.Hard["requests.nvidia.com/gpu"] = "16"
	p = MakePlan(cfg, BuildDesired(cfg, contents), o)
	if len(p.Changes) != 1 || !p.Changes[0].Drift || !strings.HasPrefix(p.Changes[0].Reason, "drift:") {
		t.Fatalf("quota edited by hand: want one drift change, got:\n%s", p)
	}
	// A member added at the source: not drift.
	contents.Groups[0].Members = append(contents.Groups[0].Members, "erin")
	contents.Users = append(contents.Users, snapshot.User{Name: "erin", Active: true})
	p = MakePlan(cfg, BuildDesired(cfg, contents), o)
	var rb *Change
	for i := range p.Changes {
		if p.Changes[i].Kind == "RoleBinding" {
			rb = &p.Changes[i]
		}
	}
	if rb == nil || rb.Drift || !strings.Contains(rb.Reason, "add User:oidc:erin") {
		t.Fatalf("member added: want a non-drift binding update naming erin, got:\n%s", p)
	}
	apply(cfg, o, p)
	// Hands-off namespace: differences named, nothing changed.
	o.Namespaces["ml"].HandsOff = true
	o.Namespaces["ml"].Quota.Hard["pods"] = "1"
	p = MakePlan(cfg, BuildDesired(cfg, contents), o)
	if !p.Empty() || !strings.Contains(strings.Join(p.Notes, "\n"), "namespace ml is hands-off") {
		t.Fatalf("hands-off: want no change and a note, got:\n%s", p)
	}
	o.Namespaces["ml"].HandsOff = false
	o.Namespaces["ml"].Quota.Hard["pods"] = "100"
	// The group leaves the directory: binding deleted, quota to 0, namespace stays.
	contents.Groups = contents.Groups[1:]
	p = MakePlan(cfg, BuildDesired(cfg, contents), o)
	got := p.String()
	for _, s := range []string{"delete   RoleBinding   ml/scimbridge", "update   ResourceQuota ml/scimbridge", `group "k8s-ml" is gone from the directory`, "requests.nvidia.com/gpu=0"} {
		if !strings.Contains(got, s) {
			t.Errorf("removal plan lacks %q:\n%s", s, got)
		}
	}
	for _, c := range p.Changes {
		if c.Kind == "Namespace" {
			t.Errorf("removal touched the namespace: %+v", c)
		}
	}
	apply(cfg, o, p)
	if p2 := MakePlan(cfg, BuildDesired(cfg, contents), o); !p2.Empty() {
		t.Fatalf("after removal, plan not empty:\n%s", p2)
	}
	cfg.OnGroupRemoved = "delete"
	p = MakePlan(cfg, BuildDesired(cfg, contents), o)
	if len(p.Changes) != 1 || p.Changes[0].Kind != "Namespace" || p.Changes[0].Action != "delete" {
		t.Fatalf("on_group_removed=delete: want the namespace deleted, got:\n%s", p)
	}
}

func TestPlanRenameForeignAndRole(t *testing.T) {
	cfg, contents := testConfig(), testContents()
	o := &Observed{Namespaces: map[string]*Namespace{"cv": {Name: "cv"}}} // an admin's own namespace
	p := MakePlan(cfg, BuildDesired(cfg, contents), o)
	for _, c := range p.Changes {
		if c.Namespace == "cv" {
			t.Errorf("touched a namespace scimbridge did not create: %+v", c)
		}
	}
	if !strings.Contains(strings.Join(p.Notes, "\n"), "namespace cv exists and was not created by scimbridge") {
		t.Errorf("no note about the foreign namespace:\n%s", p)
	}
	apply(cfg, o, p)
	// Renamed at the source (same SCIM id): the namespace follows the id.
	contents.Groups[0].Name = "k8s-machine-learning"
	p = MakePlan(cfg, BuildDesired(cfg, contents), o)
	got := p.String()
	if !strings.Contains(got, `keeps namespace ml`) || strings.Contains(got, "create   Namespace") {
		t.Fatalf("rename: want namespace ml kept, got:\n%s", got)
	}
	if !strings.Contains(got, "add Group:oidc:k8s-machine-learning") || !strings.Contains(got, "remove Group:oidc:k8s-ml") {
		t.Errorf("rename: binding subject should follow the new name:\n%s", got)
	}
	apply(cfg, o, p)
	if p2 := MakePlan(cfg, BuildDesired(cfg, contents), o); !p2.Empty() {
		t.Fatalf("after rename, plan not empty:\n%s", p2)
	}
	// A new cluster_role: roleRef is immutable, so recreate.
	cfg.ClusterRole = "view"
	p = MakePlan(cfg, BuildDesired(cfg, contents), o)
	if len(p.Changes) != 1 || p.Changes[0].Action != "recreate" {
		t.Fatalf("role change: want one recreate, got:\n%s", p)
	}
}

func TestConfigCheck(t *testing.T) {
	bad := map[string]Config{
		"no groups mapped":          {},
		"kube- prefix":              {GroupPattern: ".", NamespacePrefix: "kube-"},
		"namespace \"default\"":     {Groups: map[string]GroupConfig{"x": {Namespace: "default"}}},
		"not a Kubernetes quantity": {GroupPattern: ".", Quota: Quota{GPUs: "lots"}},
		"on_group_removed":          {GroupPattern: ".", OnGroupRemoved: "purge"},
		"system:":                   {GroupPattern: ".", GroupsPrefix: "system:"},
		"both name namespace":       {Groups: map[string]GroupConfig{"a": {Namespace: "n"}, "b": {Namespace: "n"}}},
	}
	for want, c := range bad {
		err := c.WithDefaults().Check()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("config %+v: want an error containing %q, got %v", c, want, err)
		}
	}
	if err := testConfig().Check(); err != nil {
		t.Errorf("good config refused: %v", err)
	}
}

func TestRemovalGuard(t *testing.T) {
	p := &Plan{Managed: 10}
	for i := 0; i < 6; i++ {
		p.Changes = append(p.Changes, Change{Action: "delete", Kind: "RoleBinding"})
	}
	if err := removalGuard(p, false); err == nil {
		t.Error("6 of 10 bindings removed: guard did not stop it")
	}
	if err := removalGuard(p, true); err != nil {
		t.Errorf("forced: %v", err)
	}
}
