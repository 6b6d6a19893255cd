package scimserver

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"strings"
)

// item is one resource in a listing: its insertion sequence (the default
// order and the tie-break), its record, and its full representation when
// the listing needed it to filter or sort.
type item struct {
	seq uint64
	u   *userRec
	g   *groupRec
	m   map[string]any
}

// sortKey is an item's position in a sorted listing, which is what a
// cursor remembers.
type sortKey struct {
	val any
	seq uint64
}

// ordering sorts items by an attribute (or by insertion when by is zero).
type ordering struct {
	rs   *resourceSchema
	by   attrPath
	has  bool
	desc bool
	def  *attrDef
}

func newOrdering(rs *resourceSchema, sortBy, sortOrder string) (ordering, bool) {
	o := ordering{rs: rs, desc: strings.EqualFold(sortOrder, "descending")}
	if sortBy == "" {
		return o, true
	}
	p, ok := rs.parsePath(sortBy)
	if !ok {
		return o, false
	}
	o.by, o.has, o.def = p, true, rs.def(p)
	return o, true
}

// key is the item's sort value: the attribute's first value, or for a
// multi-valued complex attribute its primary value (RFC 7644 §3.4.2.3).
func (o ordering) key(it item) sortKey {
	if !o.has {
		return sortKey{seq: it.seq}
	}
	var v any
	tops := lookupCI(it.m, o.by.top)
	for _, t := range tops {
		if o.by.sub == "" {
			v = t
			break
		}
		tm, ok := t.(map[string]any)
		if !ok {
			continue
		}
		subs := lookupCI(tm, o.by.sub)
		if len(subs) == 0 {
			continue
		}
		if v == nil || tm["primary"] == true {
			v = subs[0]
		}
	}
	if s, ok := v.(string); ok && (o.def == nil || !o.def.CaseExact) {
		v = strings.ToLower(s)
	}
	return sortKey{val: v, seq: it.seq}
}

// compare orders keys; missing values sort last ascending and first
// descending, and insertion order breaks ties so the order is total.
func (o ordering) compare(a, b sortKey) int {
	if c := compareValues(a.val, b.val); c != 0 {
		if o.desc {
			return -c
		}
		return c
	}
	return cmp.Compare(a.seq, b.seq)
}

func compareValues(a, b any) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return 1
	case b == nil:
		return -1
	}
	if af, ok := toFloat(a); ok {
		if bf, ok := toFloat(b); ok {
			return cmpFloat(af, bf)
		}
	}
	if ab, ok := a.(bool); ok {
		if bb, ok := b.(bool); ok {
			return cmp.Compare(btoi(ab), btoi(bb))
		}
	}
	as, _ := a.(string)
	bs, _ := b.(string)
	return strings.Compare(as, bs)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (o ordering) sort(items []item) {
	if !o.has {
		return // already in insertion order
	}
	keys := make(map[uint64]sortKey, len(items))
	for _, it := range items {
		keys[it.seq] = o.key(it)
	}
	slices.SortFunc(items, func(a, b item) int { return o.compare(keys[a.seq], keys[b.seq]) })
}

// after returns the index of the first item that sorts after k.
func (o ordering) after(items []item, k sortKey) int {
	i, _ := slices.BinarySearchFunc(items, k, func(it item, k sortKey) int {
		if o.compare(o.key(it), k) <= 0 {
			return -1
		}
		return 1
	})
	return i
}

func shuffle(items []item) {
	rand.Shuffle(len(items), func(i, j int) { items[i], items[j] = items[j], items[i] })
}
