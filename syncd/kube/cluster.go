package kube

import (
	"context"
	"errors"
	"fmt"

	"github.com/scimbridge/scimbridge/syncd/config"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Client reaches the three resources the pass uses (namespaces,
// rolebindings, resourcequotas) through client-go's dynamic client, as
// unstructured objects: the typed clients import client-go's scheme of
// every API group, which made syncd 85% larger (doc.go: binary size).
type Client struct {
	dyn  dynamic.Interface
	Host string
}

var (
	namespacesGVR     = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	roleBindingsGVR   = schema.GroupVersionResource{Group: rbacGroup, Version: "v1", Resource: "rolebindings"}
	resourceQuotasGVR = schema.GroupVersionResource{Version: "v1", Resource: "resourcequotas"}
)

const rbacGroup = "rbac.authorization.k8s.io"

// ErrCredentials wraps a refused kubeconfig or in-cluster credential.
var ErrCredentials = errors.New("kubernetes: credentials refused")

// NewClient builds a client from cfg.Kubeconfig (checked like every other
// secret: owned by root, mode 0600, on a path only root controls; and so
// are the key and token files it names) or, without one, from the pod's
// service account.
func NewClient(cfg Config) (*Client, error) {
	var rc *rest.Config
	var err error
	if cfg.Kubeconfig != "" {
		if err := config.CheckSecretFile(cfg.Kubeconfig); err != nil {
			return nil, fmt.Errorf("%w: kubeconfig: %v (it holds the credentials of the pass; chown root and chmod 0600 it)", ErrCredentials, err)
		}
		rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: cfg.Kubeconfig}
		over := &clientcmd.ConfigOverrides{CurrentContext: cfg.Context}
		rc, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, over).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("kubernetes: kubeconfig %s: %w (set [kubernetes] kubeconfig and context)", cfg.Kubeconfig, err)
		}
		if rc.ExecProvider != nil || rc.AuthProvider != nil {
			return nil, fmt.Errorf("%w: kubeconfig %s: runs an exec or auth-provider plugin; give the pass a token or client certificate of its own service account (packaging/kubernetes/rbac.yaml)", ErrCredentials, cfg.Kubeconfig)
		}
		for _, f := range []string{rc.TLSClientConfig.KeyFile, rc.BearerTokenFile} {
			if f == "" {
				continue
			}
			if err := config.CheckSecretFile(f); err != nil {
				return nil, fmt.Errorf("%w: a file kubeconfig %s names: %v", ErrCredentials, cfg.Kubeconfig, err)
			}
		}
	} else {
		rc, err = rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("kubernetes: no kubeconfig set and not in a cluster: %w (set [kubernetes] kubeconfig)", err)
		}
	}
	rc.Timeout = cfg.timeout()
	rc.UserAgent = "scimbridge-syncd"
	rc.QPS, rc.Burst = 20, 40
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: %w", err)
	}
	return &Client{dyn: dyn, Host: rc.Host}, nil
}

var managedSelector = LabelManagedBy + "=" + ManagedByValue

