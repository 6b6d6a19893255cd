package scimserver

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// filterExpr is a parsed RFC 7644 §3.4.2.2 filter.
type filterExpr interface {
	match(rs *resourceSchema, m map[string]any) bool
}

type andExpr struct{ l, r filterExpr }
type orExpr struct{ l, r filterExpr }
type notExpr struct{ e filterExpr }

// cmpExpr is "attrPath op value" or "attrPath pr".
type cmpExpr struct {
	path  attrPath
	known bool
	op    string // lower case
	val   any    // string, float64, bool or nil
}

// valuePathExpr is "attr[filter]": some element of a multi-valued complex
// attribute matches the inner filter.
type valuePathExpr struct {
	top   string
	inner filterExpr
	// elem evaluates inner against one element of the attribute.
	elem *resourceSchema
}

func (e andExpr) match(rs *resourceSchema, m map[string]any) bool {
	return e.l.match(rs, m) && e.r.match(rs, m)
}
func (e orExpr) match(rs *resourceSchema, m map[string]any) bool {
	return e.l.match(rs, m) || e.r.match(rs, m)
}
func (e notExpr) match(rs *resourceSchema, m map[string]any) bool { return !e.e.match(rs, m) }

// filterLimits are what a restricted server (AWS-style) accepts.
type filterLimits struct {
	eqAndOnly   bool // only "eq", joined by "and"
	noExtension bool // extension attributes cannot be filtered on
	noMembers   bool // members cannot be filtered on
}

type filterParser struct {
	rs     *resourceSchema
	toks   []string
	pos    int
	limits filterLimits
	// sub is non-nil inside a valuePath: paths are relative to it.
	sub *attrDef
}

// parseFilter parses f against the resource's schema.
func parseFilter(rs *resourceSchema, f string, limits filterLimits) (filterExpr, error) {
	toks, err := tokenize(f)
	if err != nil {
		return nil, err
	}
	p := &filterParser{rs: rs, toks: toks, limits: limits}
	e, err := p.or()
	if err != nil {
		return nil, err
	}
	if p.pos != len(p.toks) {
		return nil, fmt.Errorf("unexpected %q at token %d", p.toks[p.pos], p.pos+1)
	}
	return e, nil
}

func (p *filterParser) peek() string {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	return ""
}

func (p *filterParser) next() string {
	t := p.peek()
	p.pos++
	return t
}

func (p *filterParser) or() (filterExpr, error) {
	l, err := p.and()
	for err == nil && strings.EqualFold(p.peek(), "or") {
		if p.limits.eqAndOnly {
			return nil, fmt.Errorf("operator \"or\" is not supported")
		}
		p.next()
		var r filterExpr
		r, err = p.and()
		l = orExpr{l, r}
	}
	return l, err
}

func (p *filterParser) and() (filterExpr, error) {
	l, err := p.unary()
	for err == nil && strings.EqualFold(p.peek(), "and") {
		p.next()
		var r filterExpr
		r, err = p.unary()
		l = andExpr{l, r}
	}
	return l, err
}

func (p *filterParser) unary() (filterExpr, error) {
	t := p.next()
	switch {
	case t == "":
		return nil, fmt.Errorf("filter ends early")
	case strings.EqualFold(t, "not"):
		if p.limits.eqAndOnly {
			return nil, fmt.Errorf("operator \"not\" is not supported")
		}
		if p.next() != "(" {
			return nil, fmt.Errorf(`"not" must be followed by "("`)
		}
		e, err := p.or()
		if err != nil {
			return nil, err
		}
		if p.next() != ")" {
			return nil, fmt.Errorf(`missing ")"`)
		}
		return notExpr{e}, nil
	case t == "(":
		if p.limits.eqAndOnly {
			return nil, fmt.Errorf("grouping is not supported")
		}
		e, err := p.or()
		if err != nil {
			return nil, err
		}
		if p.next() != ")" {
			return nil, fmt.Errorf(`missing ")"`)
		}
		return e, nil
	case t == ")" || t == "[" || t == "]":
		return nil, fmt.Errorf("unexpected %q", t)
	}
	if p.peek() == "[" {
		return p.valuePath(t)
	}
	return p.attrExp(t)
}

func (p *filterParser) valuePath(attr string) (filterExpr, error) {
	if p.sub != nil || p.limits.eqAndOnly {
		return nil, fmt.Errorf("value filter %s[...] is not supported here", attr)
	}
	ap, ok := p.rs.parsePath(attr)
	if p.limits.noMembers && ap.top == "members" {
		return nil, fmt.Errorf("filtering on members is not supported")
	}
	d := p.rs.def(ap)
	if !ok || ap.sub != "" || !d.MultiValued || len(d.SubAttributes) == 0 {
		return nil, fmt.Errorf("%q is no multi-valued complex attribute", attr)
	}
	p.next() // "["
	p.sub = d
	inner, err := p.or()
	p.sub = nil
	if err != nil {
		return nil, err
	}
	if p.next() != "]" {
		return nil, fmt.Errorf(`missing "]" after %s[`, attr)
	}
	return valuePathExpr{top: ap.top, inner: inner, elem: &resourceSchema{ext: p.rs.ext, sub: d}}, nil
}

var filterOps = map[string]bool{"eq": true, "ne": true, "co": true, "sw": true, "ew": true, "gt": true, "ge": true, "lt": true, "le": true, "pr": true}

