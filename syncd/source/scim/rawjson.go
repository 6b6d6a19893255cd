package scim

// Reading a listing without decoding it (issue 18).
//
// Decisions:
//
//   - A page is checked whole by encoding/json (json.Unmarshal validates
//     the document before it calls listPage.UnmarshalJSON), then walked in
//     place: an object is a slice of (key, value) pairs whose values are
//     sub-slices of the page, never copied and never decoded until a
//     configured path asks for them. The map[string]json.RawMessage this
//     replaces cost a map, a copy of every value and a string per key for
//     every resource and every member of every group: at 100,000 users and
//     10,000 groups most of a full read's CPU was the collector sweeping
//     those.
//   - The walker trusts the document's structure only because it was
//     validated first; it never recurses (a container is skipped by
//     counting brackets), so a hostile nesting depth costs nothing more
//     than encoding/json's own limit. Strings are unescaped by
//     encoding/json whenever they hold a backslash or bytes that are not
//     valid UTF-8 (replaced with U+FFFD as before), so what a value reads
//     as is what encoding/json makes of it.
//   - Key lookups keep the semantics of the map they replace: an exact
//     match wins (the last one when a key is repeated, as a map keeps the
//     last), else a case-insensitive one (RFC 7643 section 2.1). A key
//     written with escapes ("act\u0069ve") is unescaped before it is
//     compared, as encoding/json did.
//   - A page's body is read into a buffer its walk keeps from page to
//     page; nothing read from a page outlives the conversion of its
//     records (every string taken out of it is a copy).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// member is one key and value of a JSON object: key is the key as
// written, quotes included; val the value, a sub-slice of the document.
type member struct {
	key, val []byte
}

// object is a JSON object's members in document order.
type object []member

// keyName is the key's text: itself when written without escapes.
func (m *member) keyName() string {
	k := m.key[1 : len(m.key)-1]
	if plainKey(k) {
		return string(k)
	}
	var s string
	if json.Unmarshal(m.key, &s) != nil {
		return string(k)
	}
	return s
}

// is reports whether the key is name, exactly (fold false) or ignoring
// case.
func (m *member) is(name string, fold bool) bool {
	k := m.key[1 : len(m.key)-1]
	if !plainKey(k) {
		s := m.keyName()
		return s == name || fold && strings.EqualFold(s, name)
	}
	if !fold {
		return string(k) == name
	}
	if len(k) != len(name) && asciiBytes(k) && asciiString(name) {
		// Unequal lengths are unequal up to ASCII case; only other
		// letters (the Kelvin sign is a 3-byte "k") fold across
		// lengths. Asking strings.EqualFold made a copy of the key
		// for every key compared (issue 18).
		return false
	}
	if len(k) == len(name) {
		ascii := true
		for i := 0; i < len(k); i++ {
			a, b := k[i], name[i]
			if a >= 0x80 || b >= 0x80 {
				ascii = false
				break
			}
			if a != b && lower(a) != lower(b) {
				return false
			}
		}
		if ascii {
			return true
		}
	}
	return strings.EqualFold(string(k), name)
}

func asciiBytes(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

func asciiString(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// plainKey reports whether a key's text is itself: no escape, and valid
// UTF-8 (encoding/json replaces bad bytes with U+FFFD).
func plainKey(k []byte) bool {
	return bytes.IndexByte(k, '\\') < 0 && utf8.Valid(k)
}

// lastFold is the value of the last key that is name ignoring case, as
// encoding/json fills a struct field; a null is the same as absent.
func (o object) lastFold(name string) (json.RawMessage, bool) {
	for i := len(o) - 1; i >= 0; i-- {
		if o[i].is(name, true) {
			if isNull(o[i].val) {
				return nil, false
			}
			return o[i].val, true
		}
	}
	return nil, false
}

// lookup returns the value under name: the last exact match, else the
// last case-insensitive one. ok is false when there is none.
func (o object) lookup(name string) (json.RawMessage, bool) {
	for i := len(o) - 1; i >= 0; i-- {
		if o[i].is(name, false) {
			return o[i].val, true
		}
	}
	for i := len(o) - 1; i >= 0; i-- {
		if o[i].is(name, true) {
			return o[i].val, true
		}
	}
	return nil, false
}

// isSpace is JSON's insignificant whitespace.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// skipString returns the index just past the string that starts at
// b[i] (a quote).
func skipString(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(b)
}

// skipValue returns the index just past the value that starts at b[i].
// b is valid JSON: containers are skipped by counting brackets outside
// strings, with no recursion.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j = skipString(b, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return len(b)
	}
	j := i
	for j < len(b) && !isSpace(b[j]) && b[j] != ',' && b[j] != '}' && b[j] != ']' {
		j++
	}
	return j
}

