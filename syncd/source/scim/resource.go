package scim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// resource is one SCIM resource with its values left undecoded until a
// configured path asks for them. SCIM attribute names and URNs are
// case-insensitive (RFC 7643 section 2.1), so lookups are too.
type resource struct {
	top map[string]json.RawMessage
	ext map[string]map[string]json.RawMessage // decoded extensions, by URN as asked
}

func parseResource(raw json.RawMessage) (*resource, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, err
	}
	if top == nil {
		return nil, fmt.Errorf("resource is null")
	}
	return &resource{top: top}, nil
}

// field returns m[name], matching the name case-insensitively. A JSON
// null is the same as absent.
func field(m map[string]json.RawMessage, name string) (json.RawMessage, bool) {
	v, ok := m[name]
	if !ok {
		for k, kv := range m {
			if strings.EqualFold(k, name) {
				v, ok = kv, true
				break
			}
		}
	}
	if !ok || isNull(v) {
		return nil, false
	}
	return v, true
}

func isNull(v json.RawMessage) bool {
	return len(v) == 0 || bytes.Equal(bytes.TrimSpace(v), []byte("null"))
}

// value returns the raw value at p (sub-attribute not applied).
func (r *resource) value(p Path) (json.RawMessage, bool, error) {
	if p.Attr == "" {
		return nil, false, nil
	}
	obj := r.top
	if !p.IsCore() {
		if r.ext == nil {
			r.ext = make(map[string]map[string]json.RawMessage)
		}
		m, seen := r.ext[p.URN]
		if !seen {
			raw, ok := field(r.top, p.URN)
			if ok {
				if err := json.Unmarshal(raw, &m); err != nil {
					return nil, false, fmt.Errorf("extension %s is not an object", p.URN)
				}
			}
			r.ext[p.URN] = m
		}
		if m == nil {
			return nil, false, nil
		}
		obj = m
	}
	v, ok := field(obj, p.Attr)
	return v, ok, nil
}

// at returns the value at p with the sub-attribute applied. For a
// multi-valued complex attribute ("emails.value") it takes the primary
// value, else the first.
func (r *resource) at(p Path) (json.RawMessage, bool, error) {
	v, ok, err := r.value(p)
	if !ok || err != nil || p.Sub == "" {
		return v, ok, err
	}
	v = bytes.TrimSpace(v)
	switch {
	case len(v) > 0 && v[0] == '{':
		var m map[string]json.RawMessage
		if err := json.Unmarshal(v, &m); err != nil {
			return nil, false, err
		}
		s, ok := field(m, p.Sub)
		return s, ok, nil
	case len(v) > 0 && v[0] == '[':
		var list []map[string]json.RawMessage
		if err := json.Unmarshal(v, &list); err != nil {
			return nil, false, fmt.Errorf("%s is not a list of objects", p.Attr)
		}
		var first json.RawMessage
		for _, m := range list {
			s, ok := field(m, p.Sub)
			if !ok {
				continue
			}
			if pr, ok := field(m, "primary"); ok && string(pr) == "true" {
				return s, true, nil
			}
			if first == nil {
				first = s
			}
		}
		return first, first != nil, nil
	}
	return nil, false, fmt.Errorf("%s has no sub-attribute %s (not an object)", p.Attr, p.Sub)
}

// str reads a string attribute.
func (r *resource) str(p Path) (string, bool, error) {
	v, ok, err := r.at(p)
	if !ok || err != nil {
		return "", ok, err
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", true, fmt.Errorf("not a string: %s", short(v))
	}
	return s, true, nil
}

// integer reads an integer attribute. A JSON integer or a string of
// decimal digits is accepted (some servers type every extension value as
// a string); fractions, exponents, signs and spaces are not.
func (r *resource) integer(p Path) (*int64, error) {
	v, ok, err := r.at(p)
	if !ok || err != nil {
		return nil, err
	}
	v = bytes.TrimSpace(v)
	digits := string(v)
	if len(v) > 0 && v[0] == '"' {
		if err := json.Unmarshal(v, &digits); err != nil {
			return nil, fmt.Errorf("not an integer: %s", short(v))
		}
	}
	if digits == "" || len(digits) > 12 {
		return nil, fmt.Errorf("not an integer in range: %s", short(v))
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			if i == 0 && digits[0] == '-' && len(digits) > 1 {
				continue // negative: parsed, then rejected as out of range
			}
			return nil, fmt.Errorf("not an integer: %s", short(v))
		}
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("not an integer: %s", short(v))
	}
	return &n, nil
}

// boolean reads a boolean. Microsoft Entra sends "True"/"False" strings.
func (r *resource) boolean(p Path) (*bool, error) {
	v, ok, err := r.at(p)
	if !ok || err != nil {
		return nil, err
	}
	var b bool
	if json.Unmarshal(v, &b) == nil {
		return &b, nil
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "true":
			b = true
			return &b, nil
		case "false":
			return &b, nil
		}
	}
	return nil, fmt.Errorf("not a boolean: %s", short(v))
}

// strings reads a multi-valued string attribute: a list of strings, a
// list of {"value": ...} objects, or a single string.
func (r *resource) strings(p Path) ([]string, error) {
	v, ok, err := r.value(p)
	if !ok || err != nil {
		return nil, err
	}
	sub := p.Sub
	if sub == "" {
		sub = "value"
	}
	var one string
	if json.Unmarshal(v, &one) == nil {
		return []string{one}, nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(v, &list); err != nil {
		return nil, fmt.Errorf("not a list: %s", short(v))
	}
	out := make([]string, 0, len(list))
	for _, e := range list {
		var s string
		if json.Unmarshal(e, &s) == nil {
			out = append(out, s)
			continue
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(e, &m) == nil {
			if sv, ok := field(m, sub); ok && json.Unmarshal(sv, &s) == nil {
				out = append(out, s)
				continue
			}
		}
		// One bad element is reported by validation as a bad key, not
		// a reason to drop the user's other keys.
		out = append(out, "\x00unreadable value "+short(e))
	}
	return out, nil
}

// members reads a group's members: ids of members whose type is User or
// absent. Nested groups (type Group) are not expanded.
func (r *resource) members() ([]string, bool, error) {
	v, ok := field(r.top, "members")
	if !ok {
		return nil, false, nil
	}
	var list []struct {
		Value json.RawMessage `json:"value"`
		Type  string          `json:"type"`
	}
	if err := json.Unmarshal(v, &list); err != nil {
		return nil, true, fmt.Errorf("members is not a list of objects")
	}
	ids := make([]string, 0, len(list))
	for _, m := range list {
		if strings.EqualFold(m.Type, "Group") {
			continue
		}
		var id string
		if json.Unmarshal(m.Value, &id) != nil || id == "" {
			continue
		}
		ids = append(ids, id)
	}
	return ids, true, nil
}

func short(v json.RawMessage) string {
	if len(v) > 60 {
		return string(v[:60]) + "..."
	}
	return string(v)
}