// Observe reads every namespace and scimbridge's RoleBindings and
// ResourceQuotas (three list calls, whatever the number of groups).
func (c *Client) Observe(ctx context.Context) (*Observed, error) {
	o := &Observed{Namespaces: map[string]*Namespace{}}
	nss, err := c.dyn.Resource(namespacesGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("kubernetes: list namespaces: %w", err)
	}
	for _, n := range nss.Items {
		phase, _, _ := unstructured.NestedString(n.Object, "status", "phase")
		an := n.GetAnnotations()
		o.Namespaces[n.GetName()] = &Namespace{Name: n.GetName(), Managed: n.GetLabels()[LabelManagedBy] == ManagedByValue,
			HandsOff: an[AnnoHandsOff] == "true", Terminating: phase == "Terminating" || n.GetDeletionTimestamp() != nil,
			Group: an[AnnoGroup], GroupID: an[AnnoGroupID], Version: n.GetResourceVersion()}
	}
	rbs, err := c.dyn.Resource(roleBindingsGVR).Namespace(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: managedSelector})
	if err != nil {
		return nil, fmt.Errorf("kubernetes: list rolebindings: %w", err)
	}
	for _, rb := range rbs.Items {
		ns := o.Namespaces[rb.GetNamespace()]
		kind, _, _ := unstructured.NestedString(rb.Object, "roleRef", "kind")
		if rb.GetName() != ObjectName || ns == nil || !ns.Managed || kind != "ClusterRole" {
			continue // labelled by someone else, or not in a namespace of ours: not ours to judge
		}
		role, _, _ := unstructured.NestedString(rb.Object, "roleRef", "name")
		b := &Binding{Role: role, HandsOff: rb.GetAnnotations()[AnnoHandsOff] == "true",
			Applied: rb.GetAnnotations()[AnnoApplied], Version: rb.GetResourceVersion()}
		subjects, _, _ := unstructured.NestedSlice(rb.Object, "subjects")
		for _, x := range subjects {
			if m, ok := x.(map[string]any); ok {
				k, _ := m["kind"].(string)
				n, _ := m["name"].(string)
				b.Subjects = append(b.Subjects, Subject{Kind: k, Name: n})
			}
		}
		ns.Binding = b
	}
	rqs, err := c.dyn.Resource(resourceQuotasGVR).Namespace(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: managedSelector})
	if err != nil {
		return nil, fmt.Errorf("kubernetes: list resourcequotas: %w", err)
	}
	for _, rq := range rqs.Items {
		ns := o.Namespaces[rq.GetNamespace()]
		if rq.GetName() != ObjectName || ns == nil || !ns.Managed {
			continue
		}
		hard, _, _ := unstructured.NestedStringMap(rq.Object, "spec", "hard")
		if hard == nil {
			hard = map[string]string{}
		}
		ns.Quota = &QuotaObj{Hard: hard, HandsOff: rq.GetAnnotations()[AnnoHandsOff] == "true",
			Applied: rq.GetAnnotations()[AnnoApplied], Version: rq.GetResourceVersion()}
	}
	return o, nil
}

// object makes an unstructured object scimbridge owns.
func object(apiVersion, kind, namespace, name string, annotations map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind}}
	u.SetName(name)
	if namespace != "" {
		u.SetNamespace(namespace)
	}
	u.SetLabels(labels())
	u.SetAnnotations(annotations)
	return u
}

func labels() map[string]string { return map[string]string{LabelManagedBy: ManagedByValue} }

// Apply runs one change. Updates carry the resourceVersion read by
// Observe: an object changed since is refused (Conflict) and the next
// pass plans again from what is there.
func (c *Client) Apply(ctx context.Context, ch Change) error {
	err := c.apply(ctx, ch)
	if err != nil {
		return fmt.Errorf("kubernetes: %s %s %s/%s: %w", ch.Action, ch.Kind, ch.Namespace, objName(ch), err)
	}
	return nil
}

func (c *Client) apply(ctx context.Context, ch Change) error {
	switch ch.Kind {
	case "Namespace":
		return c.applyNamespace(ctx, ch)
	case "RoleBinding":
		return c.applyBinding(ctx, ch)
	case "ResourceQuota":
		return c.applyQuota(ctx, ch)
	}
	return fmt.Errorf("unknown kind %q", ch.Kind)
}

func (c *Client) applyNamespace(ctx context.Context, ch Change) error {
	api := c.dyn.Resource(namespacesGVR)
	create := metav1.CreateOptions{FieldManager: ManagedByValue}
	switch ch.Action {
	case "create":
		ns := object("v1", "Namespace", "", ch.Namespace, map[string]string{AnnoGroup: ch.Group, AnnoGroupID: ch.GroupID})
		_, err := api.Create(ctx, ns, create)
		return err
	case "update":
		ns, err := api.Get(ctx, ch.Namespace, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if err := mine(ns, ch.Version); err != nil {
			return err
		}
		an := ns.GetAnnotations()
		if an == nil {
			an = map[string]string{}
		}
		an[AnnoGroup], an[AnnoGroupID] = ch.Group, ch.GroupID
		ns.SetAnnotations(an)
		_, err = api.Update(ctx, ns, metav1.UpdateOptions{FieldManager: ManagedByValue})
		return err
	case "delete":
		ns, err := api.Get(ctx, ch.Namespace, metav1.GetOptions{})
		if err != nil {
			return ignoreNotFound(err)
		}
		if err := mine(ns, ch.Version); err != nil {
			return err
		}
		uid := ns.GetUID()
		return ignoreNotFound(api.Delete(ctx, ch.Namespace, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}))
	}
	return fmt.Errorf("unknown action %q", ch.Action)
}

