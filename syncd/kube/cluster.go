package kube

import (
	"context"
	"errors"
	"fmt"

	"github.com/scimbridge/scimbridge/syncd/config"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	rbacv1client "k8s.io/client-go/kubernetes/typed/rbac/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Client is the two API groups the pass uses (core: namespaces and
// resourcequotas; rbac: rolebindings). Only these typed clients are
// linked, not the whole clientset (doc.go: binary size).
type Client struct {
	Core corev1client.CoreV1Interface
	RBAC rbacv1client.RbacV1Interface
	Host string
}

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
	core, err := corev1client.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: %w", err)
	}
	rbac, err := rbacv1client.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: %w", err)
	}
	return &Client{Core: core, RBAC: rbac, Host: rc.Host}, nil
}

var managedSelector = LabelManagedBy + "=" + ManagedByValue

// Observe reads every namespace and scimbridge's RoleBindings and
// ResourceQuotas (three list calls, whatever the number of groups).
func (c *Client) Observe(ctx context.Context) (*Observed, error) {
	o := &Observed{Namespaces: map[string]*Namespace{}}
	nss, err := c.Core.Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("kubernetes: list namespaces: %w", err)
	}
	for _, n := range nss.Items {
		o.Namespaces[n.Name] = &Namespace{Name: n.Name, Managed: n.Labels[LabelManagedBy] == ManagedByValue,
			HandsOff: n.Annotations[AnnoHandsOff] == "true", Terminating: n.Status.Phase == corev1.NamespaceTerminating || n.DeletionTimestamp != nil,
			Group: n.Annotations[AnnoGroup], GroupID: n.Annotations[AnnoGroupID], Version: n.ResourceVersion}
	}
	rbs, err := c.RBAC.RoleBindings("").List(ctx, metav1.ListOptions{LabelSelector: managedSelector})
	if err != nil {
		return nil, fmt.Errorf("kubernetes: list rolebindings: %w", err)
	}
	for _, rb := range rbs.Items {
		ns := o.Namespaces[rb.Namespace]
		if rb.Name != ObjectName || ns == nil || !ns.Managed || rb.RoleRef.Kind != "ClusterRole" {
			continue // labelled by someone else, or not in a namespace of ours: not ours to judge
		}
		b := &Binding{Role: rb.RoleRef.Name, HandsOff: rb.Annotations[AnnoHandsOff] == "true",
			Applied: rb.Annotations[AnnoApplied], Version: rb.ResourceVersion}
		for _, s := range rb.Subjects {
			b.Subjects = append(b.Subjects, Subject{Kind: s.Kind, Name: s.Name})
		}
		ns.Binding = b
	}
	rqs, err := c.Core.ResourceQuotas("").List(ctx, metav1.ListOptions{LabelSelector: managedSelector})
	if err != nil {
		return nil, fmt.Errorf("kubernetes: list resourcequotas: %w", err)
	}
	for _, rq := range rqs.Items {
		ns := o.Namespaces[rq.Namespace]
		if rq.Name != ObjectName || ns == nil || !ns.Managed {
			continue
		}
		q := &QuotaObj{Hard: map[string]string{}, HandsOff: rq.Annotations[AnnoHandsOff] == "true",
			Applied: rq.Annotations[AnnoApplied], Version: rq.ResourceVersion}
		for k, v := range rq.Spec.Hard {
			q.Hard[string(k)] = v.String()
		}
		ns.Quota = q
	}
	return o, nil
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
	api := c.Core.Namespaces()
	switch ch.Action {
	case "create":
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ch.Namespace, Labels: labels(),
			Annotations: map[string]string{AnnoGroup: ch.Group, AnnoGroupID: ch.GroupID}}}
		_, err := api.Create(ctx, ns, metav1.CreateOptions{FieldManager: ManagedByValue})
		return err
	case "update":
		ns, err := api.Get(ctx, ch.Namespace, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if err := mine(ns.ObjectMeta, ch.Version); err != nil {
			return err
		}
		if ns.Annotations == nil {
			ns.Annotations = map[string]string{}
		}
		ns.Annotations[AnnoGroup], ns.Annotations[AnnoGroupID] = ch.Group, ch.GroupID
		_, err = api.Update(ctx, ns, metav1.UpdateOptions{FieldManager: ManagedByValue})
		return err
	case "delete":
		ns, err := api.Get(ctx, ch.Namespace, metav1.GetOptions{})
		if err != nil {
			return ignoreNotFound(err)
		}
		if err := mine(ns.ObjectMeta, ch.Version); err != nil {
			return err
		}
		return ignoreNotFound(api.Delete(ctx, ch.Namespace, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &ns.UID}}))
	}
	return fmt.Errorf("unknown action %q", ch.Action)
}