func (p *filterParser) attrExp(attr string) (filterExpr, error) {
	op := strings.ToLower(p.next())
	if !filterOps[op] {
		return nil, fmt.Errorf("unknown operator %q after %s", op, attr)
	}
	if p.limits.eqAndOnly && op != "eq" {
		return nil, fmt.Errorf("operator %q is not supported, only eq", op)
	}
	e := cmpExpr{op: op}
	if p.sub != nil {
		e.path = attrPath{sub: strings.ToLower(attr)}
		e.known = p.sub.subDef(attr) != nil
	} else {
		e.path, e.known = p.rs.parsePath(attr)
		if p.limits.noExtension && e.path.top == strings.ToLower(p.rs.ext.ID) {
			return nil, fmt.Errorf("filtering on extension attribute %s is not supported", attr)
		}
		if p.limits.noMembers && e.path.top == "members" {
			return nil, fmt.Errorf("filtering on members is not supported")
		}
	}
	if op == "pr" {
		return e, nil
	}
	v := p.next()
	if v == "" || v == "(" || v == ")" || v == "[" || v == "]" {
		return nil, fmt.Errorf("missing value after %s %s", attr, op)
	}
	if err := json.Unmarshal([]byte(v), &e.val); err != nil {
		return nil, fmt.Errorf("bad value %s after %s %s (strings need double quotes)", v, attr, op)
	}
	if _, isObj := e.val.(map[string]any); isObj {
		return nil, fmt.Errorf("bad value %s after %s %s", v, attr, op)
	}
	return e, nil
}

// tokenize splits a filter into words, quoted strings (kept with their
// quotes) and the brackets ( ) [ ].
func tokenize(f string) ([]string, error) {
	var toks []string
	for i := 0; i < len(f); {
		c := f[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '(' || c == ')' || c == '[' || c == ']':
			toks = append(toks, string(c))
			i++
		case c == '"':
			j := i + 1
			for ; j < len(f) && f[j] != '"'; j++ {
				if f[j] == '\\' {
					j++
				}
			}
			if j >= len(f) {
				return nil, fmt.Errorf("unterminated string starting at byte %d", i)
			}
			toks = append(toks, f[i:j+1])
			i = j + 1
		default:
			j := i
			for j < len(f) && !strings.ContainsRune(" \t\r\n()[]\"", rune(f[j])) {
				j++
			}
			toks = append(toks, f[i:j])
			i = j
		}
	}
	return toks, nil
}

func (e valuePathExpr) match(rs *resourceSchema, m map[string]any) bool {
	for _, el := range lookupCI(m, e.top) {
		em, ok := el.(map[string]any)
		if ok && e.inner.match(e.elem, em) {
			return true
		}
	}
	return false
}

func (e cmpExpr) match(rs *resourceSchema, m map[string]any) bool {
	var vals []any
	var d *attrDef
	if rs.sub != nil {
		// Inside a valuePath: m is one element.
		vals = lookupCI(m, e.path.sub)
		d = rs.sub.subDef(e.path.sub)
	} else {
		if !e.known {
			return e.op == "ne"
		}
		d = rs.def(e.path)
		for _, top := range lookupCI(m, e.path.top) {
			if e.path.sub == "" {
				vals = append(vals, top)
				continue
			}
			if tm, ok := top.(map[string]any); ok {
				vals = append(vals, lookupCI(tm, e.path.sub)...)
			}
		}
	}
	if e.op == "pr" {
		for _, v := range vals {
			if v != nil && v != "" {
				return true
			}
		}
		return false
	}
	if e.op == "ne" {
		return !(cmpExpr{path: e.path, known: e.known, op: "eq", val: e.val}).matchVals(d, vals)
	}
	return e.matchVals(d, vals)
}

func (e cmpExpr) matchVals(d *attrDef, vals []any) bool {
	for _, v := range vals {
		if compare(d, e.op, v, e.val) {
			return true
		}
	}
	return false
}

// compare applies op to an attribute value and a filter value.
func compare(d *attrDef, op string, have, want any) bool {
	caseExact := d != nil && d.CaseExact
	isTime := d != nil && d.Type == typeDateTime
	switch w := want.(type) {
	case nil:
		return op == "eq" && have == nil
	case bool:
		h, ok := have.(bool)
		return ok && op == "eq" && h == w
	case float64:
		h, ok := toFloat(have)
		if !ok {
			return false
		}
		return ordered(op, cmpFloat(h, w))
	case string:
		h, ok := have.(string)
		if !ok {
			return false
		}
		if isTime {
			ht, err1 := time.Parse(time.RFC3339Nano, h)
			wt, err2 := time.Parse(time.RFC3339Nano, w)
			if err1 == nil && err2 == nil {
				return ordered(op, ht.Compare(wt))
			}
		}
		if !caseExact {
			h, w = strings.ToLower(h), strings.ToLower(w)
		}
		switch op {
		case "co":
			return strings.Contains(h, w)
		case "sw":
			return strings.HasPrefix(h, w)
		case "ew":
			return strings.HasSuffix(h, w)
		}
		return ordered(op, strings.Compare(h, w))
	}
	return false
}

func ordered(op string, c int) bool {
	switch op {
	case "eq":
		return c == 0
	case "gt":
		return c > 0
	case "ge":
		return c >= 0
	case "lt":
		return c < 0
	case "le":
		return c <= 0
	}
	return false
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func toFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

// lookupCI returns the value under key (case-insensitively), flattened
// when it is multi-valued.
func lookupCI(m map[string]any, key string) []any {
	v, ok := m[key]
	if !ok {
		for k, kv := range m {
			if strings.EqualFold(k, key) {
				v, ok = kv, true
				break
			}
		}
	}
	if !ok {
		return nil
	}
	switch x := v.(type) {
	case []any:
		return x
	case []string:
		out := make([]any, len(x))
		for i, s := range x {
			out[i] = s
		}
		return out
	}
	return []any{v}
}