// parseObject appends the members of the object v (valid JSON, leading
// and trailing space allowed) to dst. ok is false when v is not an
// object.
func parseObject(dst object, v []byte) (object, bool) {
	i := skipSpace(v, 0)
	if i >= len(v) || v[i] != '{' {
		return dst, false
	}
	i = skipSpace(v, i+1)
	for i < len(v) && v[i] == '"' {
		ke := skipString(v, i)
		key := v[i:ke]
		i = skipSpace(v, ke)
		if i >= len(v) || v[i] != ':' {
			return dst, false
		}
		i = skipSpace(v, i+1)
		ve := skipValue(v, i)
		dst = append(dst, member{key: key, val: v[i:ve]})
		i = skipSpace(v, ve)
		if i < len(v) && v[i] == ',' {
			i = skipSpace(v, i+1)
		}
	}
	return dst, true
}

// eachElement calls fn with every element of the array v (valid JSON);
// ok is false when v is not an array.
func eachElement(v []byte, fn func(e []byte)) bool {
	i := skipSpace(v, 0)
	if i >= len(v) || v[i] != '[' {
		return false
	}
	i = skipSpace(v, i+1)
	for i < len(v) && v[i] != ']' {
		e := skipValue(v, i)
		if e <= i {
			// Only a body not validated (the envelope scan of
			// ahead.go) has a value that is no value: stop there.
			break
		}
		fn(v[i:e])
		i = skipSpace(v, e)
		if i < len(v) && v[i] == ',' {
			i = skipSpace(v, i+1)
		}
	}
	return true
}

// UnmarshalJSON reads a page in place (see the decisions above): called
// by json.Unmarshal, which has validated b. The envelope's keys match
// case-insensitively and the last one wins, as encoding/json fills struct
// fields, and a null is the same as an absent key.
func (p *listPage) UnmarshalJSON(b []byte) error {
	if isNull(b) {
		return nil
	}
	top, ok := parseObject(nil, b)
	if !ok {
		return fmt.Errorf("a list response must be a JSON object, not %s", short(b))
	}
	*p = listPage{mem: p.mem}
	if v, ok := top.lastFold("totalResults"); ok {
		var n flexInt
		if err := n.UnmarshalJSON(v); err != nil {
			return fmt.Errorf("totalResults: %v", err)
		}
		p.TotalResults = &n
	}
	if v, ok := top.lastFold("nextCursor"); ok {
		s, ok := unquote(v)
		if !ok {
			return fmt.Errorf("nextCursor is not a string: %s", short(v))
		}
		p.NextCursor = &s
	}
	v, ok := top.lastFold("Resources")
	if !ok {
		return nil
	}
	p.Resources = p.mem.res[:0]
	slab := p.mem.slab[:0]
	defer func() { p.mem.res, p.mem.slab = p.Resources, slab }()
	var bad error
	if !eachElement(v, func(e []byte) {
		start := len(slab)
		var ok bool
		slab, ok = parseObject(slab, e)
		o := slab[start:len(slab):len(slab)]
		if len(o) == 0 {
			o = nil
		}
		switch {
		case ok && o == nil:
			o = object{} // {}: a resource with no id
		case !ok && !isNull(e) && bad == nil:
			bad = fmt.Errorf("Resources: element %d is not an object: %s", len(p.Resources), short(e))
		}
		p.Resources = append(p.Resources, o)
	}) {
		return fmt.Errorf("Resources is not a list: %s", short(v))
	}
	return bad
}

// pageMem is the memory of one page, kept by a walk and reused for the
// next: the body (buf), every resource's members (slab: the resources
// are sub-slices of it) and the list of resources (res).
type pageMem struct {
	buf  []byte
	slab object
	res  []object
}

// readBuffer is what a get's body can be read into: a buffer kept by the
// caller from one request to the next.
type readBuffer interface{ buffer() *[]byte }

func (p *listPage) buffer() *[]byte { return &p.mem.buf }
