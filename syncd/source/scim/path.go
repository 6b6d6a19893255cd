package scim

import (
	"fmt"
	"strings"
)

// Core schema URNs: attributes under them sit at the top level of a
// resource, not in an extension object.
const (
	CoreUserURN  = "urn:ietf:params:scim:schemas:core:2.0:User"
	CoreGroupURN = "urn:ietf:params:scim:schemas:core:2.0:Group"
)

// Path is a parsed SCIM attribute path: [URN ":"] attr ["." sub]
// (RFC 7644 section 3.10). Value filters ("emails[type eq ...]") are not
// supported: a POSIX attribute is single-valued or a plain list.
type Path struct {
	URN  string // "" for a core attribute written bare
	Attr string
	Sub  string
}

// ParsePath parses an attribute path as written in the configuration.
func ParsePath(s string) (Path, error) {
	if s == "" {
		return Path{}, fmt.Errorf("empty attribute path")
	}
	var p Path
	rest := s
	if strings.HasPrefix(strings.ToLower(s), "urn:") {
		i := strings.LastIndexByte(s, ':')
		p.URN, rest = s[:i], s[i+1:]
		if p.URN == "urn" || strings.HasSuffix(p.URN, ":") {
			return Path{}, fmt.Errorf("attribute path %q: bad URN %q", s, p.URN)
		}
	}
	attr, sub, hasSub := strings.Cut(rest, ".")
	if !validAttrName(attr) {
		return Path{}, fmt.Errorf("attribute path %q: %q is not a SCIM attribute name", s, attr)
	}
	if hasSub && !validAttrName(sub) {
		return Path{}, fmt.Errorf("attribute path %q: %q is not a SCIM sub-attribute name", s, sub)
	}
	p.Attr, p.Sub = attr, sub
	return p, nil
}

// IsCore reports whether the attribute lives at the resource's top level.
func (p Path) IsCore() bool {
	return p.URN == "" || strings.EqualFold(p.URN, CoreUserURN) || strings.EqualFold(p.URN, CoreGroupURN)
}

// String is the path as sent in attributes= (extension attributes fully
// qualified, core ones bare).
func (p Path) String() string {
	s := p.Attr
	if p.Sub != "" {
		s += "." + p.Sub
	}
	if !p.IsCore() {
		s = p.URN + ":" + s
	}
	return s
}

// validAttrName is RFC 7643's ATTRNAME: ALPHA *(nameChar), plus "$ref".
func validAttrName(s string) bool {
	if s == "$ref" {
		return true
	}
	if s == "" || !isAlpha(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !isAlpha(c) && !(c >= '0' && c <= '9') && c != '-' && c != '_' {
			return false
		}
	}
	return true
}

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
