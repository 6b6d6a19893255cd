package receiver

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	escim "github.com/elimity-com/scim"
	scimerr "github.com/elimity-com/scim/errors"
	eschema "github.com/elimity-com/scim/schema"
	"github.com/scim2/filter-parser/v2"
)

// PATCH (RFC 7644 section 3.5.2) applied to a stored document. The library
// parses and validates each operation against the schemas (paths, value
// types, string booleans, lower-cased op names); this file only applies
// them. Group members never reach the document: the group handler turns
// member operations into rows (members.go).

// docSchemas canonicalises attribute names per schema URN.
type docSchemas struct {
	core string
	all  map[string]eschema.Schema // URN -> schema (core and extensions)
}

func (d docSchemas) canonical(uri, name string) string {
	s, ok := d.all[uri]
	if uri == "" {
		s, ok = d.all[d.core]
	}
	if ok {
		if a, found := s.Attributes.ContainsAttribute(name); found {
			return a.Name()
		}
	}
	return name
}

// container is the map an attribute path lives in: the document for
// core attributes, doc[URN] for an extension's.
func (d docSchemas) container(doc map[string]any, uri string, create bool) map[string]any {
	if uri == "" || uri == d.core {
		return doc
	}
	if m, ok := doc[uri].(map[string]any); ok {
		return m
	}
	if !create {
		return nil
	}
	m := map[string]any{}
	doc[uri] = m
	return m
}

func (d docSchemas) isMulti(uri, name string) bool {
	s, ok := d.all[uri]
	if uri == "" {
		s, ok = d.all[d.core]
	}
	if !ok {
		return false
	}
	a, found := s.Attributes.ContainsAttribute(name)
	return found && a.MultiValued()
}

func badPatch(format string, a ...any) error {
	e := scimerr.ScimErrorInvalidValue
	e.Detail = fmt.Sprintf(format, a...)
	return e
}

// applyOp applies one validated operation to doc.
func (d docSchemas) applyOp(doc map[string]any, op escim.PatchOperation) error {
	if op.Path == nil {
		if op.Op == escim.PatchOperationRemove {
			e := scimerr.ScimErrorNoTarget
			e.Detail = "remove needs a path"
			return e
		}
		m, ok := op.Value.(map[string]any)
		if !ok {
			return badPatch("%s without a path needs an object value", op.Op)
		}
		for k, v := range m {
			if ext, ok := d.all[k]; ok && k != d.core {
				sub, ok := v.(map[string]any)
				if !ok {
					return badPatch("%s: not an object", k)
				}
				for k2, v2 := range sub {
					uri := ext.ID
					p := filter.Path{AttributePath: filter.AttributePath{URIPrefix: &uri, AttributeName: k2}}
					if err := d.applyPath(doc, op.Op, p, v2); err != nil {
						return err
					}
				}
				continue
			}
			p, err := filter.ParsePath([]byte(k))
			if err != nil {
				return badPatch("attribute path %q: %v", k, err)
			}
			if err := d.applyPath(doc, op.Op, p, v); err != nil {
				return err
			}
		}
		return nil
	}
	return d.applyPath(doc, op.Op, *op.Path, op.Value)
}

func (d docSchemas) applyPath(doc map[string]any, op string, p filter.Path, value any) error {
	uri := p.AttributePath.URI()
	c := d.container(doc, uri, op != escim.PatchOperationRemove)
	if c == nil {
		return nil // removing from an extension the resource does not have
	}
	name := d.canonical(uri, p.AttributePath.AttributeName)
	key := findKey(c, name)
	sub := p.AttributePath.SubAttributeName()

	if p.ValueExpression != nil {
		return d.applyFiltered(c, key, op, p, value)
	}
	if sub != "" {
		m, _ := c[key].(map[string]any)
		if op == escim.PatchOperationRemove {
			if m != nil {
				delete(m, findKey(m, sub))
			}
			return nil
		}
		if m == nil {
			m = map[string]any{}
			c[key] = m
		}
		m[findKey(m, sub)] = value
		return nil
	}
	multi := d.isMulti(uri, name)
	switch op {
	case escim.PatchOperationRemove:
		items, isList := value.([]any)
		if !multi || value == nil || !isList || len(items) == 0 {
			delete(c, key)
			return nil
		}
		// Entra: remove with a path and a value list removes those values.
		cur, _ := c[key].([]any)
		var keep []any
		for _, it := range cur {
			if !containsItem(items, it) {
				keep = append(keep, it)
			}
		}
		if len(keep) == 0 {
			delete(c, key)
		} else {
			c[key] = keep
		}
	case escim.PatchOperationReplace:
		if value == nil {
			delete(c, key)
		} else {
			c[key] = value
		}
	case escim.PatchOperationAdd:
		if multi {
			items, _ := value.([]any)
			cur, _ := c[key].([]any)
			for _, it := range items {
				if !containsItem(cur, it) {
					cur = append(cur, it)
				}
			}
			c[key] = cur
			return nil
		}
		if nm, ok := value.(map[string]any); ok {
			if m, ok := c[key].(map[string]any); ok {
				for k, v := range nm {
					m[findKey(m, k)] = v
				}
				return nil
			}
		}
		c[key] = value
	default:
		return badPatch("op %q is not add, replace or remove", op)
	}
	return nil
}

