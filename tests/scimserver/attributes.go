package scimserver

import "strings"

// selection is a parsed attributes= or excludedAttributes= list: top-level
// keys (lower case) mapped to either the whole attribute or some of its
// sub-attributes (lower case).
type selection map[string]*subSel

type subSel struct {
	all  bool
	subs map[string]bool
}

// parseSelection parses a comma-separated attribute list (the query form)
// or a list of paths (the .search form). Unknown names are ignored, as
// most servers ignore them.
func (rs *resourceSchema) parseSelection(paths []string) selection {
	var sel selection
	for _, raw := range paths {
		for _, p := range strings.Split(raw, ",") {
			if strings.TrimSpace(p) == "" {
				continue
			}
			ap, ok := rs.parsePath(p)
			if !ok {
				continue
			}
			if sel == nil {
				sel = selection{}
			}
			ss := sel[ap.top]
			if ss == nil {
				ss = &subSel{subs: map[string]bool{}}
				sel[ap.top] = ss
			}
			if ap.sub == "" {
				ss.all = true
			} else {
				ss.subs[ap.sub] = true
			}
		}
	}
	return sel
}

// project applies RFC 7643 §7 "returned" and RFC 7644 §3.4.2.5 to a full
// representation: without attributes=, always ∪ default minus excluded;
// with it, always ∪ what was named. Naming a complex attribute (or the
// extension URN) names all its sub-attributes, request-only ones included.
// never is never returned. The result shares unmodified values with full.
func (rs *resourceSchema) project(full map[string]any, attrs, excluded selection) map[string]any {
	out := make(map[string]any, len(full))
	for k, v := range full {
		lk := strings.ToLower(k)
		d := rs.top[lk]
		switch {
		case k == "schemas":
			out[k] = v
		case d == nil:
			// Attributes outside the schema (Extra): treat as default,
			// and return them when named (an unknown extension's
			// attributes: RFC 7644 §3.4.2.5).
			if attrs == nil && (excluded[lk] == nil || !excluded[lk].all) {
				out[k] = v
			} else if ss := attrs[lk]; ss != nil {
				if m, ok := v.(map[string]any); ok && !ss.all {
					named := map[string]any{}
					for sk, sv := range m {
						if ss.subs[strings.ToLower(sk)] {
							named[sk] = sv
						}
					}
					if len(named) > 0 {
						out[k] = named
					}
				} else {
					out[k] = v
				}
			}
		case d.Returned == returnedNever:
		case d.Returned == returnedAlways:
			out[k] = v
		case attrs != nil:
			ss := attrs[lk]
			switch {
			case ss == nil:
			case ss.all:
				out[k] = pruneSubs(d, v, func(sd *attrDef) bool { return sd.Returned != returnedNever })
			default:
				out[k] = pruneSubs(d, v, func(sd *attrDef) bool {
					return sd.Returned == returnedAlways || ss.subs[strings.ToLower(sd.Name)]
				})
			}
		case d.Returned == returnedRequest:
		default:
			ex := excluded[lk]
			if ex != nil && ex.all {
				continue
			}
			out[k] = pruneSubs(d, v, func(sd *attrDef) bool {
				if sd.Returned == returnedAlways {
					return true
				}
				if sd.Returned != returnedDefault {
					return false
				}
				return ex == nil || !ex.subs[strings.ToLower(sd.Name)]
			})
		}
	}
	return out
}

// pruneSubs keeps the sub-attributes of a complex value (or of each
// element of a multi-valued one) that keep says to. Values that lose
// nothing are returned as they are; a complex value left empty is dropped
// by the caller's JSON as an empty object, which servers also send.
func pruneSubs(d *attrDef, v any, keep func(*attrDef) bool) any {
	if len(d.SubAttributes) == 0 {
		return v
	}
	pruneOne := func(m map[string]any) map[string]any {
		var out map[string]any
		for k := range m {
			sd := d.subDef(k)
			if sd == nil || keep(sd) {
				continue
			}
			if out == nil {
				out = make(map[string]any, len(m))
				for k2, v2 := range m {
					out[k2] = v2
				}
			}
			delete(out, k)
		}
		if out == nil {
			return m
		}
		return out
	}
	switch x := v.(type) {
	case map[string]any:
		return pruneOne(x)
	case []any:
		var out []any
		for i, e := range x {
			m, ok := e.(map[string]any)
			if !ok {
				continue
			}
			if p := pruneOne(m); len(p) != len(m) {
				if out == nil {
					out = append([]any(nil), x...)
				}
				out[i] = p
			}
		}
		if out == nil {
			return x
		}
		return out
	}
	return v
}