// mine refuses to write an object that is not scimbridge's, or that
// changed since the plan read it.
func mine(m metav1.ObjectMeta, version string) error {
	if m.Labels[LabelManagedBy] != ManagedByValue {
		return fmt.Errorf("not created by scimbridge (no %s=%s label); left alone", LabelManagedBy, ManagedByValue)
	}
	if m.Annotations[AnnoHandsOff] == "true" {
		return fmt.Errorf("hands-off (%s) since the plan was made; left alone", AnnoHandsOff)
	}
	if version != "" && m.ResourceVersion != version {
		return fmt.Errorf("changed since the plan was made (resourceVersion %s, planned on %s); the next pass plans again", m.ResourceVersion, version)
	}
	return nil
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func (c *Client) applyBinding(ctx context.Context, ch Change) error {
	api := c.RBAC.RoleBindings(ch.Namespace)
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ObjectName, Namespace: ch.Namespace, Labels: labels(),
			Annotations: map[string]string{AnnoGroup: ch.Group, AnnoApplied: bindingDigest(ch.Role, ch.Subjects)}},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ch.Role},
	}
	for _, s := range ch.Subjects {
		rb.Subjects = append(rb.Subjects, rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: s.Kind, Name: s.Name})
	}
	if ch.Action == "create" {
		_, err := api.Create(ctx, rb, metav1.CreateOptions{FieldManager: ManagedByValue})
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("a RoleBinding named %s exists that is not scimbridge's (no %s=%s label); left alone: rename or delete it", ObjectName, LabelManagedBy, ManagedByValue)
		}
		return err
	}
	cur, err := api.Get(ctx, ObjectName, metav1.GetOptions{})
	if err != nil {
		if ch.Action == "delete" {
			return ignoreNotFound(err)
		}
		return err
	}
	if err := mine(cur.ObjectMeta, ch.Version); err != nil {
		return err
	}
	switch ch.Action {
	case "delete", "recreate":
		err := api.Delete(ctx, ObjectName, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cur.UID, ResourceVersion: &cur.ResourceVersion}})
		if err != nil || ch.Action == "delete" {
			return ignoreNotFound(err)
		}
		_, err = api.Create(ctx, rb, metav1.CreateOptions{FieldManager: ManagedByValue})
		return err
	case "update":
		rb.ResourceVersion = cur.ResourceVersion
		_, err := api.Update(ctx, rb, metav1.UpdateOptions{FieldManager: ManagedByValue})
		return err
	}
	return fmt.Errorf("unknown action %q", ch.Action)
}

func (c *Client) applyQuota(ctx context.Context, ch Change) error {
	api := c.Core.ResourceQuotas(ch.Namespace)
	rq := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: ObjectName, Namespace: ch.Namespace, Labels: labels(),
			Annotations: map[string]string{AnnoApplied: quotaDigest(ch.Hard)}},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{}},
	}
	for k, v := range ch.Hard {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return fmt.Errorf("quota %s=%q: %w", k, v, err)
		}
		rq.Spec.Hard[corev1.ResourceName(k)] = q
	}
	switch ch.Action {
	case "create":
		_, err := api.Create(ctx, rq, metav1.CreateOptions{FieldManager: ManagedByValue})
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("a ResourceQuota named %s exists that is not scimbridge's (no %s=%s label); left alone: rename or delete it", ObjectName, LabelManagedBy, ManagedByValue)
		}
		return err
	case "update":
		cur, err := api.Get(ctx, ObjectName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if err := mine(cur.ObjectMeta, ch.Version); err != nil {
			return err
		}
		rq.ResourceVersion = cur.ResourceVersion
		_, err = api.Update(ctx, rq, metav1.UpdateOptions{FieldManager: ManagedByValue})
		return err
	}
	return fmt.Errorf("unknown action %q", ch.Action)
}
