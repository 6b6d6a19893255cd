package kube

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Defaults.
const (
	DefaultClusterRole = "edit"
	DefaultGPUResource = "nvidia.com/gpu"
	DefaultGPUs        = "0"
	DefaultPods        = "100"
	DefaultTimeout     = "20s"
	// DefaultStateFileName is the pass's status file beside the snapshot.
	DefaultStateFileName = "kubernetes-state.json"
)

// Config is the [kubernetes] table of syncd.toml.
//
//	[kubernetes]
//	enabled          = true
//	kubeconfig       = "/etc/scimbridge/kubeconfig"   # empty: in-cluster service account
//	group_pattern    = "^k8s-(.+)$"                   # groups matching get a namespace (submatch 1, or all)
//	namespace_prefix = "team-"
//	cluster_role     = "edit"                          # bound to the group in its namespace
//	groups_prefix    = "oidc:"                         # --oidc-groups-prefix of the API server
//	bind_members     = false                           # also bind each active member as a user
//	users_prefix     = "oidc:"                         # --oidc-username-prefix
//	on_group_removed = "keep"                          # or "delete" (the namespace and all in it)
//	[kubernetes.quota]                                 # defaults of every namespace's ResourceQuota
//	gpus = "0"
//	cpu = "64"
//	memory = "256Gi"
//	pods = "100"
//	[kubernetes.groups.ml-team]                        # explicit mapping, keyed by SCIM group name
//	namespace = "ml"
//	quota = { gpus = "8" }
type Config struct {
	// Enabled turns the pass on in `syncd run` (after each commit and on
	// its own schedule). `syncd kubernetes plan|apply` work regardless.
	Enabled bool `toml:"enabled"`
	// Interval of the pass on its own schedule (Go duration; default
	// poll_interval).
	Interval string `toml:"interval"`
	// Timeout bounds every request to the API server (default 20s).
	Timeout string `toml:"timeout"`

	// Kubeconfig is the credentials file (0600, owned by root). Empty:
	// in-cluster (the pod's service account).
	Kubeconfig string `toml:"kubeconfig"`
	// Context picks a context of the kubeconfig (default: its current).
	Context string `toml:"context"`

	Groups          map[string]GroupConfig `toml:"groups"`
	GroupPattern    string                 `toml:"group_pattern"`
	NamespacePrefix string                 `toml:"namespace_prefix"`
	// ReservedPrefixes are namespace name prefixes never created, besides
	// kube- (Kubernetes' own) which is always refused.
	ReservedPrefixes []string `toml:"reserved_prefixes"`

	ClusterRole  string `toml:"cluster_role"`
	GroupsPrefix string `toml:"groups_prefix"`
	BindMembers  bool   `toml:"bind_members"`
	UsersPrefix  string `toml:"users_prefix"`

	// GPUResource is the extended resource the gpus quota limits
	// (requests.<GPUResource>).
	GPUResource string `toml:"gpu_resource"`
	Quota       Quota  `toml:"quota"`

	// OnGroupRemoved: "keep" (default: the namespace and its data stay,
	// the binding goes and the quota drops to 0) or "delete".
	OnGroupRemoved string `toml:"on_group_removed"`

	// StateFile is where the last pass is recorded for `syncd status`
	// (default: kubernetes-state.json beside cache_path).
	StateFile string `toml:"state_file"`
}

// GroupConfig maps one SCIM group explicitly.
type GroupConfig struct {
	Namespace   string `toml:"namespace"`
	ClusterRole string `toml:"cluster_role"`
	Quota       Quota  `toml:"quota"`
}

// Quota is a ResourceQuota's hard limits; "" leaves a resource unlimited
// (not in the quota). Quantities in Kubernetes notation ("8", "500m",
// "64Gi").
type Quota struct {
	GPUs   string `toml:"gpus"`
	CPU    string `toml:"cpu"`
	Memory string `toml:"memory"`
	Pods   string `toml:"pods"`
}

func (q Quota) over(d Quota) Quota {
	if q.GPUs == "" {
		q.GPUs = d.GPUs
	}
	if q.CPU == "" {
		q.CPU = d.CPU
	}
	if q.Memory == "" {
		q.Memory = d.Memory
	}
	if q.Pods == "" {
		q.Pods = d.Pods
	}
	return q
}

// hard is the ResourceQuota's spec.hard for q.
func (q Quota) hard(gpuResource string) map[string]string {
	h := map[string]string{}
	for k, v := range map[string]string{
		"requests." + gpuResource: q.GPUs, "requests.cpu": q.CPU,
		"requests.memory": q.Memory, "pods": q.Pods,
	} {
		if v != "" {
			h[k] = v
		}
	}
	return h
}

// WithDefaults returns a copy of c with defaults filled in.
func (c Config) WithDefaults() Config {
	if c.ClusterRole == "" {
		c.ClusterRole = DefaultClusterRole
	}
	if c.GPUResource == "" {
		c.GPUResource = DefaultGPUResource
	}
	c.Quota = c.Quota.over(Quota{GPUs: DefaultGPUs, Pods: DefaultPods})
	if c.OnGroupRemoved == "" {
		c.OnGroupRemoved = "keep"
	}
	if c.Timeout == "" {
		c.Timeout = DefaultTimeout
	}
	return c
}

