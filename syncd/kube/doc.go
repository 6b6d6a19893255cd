// Package kube gives each mapped SCIM group its place on a Kubernetes
// cluster: a namespace, a RoleBinding of a ClusterRole to the group as the
// API server sees it, and a ResourceQuota (GPUs, CPU, memory, pods). It
// reads the same live snapshot as the Slurm pass and follows the same
// discipline (syncd/slurm/doc.go): a pure plan with a reason per change,
// an idempotent apply, drift reported and undone, hands-off, status and
// metrics.
//
// # A pass
//
// Load the snapshot, map groups (BuildDesired, config + snapshot only),
// read the cluster in three list calls whatever the number of groups
// (namespaces; RoleBindings and ResourceQuotas label-selected across
// namespaces), compute a Plan (MakePlan, a pure function), run its
// changes one by one, read the cluster back and count what a fresh plan
// still has (Result.Unfinished, 0 when it converged: the second plan is
// empty). `syncd kubernetes plan` prints the plan; `syncd kubernetes
// apply` and `syncd run` (after each commit and on its own schedule,
// [kubernetes] interval) run it.
//
// # Mapping and names
//
// Like [slurm]: group_pattern (submatch 1, or the whole name) or
// [kubernetes.groups.NAME] (explicit wins; a pattern group landing on an
// explicit namespace is a CONFLICT and ignored; two pattern groups
// landing on one namespace are both unmapped and the namespace is left as
// it is). A namespace name is namespace_prefix + the name, normalised
// (Normalize): lowercase, runs of anything but a-z and 0-9 become one
// "-", trimmed, at most 63 characters (a DNS-1123 label: Kubernetes
// refuses anything else). Group names come from the identity provider and
// are hostile; a name is refused, with the reason in the plan, when it is:
//   - "default": every request that names no namespace lands there; it
//     belongs to the cluster, and a group's edit there would reach
//     everyone's defaults;
//   - kube-*: reserved for Kubernetes' own namespaces (kube-system holds
//     the control plane's secrets; kube-public is readable by everyone;
//     kube-node-lease is the nodes' heartbeat); a group named
//     k8s-kube-system must never become an editor of kube-system;
//   - a prefix in reserved_prefixes (a site's own, e.g. "openshift-",
//     "cattle-", "scimbridge");
//   - empty after normalising (map the group explicitly).
//
// Since the RoleBinding lives in the namespace, refusing the name is what
// keeps a group out of the cluster's namespaces; an existing namespace
// scimbridge did not create is never bound either (below).
//
// # Who the binding names
//
// The API server authenticates users with the identity provider's OIDC
// tokens: their groups claim, prefixed with --oidc-groups-prefix, is the
// group RBAC sees. The binding's subject is groups_prefix + the SCIM
// group's name, so the same IdP group that is the Slurm account is the
// Kubernetes group. With bind_members the group's active members are bound
// as users too (users_prefix + userName), for API servers whose tokens
// carry no groups claim; a member disabled at the source is dropped from
// the binding on the next pass. (Tokens already issued stay valid until
// they expire: the IdP refuses new ones.) Prefixes starting with system:
// are refused: that is the API server's own namespace of names.
//
// # Ownership: what syncd owns, and what it never touches
//
// Everything scimbridge creates carries app.kubernetes.io/managed-by=
// scimbridge; the namespace also carries the SCIM group's name and id in
// annotations (a group name need not be a valid label value). The
// RoleBinding and the ResourceQuota are named "scimbridge" in each managed
// namespace. The pass:
//   - never changes or deletes an object without the label: a namespace of
//     the mapped name that exists without it is left alone, and the group
//     gets nothing there (the plan says how to hand it over); a
//     RoleBinding or ResourceQuota named "scimbridge" that is not labelled
//     is an error for that namespace, not overwritten;
//   - lists only label-selected RoleBindings and ResourceQuotas: an
//     admin's own RoleBindings, quotas, LimitRanges, pods and volumes in a
//     managed namespace are never read, changed or removed;
//   - checks the label again (and the resourceVersion it planned on) just
//     before each update or delete: an object changed since the plan is
//     left for the next pass;
//   - leaves a namespace annotated scimbridge.io/hands-off="true" and all
//     in it alone, and a RoleBinding or ResourceQuota with that annotation
//     alone by itself; the plan still names the differences.
//
// # Drift
//
// Each RoleBinding and ResourceQuota carries scimbridge.io/applied, a
// digest of the spec scimbridge wrote (quantities in canonical form, so
// "1000m" and "1" agree). When the spec no longer matches its digest it
// was edited outside scimbridge: the change that restores it is labelled
// "drift:" in the plan, logged, counted (scimbridge_kubernetes_drift_total
// and `syncd status`) and applied. No ledger file is needed: the digest
// travels with the object. A RoleBinding's roleRef cannot be changed in
// place, so a new cluster_role is a delete and create ("recreate").
//
// # A group removed, renamed
//
// A managed namespace no mapped group wants any more (the group left the
// directory, or the config stopped mapping it: the reason says which)
// loses its RoleBinding, and its quota goes to 0 for everything it
// limits, pods included: running pods and all data (volumes, secrets,
// config maps) stay, nothing new is admitted, and re-adding the group
// restores binding and quota on the next pass. on_group_removed =
// "delete" deletes the namespace instead, with everything in it (opt-in:
// the data is the team's). One pass may take access from at most half of
// the managed namespaces (when there are at least 10) unless forced, as
// for Slurm associations: a snapshot that lost groups by mistake must not
// lock every team out.
//
// A namespace cannot be renamed. A group renamed at the source keeps its
// SCIM id, recorded on its namespace: the namespace follows the id and
// keeps its name (the binding's subject follows the new group name),
// unless the config names the namespace explicitly. The plan says so.
//
// # Never in the way
//
// The pass runs after each commit in the background in `syncd run` (the
// commit, the Slurm step, the publisher and the nodes' logins never wait
// for the API server) and on its own schedule, so a cluster that was down
// is caught up without a source change. Every request is bounded
// ([kubernetes] timeout, default 20 s); passes never overlap. A failure is
// logged, written to kubernetes-state.json beside the snapshot (`syncd
// status` prints it) and counted in scimbridge_kubernetes_passes_total.
// `syncd sync --once` waits for its pass, bounded the same way.
//
// # Credentials and least privilege
//
// A kubeconfig ([kubernetes] kubeconfig) is checked like every other
// secret (config.CheckSecretFile: root's, 0600, on a path only root
// controls), and so are a client key file or token file it names;
// exec and auth-provider plugins are refused (a plugin would run a
// program as root on every pass). Without kubeconfig, the pod's service
// account (in-cluster). packaging/kubernetes/rbac.yaml is the ClusterRole
// the pass needs and nothing else: namespaces, rolebindings,
// resourcequotas, and `bind` on the ClusterRoles it hands out (RBAC's
// escalation check: binding edit needs either edit's rules or bind on
// it). tests/kube/run.sh runs the pass with exactly that role.
//
// # Library and binary size
//
// k8s.io/client-go, the same minor (0.37) as the API server in the tests,
// through its dynamic client on unstructured objects (cluster.go), and
// clientcmd for kubeconfig files; no hand-written REST client. Not the
// typed clients: typed/core/v1 and typed/rbac/v1 import client-go's
// kubernetes/scheme, which registers every API group of k8s.io/api.
// Measured on this machine (make's flags: -trimpath -buildmode=pie), 50
// runs of `syncd status` each:
//
//	                  binary    max RSS at start   user CPU per run
//	without the pass  31.0 MB   20.2 MB            ~5 ms
//	typed clients     57.3 MB   36.2 MB            ~14 ms
//	dynamic client    37.3 MB   26.1 MB            ~7.5 ms
//
// With the dynamic client the pass stays in syncd (one binary, one config,
// the status and metrics of `syncd run`) rather than behind a build tag or
// in a second binary: +6.3 MB on disk and +6 MB resident for every syncd,
// nodes' mirror daemons included, is the price; the typed clients' +26 MB
// was not worth their type checking for three resources. The plan layer
// (plan.go) is typed; only cluster.go sees unstructured maps.
//
// # Package main wires
//
// The daemon's side of the pass lives here (daemon.go), not in syncd's
// package main: AfterCommit (registered in pipeline.AfterCommit), Loop
// (on its own schedule, syncd/schedule), LoadConfig and CheckConfig, and
// what `syncd status` and `syncd explain` print of it (PrintStatus,
// ExplainNamespaces). Package main keeps the `syncd kubernetes` command's
// flags and output only (issue 18, item 6), so the one place that starts
// a pass also holds the guard that keeps two from overlapping.
package kube
