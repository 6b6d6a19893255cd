package names

import (
	"regexp"
	"strings"
)

// Slug is the one place a SCIM group name is folded into a name another
// system keeps (a Slurm account: syncd/slurm.Normalize; a Kubernetes
// namespace: syncd/kube.Normalize): lowercased, every run of characters
// that drop matches made one sep, the characters of trim cut from both
// ends, at most max bytes (cut again at the end). "" when nothing usable
// is left; whether the result may be used is the caller's call.
func Slug(name string, drop *regexp.Regexp, sep, trim string, max int) string {
	s := drop.ReplaceAllString(strings.ToLower(name), sep)
	s = strings.Trim(s, trim)
	if len(s) > max {
		s = strings.TrimRight(s[:max], trim)
	}
	return s
}
