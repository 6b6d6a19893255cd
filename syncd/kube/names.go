package kube

import (
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/scimbridge/scimbridge/syncd/names"
)

// MaxNamespaceLen is the DNS-1123 label limit Kubernetes puts on
// namespace names.
const MaxNamespaceLen = validation.DNS1123LabelMaxLength

var nonLabel = regexp.MustCompile(`[^a-z0-9]+`)

// Normalize turns a SCIM group name (or its pattern submatch) into a
// namespace name: lowercase, runs of anything but a-z and 0-9 become one
// "-", no leading or trailing "-", at most 63 characters. "" when nothing
// usable is left. Whether the result may be used is namespaceWhy's call.
func Normalize(name string) string { return names.Slug(name, nonLabel, "-", "-", MaxNamespaceLen) }

// normalizePrefix is Normalize for a prefix: a trailing "-" is kept.
func normalizePrefix(p string) string {
	s := nonLabel.ReplaceAllString(strings.ToLower(p), "-")
	return strings.TrimLeft(s, "-")
}

// namespaceWhy says why name may not be a namespace scimbridge creates,
// or "" when it may.
func namespaceWhy(name string, reserved []string) string {
	if msgs := validation.IsDNS1123Label(name); len(msgs) > 0 {
		return "not a DNS-1123 label: " + strings.Join(msgs, "; ")
	}
	return reservedWhy(name, reserved)
}

// reservedWhy refuses the namespaces that belong to the cluster, not to a
// group: binding a group's role in one of them would hand the group the
// cluster's own objects.
func reservedWhy(name string, reserved []string) string {
	switch {
	case name == "default":
		return `"default" is the namespace every unqualified request lands in; it is the cluster's, not a group's`
	case strings.HasPrefix(name, "kube-"):
		return `the kube- prefix is reserved for Kubernetes' own namespaces (kube-system, kube-public, kube-node-lease)`
	}
	for _, p := range reserved {
		if strings.HasPrefix(name, p) {
			return fmt.Sprintf("the prefix %q is reserved (reserved_prefixes)", p)
		}
	}
	return ""
}
