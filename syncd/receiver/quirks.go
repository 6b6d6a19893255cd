package receiver

// Identity providers' documented deviations from RFC 7643/7644, rewritten
// into the RFC form before the library validates a request (issue 20: 10
// of 177 corpus requests were refused for them). Decisions:
//
//   - Entra ID sends the enterprise extension's manager as a plain string
//     (the manager's id), in PATCH values and in POST/PUT bodies; it
//     becomes {"value": id}, as RFC 7643 section 4.3 defines it.
//   - authentik's group PATCH is one path-less replace whose value is the
//     whole group, schemas (and sometimes id and meta) included; those
//     read-only keys are dropped from a path-less value.
//   - A singular sshPublicKey in the POSIX user extension (a string or a
//     list) is read as the configured keys attribute when that is the
//     extension's sshPublicKeys, instead of being silently dropped.
//   - A PATCH is applied whole or refused whole (one transaction). When it
//     is refused and it carried active=false, the disable is applied on
//     its own anyway and the error says so: a refused operation must
//     never keep a disabled person active on every node.
//   - A list's itemsPerPage is the number of resources returned (RFC 7644
//     section 3.4.2), not the count asked for.

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/scim2/filter-parser/v2"
)

const managerAttr = "manager"

// normalizeBody rewrites the quirks above in a request body; a body that
// is not a JSON object is returned as it is (the library reports it).
func (g *Gate) normalizeBody(r *http.Request, body []byte) []byte {
	if r.Method != http.MethodPost && r.Method != http.MethodPut && r.Method != http.MethodPatch {
		return body
	}
	users := strings.Contains(r.URL.Path, "/Users")
	if r.Method != http.MethodPatch && (!users || !g.mayNeedUserFix(body)) {
		// Nothing above applies to a group's POST or PUT, nor to a user
		// document without the words the rewrites look for: not decoded
		// twice (the library decodes it next).
		return body
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var doc map[string]any
	if dec.Decode(&doc) != nil || doc == nil {
		return body
	}
	changed := false
	if r.Method == http.MethodPatch {
		ops, _ := findKeyValue(doc, "Operations").([]any)
		for _, o := range ops {
			m, _ := o.(map[string]any)
			if m != nil && g.fixOp(m, users) {
				changed = true
			}
		}
	} else if users {
		changed = g.fixUserDoc(doc)
	}
	if !changed {
		return body
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return body
	}
	return out
}

// mayNeedUserFix says whether fixUserDoc could change the user document
// body: its keys hold "manager" or "sshPublicKey" (in any case). A body
// with a \u escape or any byte beyond ASCII (whose case folding could
// spell them otherwise, e.g. the Kelvin sign) is said to.
func (g *Gate) mayNeedUserFix(body []byte) bool {
	for _, c := range body {
		if c >= 0x80 {
			return true
		}
	}
	return bytes.Contains(body, []byte(`\u`)) || containsFoldASCII(body, "manager") ||
		(g.s.opts.SSHKeysAttribute == PosixUserURN+":sshPublicKeys" && containsFoldASCII(body, "sshpublickey"))
}

// containsFoldASCII reports whether b holds the lower-case ASCII word w
// in any case.
func containsFoldASCII(b []byte, w string) bool {
	for i := 0; i+len(w) <= len(b); i++ {
		j := 0
		for j < len(w) && b[i+j]|0x20 == w[j] {
			j++
		}
		if j == len(w) {
			return true
		}
	}
	return false
}

// findKeyValue is m[k] with k matched ignoring case.
func findKeyValue(m map[string]any, k string) any {
	if v, ok := m[k]; ok {
		return v
	}
	for mk, v := range m {
		if strings.EqualFold(mk, k) {
			return v
		}
	}
	return nil
}

func (g *Gate) fixOp(op map[string]any, users bool) bool {
	path, _ := findKeyValue(op, "path").(string)
	value := findKeyValue(op, "value")
	valueKey := "value"
	for k := range op {
		if strings.EqualFold(k, "value") {
			valueKey = k
		}
	}
	switch {
	case path == "":
		m, ok := value.(map[string]any)
		if !ok {
			return false
		}
		changed := false
		for _, k := range []string{"schemas", "id", "meta"} {
			for mk := range m {
				if strings.EqualFold(mk, k) {
					delete(m, mk)
					changed = true
				}
			}
		}
		if users && g.fixUserDoc(m) {
			changed = true
		}
		return changed
	case !users:
		return false
	case strings.EqualFold(path, EnterpriseURN+":"+managerAttr):
		if s, ok := value.(string); ok {
			op[valueKey] = map[string]any{"value": s}
			return true
		}
	case strings.EqualFold(path, PosixUserURN+":sshPublicKey") && g.s.opts.SSHKeysAttribute == PosixUserURN+":sshPublicKeys":
		for k := range op {
			if strings.EqualFold(k, "path") {
				op[k] = PosixUserURN + ":sshPublicKeys"
			}
		}
		if s, ok := value.(string); ok {
			op[valueKey] = []any{s}
		}
		return true
	}
	return false
}

// fixUserDoc rewrites a user document (or a path-less PATCH value).
func (g *Gate) fixUserDoc(doc map[string]any) bool {
	changed := false
	for k, v := range doc {
		switch {
		case strings.EqualFold(k, EnterpriseURN):
			if ent, ok := v.(map[string]any); ok {
				for ek, ev := range ent {
					if s, ok := ev.(string); ok && strings.EqualFold(ek, managerAttr) {
						ent[ek] = map[string]any{"value": s}
						changed = true
					}
				}
			}
		case strings.EqualFold(k, EnterpriseURN+":"+managerAttr):
			if s, ok := v.(string); ok {
				doc[k] = map[string]any{"value": s}
				changed = true
			}
		case strings.EqualFold(k, PosixUserURN) && g.s.opts.SSHKeysAttribute == PosixUserURN+":sshPublicKeys":
			px, ok := v.(map[string]any)
			if !ok {
				continue
			}
			for pk, pv := range px {
				if !strings.EqualFold(pk, "sshPublicKey") {
					continue
				}
				var keys []any
				switch t := pv.(type) {
				case string:
					keys = []any{t}
				case []any:
					keys = t
				}
				delete(px, pk)
				if cur, ok := px["sshPublicKeys"].([]any); ok {
					keys = append(cur, keys...)
				}
				px["sshPublicKeys"] = keys
				changed = true
			}
		}
	}
	return changed
}

// disables reports whether a PATCH body sets active to false.
func disables(body []byte) bool {
	var doc map[string]any
	if json.Unmarshal(body, &doc) != nil {
		return false
	}
	ops, _ := findKeyValue(doc, "Operations").([]any)
	for _, o := range ops {
		m, _ := o.(map[string]any)
		if m == nil {
			continue
		}
		opName, _ := findKeyValue(m, "op").(string)
		if strings.EqualFold(opName, "remove") {
			continue
		}
		path, _ := findKeyValue(m, "path").(string)
		v := findKeyValue(m, "value")
		if path == "" {
			if vm, ok := v.(map[string]any); ok {
				v, path = findKeyValue(vm, "active"), "active"
			}
		}
		if strings.EqualFold(path, "active") || strings.EqualFold(path, CoreUserURN+":active") {
			if b, ok := v.(bool); ok && !b {
				return true
			}
			if s, ok := v.(string); ok && strings.EqualFold(s, "false") {
				return true
			}
		}
	}
	return false
}

// disableByID sets active=false on the user with SCIM id id, alone.
func (s *Store) disableByID(ctx context.Context, client, id string) error {
	return s.write(ctx, func(tx *sql.Tx) (bool, error) {
		u, err := getUser(ctx, tx, "id = ?", id)
		if out, serr := outOfScope(ctx, tx, nil, "users", id); err == nil && (serr != nil || out) {
			u, err = nil, serr
		}
		if err == nil && u == nil {
			err = notFound(id)
		}
		if err == nil {
			u.Doc["active"] = false
			u.Doc["userName"] = u.UserName
			xid := u.ExternalID
			_, err = s.putUser(ctx, tx, u, u.Doc, &xid)
		}
		s.auditTx(tx, client, "disable from a refused PATCH", id, err)
		return err == nil, err
	})
}

// buffered holds a response so that the gate can amend it.
type buffered struct {
	h      http.Header
	status int
	body   bytes.Buffer
}

func (b *buffered) Header() http.Header { return b.h }
func (b *buffered) WriteHeader(s int) {
	if b.status == 0 {
		b.status = s
	}
}
func (b *buffered) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	return b.body.Write(p)
}