// timeout is c.Timeout parsed (Check has refused a bad one).
func (c Config) timeout() time.Duration {
	d, err := time.ParseDuration(c.Timeout)
	if err != nil || d <= 0 {
		d = 20 * time.Second
	}
	return d
}

// Check reports every problem in c (after WithDefaults).
func (c Config) Check() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("kubernetes: "+format, a...)) }
	if len(c.Groups) == 0 && c.GroupPattern == "" {
		bad("no groups mapped: set [kubernetes.groups.NAME] or group_pattern")
	}
	if c.GroupPattern != "" {
		if _, err := regexp.Compile(c.GroupPattern); err != nil {
			bad("group_pattern %q: %v", c.GroupPattern, err)
		}
	}
	if c.NamespacePrefix != "" {
		if p := normalizePrefix(c.NamespacePrefix); p != c.NamespacePrefix {
			bad("namespace_prefix %q: only a-z, 0-9 and - are allowed, starting with a letter or digit (e.g. %q)", c.NamespacePrefix, p)
		} else if why := reservedWhy(c.NamespacePrefix+"x", c.ReservedPrefixes); why != "" {
			bad("namespace_prefix %q: every namespace would be refused: %s", c.NamespacePrefix, why)
		}
	}
	for _, p := range c.ReservedPrefixes {
		if p == "" || normalizePrefix(p) != p {
			bad("reserved_prefixes: %q is not a namespace name prefix (a-z, 0-9, -)", p)
		}
	}
	for _, name := range []string{c.ClusterRole} {
		if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
			bad("cluster_role %q: %s", name, strings.Join(msgs, "; "))
		}
	}
	errs = append(errs, checkQuota("quota", c.Quota)...)
	if msgs := validation.IsQualifiedName(c.GPUResource); len(msgs) > 0 || !strings.Contains(c.GPUResource, "/") {
		bad("gpu_resource %q: want an extended resource name like nvidia.com/gpu", c.GPUResource)
	}
	switch c.OnGroupRemoved {
	case "keep", "delete":
	default:
		bad("on_group_removed %q: want keep or delete", c.OnGroupRemoved)
	}
	if d, err := time.ParseDuration(c.Timeout); err != nil || d < time.Second {
		bad("timeout %q: want a Go duration of at least 1s, e.g. \"20s\"", c.Timeout)
	}
	if c.Interval != "" {
		if d, err := time.ParseDuration(c.Interval); err != nil || d < time.Second {
			bad("interval %q: want a Go duration of at least 1s, e.g. \"2m\"", c.Interval)
		}
	}
	if strings.HasPrefix(c.UsersPrefix, "system:") || strings.HasPrefix(c.GroupsPrefix, "system:") {
		bad("users_prefix/groups_prefix: system: is the API server's own namespace of names; use the --oidc-*-prefix the API server has")
	}
	for _, g := range slices.Sorted(maps.Keys(c.Groups)) {
		gc := c.Groups[g]
		if gc.Namespace != "" {
			if why := namespaceWhy(gc.Namespace, c.ReservedPrefixes); why != "" {
				bad("groups.%s: namespace %q: %s", g, gc.Namespace, why)
			}
		}
		if gc.ClusterRole != "" {
			if msgs := validation.IsDNS1123Subdomain(gc.ClusterRole); len(msgs) > 0 {
				bad("groups.%s: cluster_role %q: %s", g, gc.ClusterRole, strings.Join(msgs, "; "))
			}
		}
		errs = append(errs, checkQuota("groups."+g+".quota", gc.Quota)...)
	}
	// Two explicit groups naming one namespace: which one owns it is not
	// something to leave to the sort order.
	seen := map[string]string{}
	for _, g := range slices.Sorted(maps.Keys(c.Groups)) {
		if ns := c.Groups[g].Namespace; ns != "" {
			if other, ok := seen[ns]; ok {
				bad("groups %q and %q both name namespace %q; a namespace serves one group", other, g, ns)
			}
			seen[ns] = g
		}
	}
	return errors.Join(errs...)
}

func checkQuota(where string, q Quota) []error {
	var errs []error
	for _, f := range []struct{ key, v string }{{"gpus", q.GPUs}, {"cpu", q.CPU}, {"memory", q.Memory}, {"pods", q.Pods}} {
		if f.v == "" {
			continue
		}
		qty, err := resource.ParseQuantity(f.v)
		if err != nil {
			errs = append(errs, fmt.Errorf("kubernetes: %s.%s %q: not a Kubernetes quantity (e.g. \"8\", \"500m\", \"64Gi\")", where, f.key, f.v))
		} else if qty.Sign() < 0 {
			errs = append(errs, fmt.Errorf("kubernetes: %s.%s %q: negative", where, f.key, f.v))
		}
	}
	return errs
}
