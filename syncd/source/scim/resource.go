package scim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"
)

// resource is one SCIM resource with its values left undecoded until a
// configured path asks for them. SCIM attribute names and URNs are
// case-insensitive (RFC 7643 section 2.1), so lookups are too.
type resource struct {
	top object
	ext []extension // extensions read so far
	// slab backs the objects read out of the resource (extensions,
	// complex attributes); reset reuses it for the next record.
	slab object
	// in, when set, makes every id read one string per distinct id
	// (a full read's walks; intern.go).
	in *interner
	// idv and idErr are id()'s answer once asked (idSet): a walk, the
	// change recorder and the conversion all ask.
	idv   string
	idErr error
	idSet bool
}

// reset makes r the resource top, reusing its memory.
func (r *resource) reset(top object) {
	r.top, r.ext, r.slab = top, r.ext[:0], r.slab[:0]
	r.idv, r.idErr, r.idSet = "", nil, false
}

// object reads the object v into r's slab; ok is false when v is not an
// object.
func (r *resource) object(v []byte) (object, bool) {
	start := len(r.slab)
	var ok bool
	r.slab, ok = parseObject(r.slab, v)
	return r.slab[start:len(r.slab):len(r.slab)], ok
}

// extension is an extension object by the URN a path asked for it; m is
// nil when the resource has none.
type extension struct {
	urn string
	m   object
}

// parseResource reads one resource (a GET of a single record): raw is
// checked by encoding/json, then read in place (rawjson.go).
func parseResource(raw json.RawMessage) (*resource, error) {
	if !json.Valid(raw) {
		var v any
		return nil, json.Unmarshal(raw, &v)
	}
	if isNull(raw) {
		return nil, fmt.Errorf("resource is null")
	}
	top, ok := parseObject(nil, raw)
	if !ok {
		return nil, fmt.Errorf("resource is not a JSON object: %s", short(raw))
	}
	if top == nil {
		top = object{}
	}
	return &resource{top: top}, nil
}

// field returns m's value under name, matching the name exactly, else
// case-insensitively. A JSON null is the same as absent.
func field(m object, name string) (json.RawMessage, bool) {
	v, ok := m.lookup(name)
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
		m, err := r.extension(p.URN)
		if m == nil || err != nil {
			return nil, false, err
		}
		obj = m
	}
	v, ok := field(obj, p.Attr)
	return v, ok, nil
}