// serveAmended runs the library for requests whose answer the gate fixes:
// a list's itemsPerPage, and a refused user PATCH that carried a disable.
func (g *Gate) serveAmended(w http.ResponseWriter, r *http.Request, body []byte, client string) bool {
	userID := ""
	if r.Method == http.MethodPatch {
		if i := strings.Index(r.URL.Path, "/Users/"); i >= 0 && disables(body) {
			userID = strings.Trim(r.URL.Path[i+len("/Users/"):], "/")
		}
	}
	list := r.Method == http.MethodGet && (strings.HasSuffix(strings.TrimRight(r.URL.Path, "/"), "/Users") || strings.HasSuffix(strings.TrimRight(r.URL.Path, "/"), "/Groups"))
	if userID == "" && !list {
		return false
	}
	b := &buffered{h: w.Header()}
	g.next.ServeHTTP(b, r)
	out := b.body.Bytes()
	var m map[string]any
	switch {
	case list && b.status == http.StatusOK && json.Unmarshal(out, &m) == nil:
		if res, ok := m["Resources"].([]any); ok {
			m["itemsPerPage"] = len(res)
		} else {
			m["itemsPerPage"] = 0
		}
		if j, err := json.Marshal(m); err == nil {
			out = j
		}
	case userID != "" && b.status >= 400 && b.status != http.StatusNotFound && json.Unmarshal(out, &m) == nil:
		if err := g.s.disableByID(r.Context(), client, userID); err != nil {
			m["detail"] = fmt.Sprintf("%v; the disable (active=false) in this PATCH could not be applied either: %v", m["detail"], err)
		} else {
			m["detail"] = fmt.Sprintf("%v; the rest of this PATCH was refused, but its disable (active=false) was applied", m["detail"])
		}
		if j, err := json.Marshal(m); err == nil {
			out = j
		}
	}
	w.Header().Del("Content-Length")
	w.WriteHeader(b.status)
	w.Write(out)
	return true
}