// applyFiltered handles attr[filter] and attr[filter].sub paths.
func (d docSchemas) applyFiltered(c map[string]any, key, op string, p filter.Path, value any) error {
	cur, _ := c[key].([]any)
	sub := p.SubAttributeName()
	matched := false
	var keep []any
	for _, it := range cur {
		if !matchItem(it, p.ValueExpression) {
			keep = append(keep, it)
			continue
		}
		matched = true
		m, _ := it.(map[string]any)
		switch {
		case op == escim.PatchOperationRemove && sub == "":
			continue // drop the item
		case op == escim.PatchOperationRemove:
			if m != nil {
				delete(m, findKey(m, sub))
			}
		case sub != "":
			if m != nil {
				m[findKey(m, sub)] = value
			}
		default:
			if nm, ok := value.(map[string]any); ok && m != nil {
				for k, v := range nm {
					m[findKey(m, k)] = v
				}
			}
		}
		keep = append(keep, it)
	}
	if !matched && op != escim.PatchOperationRemove {
		// Entra replaces emails[type eq "work"].value on a user with no
		// work email: the item is created from the filter's eq terms.
		item := map[string]any{}
		eqTerms(p.ValueExpression, item)
		if sub != "" {
			item[sub] = value
		} else if nm, ok := value.(map[string]any); ok {
			for k, v := range nm {
				item[k] = v
			}
		}
		keep = append(keep, item)
	}
	if len(keep) == 0 {
		delete(c, key)
	} else {
		c[key] = keep
	}
	return nil
}

// eqTerms collects attr eq "v" terms joined by and.
func eqTerms(e filter.Expression, into map[string]any) {
	switch e := e.(type) {
	case *filter.AttributeExpression:
		if e.Operator == filter.EQ {
			into[e.AttributePath.AttributeName] = e.CompareValue
		}
	case *filter.LogicalExpression:
		if e.Operator == filter.AND {
			eqTerms(e.Left, into)
			eqTerms(e.Right, into)
		}
	}
}

// findKey is the key in m equal to name ignoring case, or name.
func findKey(m map[string]any, name string) string {
	if _, ok := m[name]; ok {
		return name
	}
	for k := range m {
		if strings.EqualFold(k, name) {
			return k
		}
	}
	return name
}

// containsItem compares multi-valued items by their "value" when both
// have one (members, emails), else by deep equality.
func containsItem(list []any, it any) bool {
	iv, hasV := itemValue(it)
	for _, x := range list {
		if xv, ok := itemValue(x); ok && hasV {
			if strings.EqualFold(xv, iv) {
				return true
			}
			continue
		}
		if reflect.DeepEqual(normalize(x), normalize(it)) {
			return true
		}
	}
	return false
}

func itemValue(it any) (string, bool) {
	switch v := it.(type) {
	case string:
		return v, true
	case map[string]any:
		if s, ok := v[findKey(v, "value")].(string); ok {
			return s, true
		}
	}
	return "", false
}

func normalize(v any) any {
	b, _ := json.Marshal(v)
	var out any
	json.Unmarshal(b, &out)
	return out
}

// matchItem evaluates a value filter against one multi-valued item. A
// simple item (a string) is its own "value".
func matchItem(it any, e filter.Expression) bool {
	m, ok := it.(map[string]any)
	if !ok {
		m = map[string]any{"value": it}
	}
	return matchExpr(m, e)
}