// extension is the extension object under urn, read once; nil when the
// resource has none.
func (r *resource) extension(urn string) (object, error) {
	for i := range r.ext {
		if r.ext[i].urn == urn {
			return r.ext[i].m, nil
		}
	}
	var m object
	if raw, ok := field(r.top, urn); ok {
		var isObj bool
		if m, isObj = r.object(raw); !isObj {
			return nil, fmt.Errorf("extension %s is not an object", urn)
		}
		if m == nil {
			m = object{}
		}
	}
	r.ext = append(r.ext, extension{urn: urn, m: m})
	return m, nil
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
		m, _ := r.object(v)
		s, ok := field(m, p.Sub)
		return s, ok, nil
	case len(v) > 0 && v[0] == '[':
		var first, primary json.RawMessage
		var m object
		notObjects := false
		eachElement(v, func(e []byte) {
			var ok bool
			if m, ok = parseObject(m[:0], e); !ok {
				notObjects = notObjects || !isNull(e)
				return
			}
			s, ok := field(m, p.Sub)
			if !ok || primary != nil {
				return
			}
			if pr, ok := field(m, "primary"); ok && string(pr) == "true" {
				primary = s
			}
			if first == nil {
				first = s
			}
		})
		if notObjects {
			return nil, false, fmt.Errorf("%s is not a list of objects", p.Attr)
		}
		if primary != nil {
			return primary, true, nil
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
	s, ok := unquote(v)
	if !ok {
		return "", true, fmt.Errorf("not a string: %s", short(v))
	}
	return s, true, nil
}

// scalar reads a string or a number as its text (a number's JSON
// spelling, which validation parses): "" when absent or null.
func (r *resource) scalar(p Path) (string, error) {
	v, ok, err := r.at(p)
	if !ok || err != nil {
		return "", err
	}
	v = bytes.TrimSpace(v)
	if s, ok := unquote(v); ok {
		return s, nil
	}
	if len(v) > 0 && len(v) <= 32 && (v[0] == '-' || v[0] >= '0' && v[0] <= '9') && json.Valid(v) {
		if d, why := wholeNumber(string(v)); why == "" {
			return d, nil // 1.5E2 is 150
		}
		return string(v), nil
	}
	return "", fmt.Errorf("not a string or a number: %s", short(v))
}

// integer reads an integer attribute: a JSON number whose value is a
// whole number, or a string of decimal digits (some servers type every
// extension value as a string). A JSON number is a number whatever its
// spelling: 20001.0 (a double serialised by Python) and 2.0001E4 (by
// Java's Double.toString) are 20001. Fractions are not integers; strings
// with fractions, exponents, signs other than '-' or spaces are refused.
func (r *resource) integer(p Path) (*int64, error) {
	v, ok, err := r.at(p)
	if !ok || err != nil {
		return nil, err
	}
	v = bytes.TrimSpace(v)
	var digits string
	if len(v) > 0 && v[0] == '"' {
		var ok bool
		if digits, ok = unquote(v); !ok {
			return nil, fmt.Errorf("not an integer: %s", short(v))
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
	} else {
		var why string
		digits, why = wholeNumber(string(v))
		if why != "" {
			return nil, fmt.Errorf("%s: %s", why, short(v))
		}
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("not an integer: %s", short(v))
	}
	return &n, nil
}

// wholeNumber rewrites a JSON number as plain decimal digits (with a
// leading '-' if negative) when its value is a whole number of at most
// 12 digits. It works on the text: no float rounding, and no huge
// exponent is ever expanded.
func wholeNumber(s string) (string, string) {
	const notInt, tooBig = "not an integer", "not an integer in range"
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	mant, exp, hasExp := strings.Cut(strings.ToLower(s), "e")
	intPart, frac, _ := strings.Cut(mant, ".")
	if intPart == "" || !allDigits(intPart) || !allDigits(frac) || (hasExp && exp == "") {
		return "", notInt
	}
	if strings.Trim(intPart+frac, "0") == "" {
		return "0", "" // zero, whatever the exponent
	}
	scale := 0
	if hasExp {
		e := strings.TrimPrefix(strings.TrimPrefix(exp, "+"), "-")
		if e == "" || !allDigits(e) {
			return "", notInt
		}
		e = strings.TrimLeft(e, "0")
		if len(e) > 4 {
			if strings.HasPrefix(exp, "-") {
				return "", notInt // 1e-99999: a fraction (or 0, if the digits are all 0)
			}
			return "", tooBig
		}
		scale, _ = strconv.Atoi(e)
		if strings.HasPrefix(exp, "-") {
			scale = -scale
		}
	}
	d := strings.TrimLeft(intPart+frac, "0")
	scale -= len(frac)
	for scale < 0 && strings.HasSuffix(d, "0") {
		d = d[:len(d)-1]
		scale++
	}
	if d == "" {
		return "0", ""
	}
	if scale < 0 {
		return "", notInt
	}
	if len(d)+scale > 12 {
		return "", tooBig
	}
	d += strings.Repeat("0", scale)
	if neg {
		d = "-" + d
	}
	return d, ""
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// flexBool is a JSON boolean, or "true"/"false" in any case (servers
// that type every value as a string).
type flexBool bool

func (b *flexBool) UnmarshalJSON(v []byte) error {
	var x bool
	if json.Unmarshal(v, &x) == nil {
		*b = flexBool(x)
		return nil
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "true":
			*b = true
			return nil
		case "false":
			*b = false
			return nil
		}
	}
	return fmt.Errorf("not a boolean: %s", short(v))
}

// flexInt is a JSON number that is a whole number, or a string of
// decimal digits.
type flexInt int

func (n *flexInt) UnmarshalJSON(v []byte) error {
	v = bytes.TrimSpace(v)
	var s string
	if json.Unmarshal(v, &s) == nil {
		v = []byte(strings.TrimSpace(s))
	}
	d, why := wholeNumber(string(v))
	if why != "" {
		return fmt.Errorf("%s: %s", why, short(v))
	}
	i, err := strconv.Atoi(d)
	if err != nil {
		return fmt.Errorf("not an integer: %s", short(v))
	}
	*n = flexInt(i)
	return nil
}

// boolean reads a boolean. Microsoft Entra sends "True"/"False" strings.
// An attribute sent twice under names differing only in case ("active":
// true, "Active": false) is false if any copy is not true: which one the
// provider meant is unknown, and active must never be true by a quirk.
func (r *resource) boolean(p Path) (*bool, error) {
	v, ok, err := r.at(p)
	if !ok || err != nil {
		return nil, err
	}
	if p.Sub == "" {
		obj := r.top
		if !p.IsCore() {
			obj, _ = r.extension(p.URN)
		}
		copies := 0
		for i := range obj {
			if obj[i].is(p.Attr, true) {
				copies++
			}
		}
		// Keys repeated exactly count as one (a map kept the last).
		last := map[string]json.RawMessage{}
		for i := 0; copies > 1 && i < len(obj); i++ {
			if obj[i].is(p.Attr, true) {
				last[obj[i].keyName()] = obj[i].val
			}
		}
		n, allTrue := 0, true
		for _, kv := range last {
			if !isNull(kv) {
				n++
				if b, err := parseBool(kv); err != nil || !*b {
					allTrue = false
				}
			}
		}
		if n > 1 && !allTrue {
			f := false
			return &f, nil
		}
	}
	return parseBool(v)
}

func parseBool(v json.RawMessage) (*bool, error) {
	var b bool
	switch string(bytes.TrimSpace(v)) {
	case "true":
		b = true
		return &b, nil
	case "false":
		return &b, nil
	}
	if s, ok := unquote(v); ok {
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
	if one, ok := unquote(v); ok {
		return []string{one}, nil
	}
	out := []string{}
	var m object
	if !eachElement(v, func(e []byte) {
		if s, ok := unquote(e); ok {
			out = append(out, s)
			return
		}
		var isObj bool
		if m, isObj = parseObject(m[:0], e); isObj {
			if sv, ok := field(m, sub); ok {
				if s, ok := unquote(sv); ok {
					out = append(out, s)
					return
				}
			}
		}
		// One bad element is reported by validation as a bad key, not
		// a reason to drop the user's other keys.
		out = append(out, "\x00unreadable value "+short(e))
	}) {
		return nil, fmt.Errorf("not a list: %s", short(v))
	}
	return out, nil
}

// id reads the resource's "id". RFC 7643 makes it a string; a JSON
// integer is taken as its decimal text (servers that expose a database
// key as a number).
func (r *resource) id() (string, error) {
	if !r.idSet {
		r.idv, r.idErr, r.idSet = r.readID()
	}
	return r.idv, r.idErr
}

func (r *resource) readID() (string, error, bool) {
	v, ok := field(r.top, "id")
	if !ok {
		return "", fmt.Errorf("no id"), true
	}
	id, ok := idString(v, r.in)
	if !ok {
		return "", fmt.Errorf("id is not a string: %s", short(v)), true
	}
	return id, nil, true
}

// idString reads a resource id: a JSON string, or a JSON integer as its
// decimal text. ok is false for anything else and for "". With in, the
// same id is the same string (intern.go).
func idString(v json.RawMessage, in *interner) (string, bool) {
	v = bytes.TrimSpace(v)
	if in != nil && len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		if b := v[1 : len(v)-1]; len(b) > 0 && plainString(b) {
			return in.bytes(b), true
		}
	}
	if s, ok := unquote(v); ok {
		if in != nil {
			s = in.str(s)
		}
		return s, s != ""
	}
	if len(v) == 0 || len(v) > 20 {
		return "", false
	}
	for i, ch := range v {
		if (ch < '0' || ch > '9') && !(i == 0 && ch == '-' && len(v) > 1) {
			return "", false
		}
	}
	if in != nil {
		return in.bytes(v), true
	}
	return string(v), true
}

// Kinds of resource a reference (a member, a user's group) points at.
const (
	refUser    = "User"
	refGroup   = "Group"
	refUnknown = ""
)

// reference is one value of a multi-valued reference attribute (a
// group's members, a user's groups): value, $ref and type as sent.
type reference struct {
	id, typ string
	kind    string // from type, else from the $ref path
}

// readRefs reads a multi-valued reference attribute, calling fn with
// each value in order. Sub-attribute names are case-insensitive; each
// element is an object, or a bare id string. The id is "value", else the
// last segment of "$ref" (RFC 7643 requires neither). The kind is "type"
// when given, else what the $ref path names (.../<usersEndpoint>/id or
// .../<groupsEndpoint>/id). With in, ids are interned (intern.go).
func readRefs(v json.RawMessage, usersEP, groupsEP string, in *interner, fn func(reference)) error {
	// Member lists are most of a full read's bytes (issue 18): each
	// element is read in place, into one reused object, and handed on
	// without a list of them being made.
	var m object
	if !eachElement(v, func(e []byte) {
		var ref reference
		var isObj bool
		if m, isObj = parseObject(m[:0], e); isObj {
			ref = refOf(m, usersEP, groupsEP, in)
		} else if id, ok := idString(e, in); ok {
			ref.id = id
		} // null or unreadable: no id
		fn(ref)
	}) {
		return fmt.Errorf("not a list: %s", short(v))
	}
	return nil
}

// refTypes are the type values read without a copy: the text of a
// plain JSON string equal to one of them up to case is the word itself.
var refTypes = []string{refUser, refGroup, "direct", "indirect"}

// refType reads a reference's type.
func refType(v json.RawMessage) (string, bool) {
	v = bytes.TrimSpace(v)
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		in := v[1 : len(v)-1]
		for _, t := range refTypes {
			if len(in) == len(t) && strings.EqualFold(string(in), t) {
				if string(in) == t {
					return t, true
				}
				break
			}
		}
	}
	return unquote(v)
}

// refOf reads one reference object: value, type and $ref.
func refOf(m object, usersEP, groupsEP string, in *interner) reference {
	var ref reference
	if v, ok := field(m, "value"); ok {
		ref.id, _ = idString(v, in)
	}
	if v, ok := field(m, "type"); ok {
		ref.typ, _ = refType(v)
	}
	switch {
	case strings.EqualFold(ref.typ, refUser):
		ref.kind = refUser
	case strings.EqualFold(ref.typ, refGroup):
		ref.kind = refGroup
	}
	if ref.kind != refUnknown && ref.id != "" {
		return ref // $ref would add nothing
	}
	var refID, refKind string
	if v, ok := field(m, "$ref"); ok {
		if s, ok := unquote(v); ok {
			refID, refKind = parseRef(s, usersEP, groupsEP)
			if in != nil && refID != "" {
				refID = in.str(refID)
			}
		}
	}
	if ref.kind == refUnknown {
		ref.kind = refKind
	}
	if ref.id == "" && refKind != refUnknown {
		ref.id = refID
	}
	return ref
}

// unquote reads a JSON string. The values here come from a document the
// decoder has already checked, so a string with no escape in it is its
// own text (when it is valid UTF-8: the decoder would replace bad bytes).
func unquote(v json.RawMessage) (string, bool) {
	v = bytes.TrimSpace(v)
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		if in := v[1 : len(v)-1]; plainString(in) {
			return string(in), true
		}
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return "", false
	}
	return s, true
}