// entraValuePath is Entra's `attr[filter].sub op value`, which RFC 7644's
// grammar spells `attr[filter and sub op value]`.
var entraValuePath = regexp.MustCompile(`(?i)\b([a-z][a-z0-9_]*)\[([^\]]+)\]\.([a-z][a-z0-9_]*)\s+(eq|ne|co|sw|ew|gt|ge|lt|le)\s+("(?:[^"\\]|\\.)*"|true|false|null|[0-9.]+)`)

// bareManager is an unqualified manager (Entra filters on it by the
// manager's id): the enterprise extension's manager.value.
var bareManager = regexp.MustCompile(`(?i)(^|[\s(])manager(\.value)?\s+(eq|ne)\s`)

// normalizeQuery rewrites Entra's filter spellings in the query. A
// filter on manager next to core attributes (`id eq X and manager eq Y`)
// is one the library's validator refuses (it checks an expression
// against one schema at a time): it is parsed here, taken out of the
// query and handed to the list handler in the context (listFilter).
func normalizeQuery(r *http.Request) *http.Request {
	if r.Method != http.MethodGet {
		return r
	}
	q := r.URL.Query()
	f := q.Get("filter")
	if f == "" {
		return r
	}
	nf := entraValuePath.ReplaceAllString(f, `$1[$2 and $3 $4 $5]`)
	mgr := bareManager.ReplaceAllString(nf, "${1}"+EnterpriseURN+":manager.value $3 ")
	if mgr != nf && strings.Contains(r.URL.Path, "/Users") {
		if e, err := filter.ParseFilter([]byte(mgr)); err == nil {
			q.Del("filter")
			r.URL.RawQuery = q.Encode()
			return r.WithContext(context.WithValue(r.Context(), listFilterKey{}, e))
		}
	}
	if nf != f {
		q.Set("filter", nf)
		r.URL.RawQuery = q.Encode()
	}
	return r
}

type listFilterKey struct{}

// listFilter is the filter normalizeQuery parsed itself, or nil.
func listFilter(r *http.Request) filter.Expression {
	e, _ := r.Context().Value(listFilterKey{}).(filter.Expression)
	return e
}

// credentialParams are query parameters that carry credentials when a
// client puts its token in the URL (RFC 6750 section 2.3 allows
// access_token): the receiver never accepts them, and the audit log never
// stores their values.
var credentialParams = []string{"access_token", "token", "api_key", "apikey", "key", "password", "secret", "client_secret", "auth", "authorization", "bearer"}

// auditPath is the request URI for the audit log, credential parameters'
// values replaced by "REDACTED".
func auditPath(u *url.URL) string {
	if u.RawQuery == "" {
		return u.RequestURI()
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return u.EscapedPath() + "?(unparsable query withheld)"
	}
	changed := false
	for k := range q {
		for _, c := range credentialParams {
			if strings.EqualFold(k, c) {
				q[k] = []string{"REDACTED"}
				changed = true
			}
		}
	}
	if !changed {
		return u.RequestURI()
	}
	return u.EscapedPath() + "?" + q.Encode()
}