// matchExpr evaluates a SCIM filter against a resource or item. String
// comparisons ignore case (userName, emails and displayName are
// caseExact=false; ids compared this way cannot collide in practice).
func matchExpr(m map[string]any, e filter.Expression) bool {
	switch e := e.(type) {
	case *filter.LogicalExpression:
		if e.Operator == filter.AND {
			return matchExpr(m, e.Left) && matchExpr(m, e.Right)
		}
		return matchExpr(m, e.Left) || matchExpr(m, e.Right)
	case *filter.NotExpression:
		return !matchExpr(m, e.Expression)
	case *filter.ValuePath:
		c := m
		if u := e.AttributePath.URI(); u != "" {
			c, _ = m[findKey(m, u)].(map[string]any)
		}
		list, _ := c[findKey(c, e.AttributePath.AttributeName)].([]any)
		for _, it := range list {
			if matchItem(it, e.ValueFilter) {
				return true
			}
		}
		return false
	case *filter.AttributeExpression:
		c := m
		if u := e.AttributePath.URI(); u != "" {
			if x, ok := m[findKey(m, u)].(map[string]any); ok {
				c = x
			} else {
				return false
			}
		}
		v, ok := c[findKey(c, e.AttributePath.AttributeName)]
		if !ok {
			return false
		}
		sub := e.AttributePath.SubAttributeName()
		var vals []any
		switch x := v.(type) {
		case []any:
			for _, it := range x {
				if sub == "" {
					vals = append(vals, it)
				} else if im, ok := it.(map[string]any); ok {
					if sv, ok := im[findKey(im, sub)]; ok {
						vals = append(vals, sv)
					}
				} else if strings.EqualFold(sub, "value") {
					vals = append(vals, it)
				}
			}
		case map[string]any:
			if sub != "" {
				if sv, ok := x[findKey(x, sub)]; ok {
					vals = append(vals, sv)
				}
			}
		default:
			vals = append(vals, v)
		}
		for _, x := range vals {
			if compare(x, e.Operator, e.CompareValue) {
				return true
			}
		}
		return false
	}
	return false
}

func compare(v any, op filter.CompareOperator, ref any) bool {
	if op == filter.PR {
		return v != nil && v != ""
	}
	if b, ok := v.(bool); ok {
		rb, ok := ref.(bool)
		switch op {
		case filter.EQ:
			return ok && b == rb
		case filter.NE:
			return !ok || b != rb
		}
		return false
	}
	// Dates (meta.lastModified gt "...") and numbers (uidNumber ge 20000)
	// compare as what they are; anything else as case-folded text.
	if c, ok := typedCompare(v, ref); ok {
		switch op {
		case filter.EQ:
			return c == 0
		case filter.NE:
			return c != 0
		case filter.GT:
			return c > 0
		case filter.GE:
			return c >= 0
		case filter.LT:
			return c < 0
		case filter.LE:
			return c <= 0
		}
	}
	vs := strings.ToLower(fmt.Sprint(v))
	rs := strings.ToLower(fmt.Sprint(ref))
	switch op {
	case filter.EQ:
		return vs == rs
	case filter.NE:
		return vs != rs
	case filter.CO:
		return strings.Contains(vs, rs)
	case filter.SW:
		return strings.HasPrefix(vs, rs)
	case filter.EW:
		return strings.HasSuffix(vs, rs)
	case filter.GT:
		return vs > rs
	case filter.GE:
		return vs >= rs
	case filter.LT:
		return vs < rs
	case filter.LE:
		return vs <= rs
	}
	return false
}

// typedCompare compares two RFC 3339 times or two numbers: -1, 0, 1.
func typedCompare(v, ref any) (int, bool) {
	vs, vok := v.(string)
	rs, rok := ref.(string)
	if vok && rok {
		vt, err1 := time.Parse(time.RFC3339Nano, vs)
		rt, err2 := time.Parse(time.RFC3339Nano, rs)
		if err1 != nil || err2 != nil {
			return 0, false
		}
		return vt.Compare(rt), true
	}
	vn, vok := floatOf(v)
	rn, rok := floatOf(ref)
	if !vok || !rok {
		return 0, false
	}
	switch {
	case vn < rn:
		return -1, true
	case vn > rn:
		return 1, true
	}
	return 0, true
}

func floatOf(v any) (float64, bool) {
	switch n := v.(type) {
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}