// plainString reports whether the inside of a quoted JSON string (from a
// checked document) is its own text: no escape, valid UTF-8.
func plainString(in []byte) bool {
	return bytes.IndexByte(in, '\\') < 0 && bytes.IndexByte(in, '"') < 0 && utf8.Valid(in)
}

// parseRef splits a resource URI ("https://h/scim/v2/Users/2819c223",
// relative ones too) into the id and the kind its endpoint names;
// refUnknown when the endpoint is neither.
func parseRef(s, usersEP, groupsEP string) (id, kind string) {
	u, err := url.Parse(s)
	if err != nil {
		return "", refUnknown
	}
	segs := strings.Split(strings.TrimRight(u.EscapedPath(), "/"), "/")
	if len(segs) < 2 {
		return "", refUnknown
	}
	id, err = url.PathUnescape(segs[len(segs)-1])
	if err != nil || id == "" {
		return "", refUnknown
	}
	switch ep := segs[len(segs)-2]; {
	case strings.EqualFold(ep, usersEP):
		return id, refUser
	case strings.EqualFold(ep, groupsEP):
		return id, refGroup
	}
	return "", refUnknown
}

// members reads a group's members: the ids of members that are not
// groups. Nested groups (type Group, or a $ref into the groups endpoint)
// are not expanded. unresolved counts members with no usable id (only
// a display name, or a $ref to an unknown endpoint): display names are
// not userNames, so they are never matched to users.
func (r *resource) members(usersEP, groupsEP string) (ids []string, unresolved int, has bool, err error) {
	v, ok := field(r.top, "members")
	if !ok {
		return nil, 0, false, nil
	}
	// Sized by a count of the elements first: a list grown by append
	// would keep up to a quarter more than its members for as long as
	// the directory is held (100,000 in one group).
	n := 0
	eachElement(v, func([]byte) { n++ })
	ids = make([]string, 0, n)
	err = readRefs(v, usersEP, groupsEP, r.in, func(m reference) {
		switch {
		case m.kind == refGroup:
		case m.id == "":
			unresolved++
		default:
			ids = append(ids, m.id)
		}
	})
	if err != nil {
		return nil, 0, true, fmt.Errorf("members: %v", err)
	}
	return ids, unresolved, true, nil
}

// groupsOf reads a user's read-only "groups" attribute (RFC 7643 section
// 4.1.2): the ids of the groups that list the user directly. Indirect
// memberships (through nested groups) are left out, as the group
// listing's members do not expand nested groups either.
func (r *resource) groupsOf(usersEP, groupsEP string) (ids []string, has bool, err error) {
	v, ok := field(r.top, "groups")
	if !ok {
		return nil, false, nil
	}
	err = readRefs(v, usersEP, groupsEP, r.in, func(g reference) {
		if g.id == "" || strings.EqualFold(g.typ, "indirect") {
			return
		}
		ids = append(ids, g.id)
	})
	if err != nil {
		return nil, true, fmt.Errorf("groups: %v", err)
	}
	return ids, true, nil
}

// short is a value for an error or a rejection's detail: at most 60
// bytes, valid UTF-8 (raw JSON keeps invalid bytes, and a cut may split a
// character; found by FuzzListPage).
func short(v json.RawMessage) string {
	s := string(v)
	if len(s) > 60 {
		s = s[:60] + "..."
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}