// mine refuses to write an object that is not scimbridge's, or that
// changed since the plan read it.
func mine(u *unstructured.Unstructured, version string) error {
	if u.GetLabels()[LabelManagedBy] != ManagedByValue {
		return fmt.Errorf("not created by scimbridge (no %s=%s label); left alone", LabelManagedBy, ManagedByValue)
	}
	if u.GetAnnotations()[AnnoHandsOff] == "true" {
		return fmt.Errorf("hands-off (%s) since the plan was made; left alone", AnnoHandsOff)
	}
	if version != "" && u.GetResourceVersion() != version {
		return fmt.Errorf("changed since the plan was made (resourceVersion %s, planned on %s); the next pass plans again", u.GetResourceVersion(), version)
	}
	return nil
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// notOurs is the error for a create that found an object of that name.
func notOurs(kind string, err error) error {
	if apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("a %s named %s exists that is not scimbridge's (no %s=%s label); left alone: rename or delete it", kind, ObjectName, LabelManagedBy, ManagedByValue)
	}
	return err
}

func (c *Client) applyBinding(ctx context.Context, ch Change) error {
	api := c.dyn.Resource(roleBindingsGVR).Namespace(ch.Namespace)
	rb := object(rbacGroup+"/v1", "RoleBinding", ch.Namespace, ObjectName,
		map[string]string{AnnoGroup: ch.Group, AnnoApplied: bindingDigest(ch.Role, ch.Subjects)})
	rb.Object["roleRef"] = map[string]any{"apiGroup": rbacGroup, "kind": "ClusterRole", "name": ch.Role}
	var subjects []any
	for _, s := range ch.Subjects {
		subjects = append(subjects, map[string]any{"apiGroup": rbacGroup, "kind": s.Kind, "name": s.Name})
	}
	rb.Object["subjects"] = subjects
	create := metav1.CreateOptions{FieldManager: ManagedByValue}
	if ch.Action == "create" {
		_, err := api.Create(ctx, rb, create)
		return notOurs("RoleBinding", err)
	}
	cur, err := api.Get(ctx, ObjectName, metav1.GetOptions{})
	if err != nil {
		if ch.Action == "delete" {
			return ignoreNotFound(err)
		}
		return err
	}
	if err := mine(cur, ch.Version); err != nil {
		return err
	}
	switch ch.Action {
	case "delete", "recreate":
		uid, rv := cur.GetUID(), cur.GetResourceVersion()
		err := api.Delete(ctx, ObjectName, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}})
		if err != nil || ch.Action == "delete" {
			return ignoreNotFound(err)
		}
		_, err = api.Create(ctx, rb, create)
		return err
	case "update":
		rb.SetResourceVersion(cur.GetResourceVersion())
		_, err := api.Update(ctx, rb, metav1.UpdateOptions{FieldManager: ManagedByValue})
		return err
	}
	return fmt.Errorf("unknown action %q", ch.Action)
}

func (c *Client) applyQuota(ctx context.Context, ch Change) error {
	api := c.dyn.Resource(resourceQuotasGVR).Namespace(ch.Namespace)
	rq := object("v1", "ResourceQuota", ch.Namespace, ObjectName, map[string]string{AnnoApplied: quotaDigest(ch.Hard)})
	hard := map[string]any{}
	for k, v := range ch.Hard {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return fmt.Errorf("quota %s=%q: %w", k, v, err)
		}
		hard[k] = q.String()
	}
	rq.Object["spec"] = map[string]any{"hard": hard}
	switch ch.Action {
	case "create":
		_, err := api.Create(ctx, rq, metav1.CreateOptions{FieldManager: ManagedByValue})
		return notOurs("ResourceQuota", err)
	case "update":
		cur, err := api.Get(ctx, ObjectName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if err := mine(cur, ch.Version); err != nil {
			return err
		}
		rq.SetResourceVersion(cur.GetResourceVersion())
		_, err = api.Update(ctx, rq, metav1.UpdateOptions{FieldManager: ManagedByValue})
		return err
	}
	return fmt.Errorf("unknown action %q", ch.Action)
}
