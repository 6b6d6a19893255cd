package receiver

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	escim "github.com/elimity-com/scim"
	scimerr "github.com/elimity-com/scim/errors"
	"github.com/elimity-com/scim/optional"
	"github.com/scim2/filter-parser/v2"
)

// Schema URNs the receiver serves.
const (
	CoreUserURN   = "urn:ietf:params:scim:schemas:core:2.0:User"
	CoreGroupURN  = "urn:ietf:params:scim:schemas:core:2.0:Group"
	EnterpriseURN = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"
	PosixUserURN  = "urn:ietf:params:scim:schemas:extension:posix:2.0:User"
	PosixGroupURN = "urn:ietf:params:scim:schemas:extension:posix:2.0:Group"
)

// user is one stored user.
type user struct {
	ID, UserName, PosixName, ExternalID string
	Active                              bool
	Doc                                 map[string]any
	Created, Modified                   string
	Version                             int64
}

func decodeDoc(s string) (map[string]any, error) {
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return nil, err
	}
	return m, nil
}

func encodeDoc(m map[string]any) (string, error) {
	b, err := json.Marshal(m)
	return string(b), err
}

const userCols = "id, user_name, posix_name, COALESCE(external_id,''), active, doc, created, modified, version"

type scanner interface{ Scan(...any) error }

func scanUser(r scanner) (*user, error) {
	u := &user{}
	var doc string
	if err := r.Scan(&u.ID, &u.UserName, &u.PosixName, &u.ExternalID, &u.Active, &doc, &u.Created, &u.Modified, &u.Version); err != nil {
		return nil, err
	}
	var err error
	if u.Doc, err = decodeDoc(doc); err != nil {
		return nil, fmt.Errorf("user %s: stored document: %w", u.ID, err)
	}
	return u, nil
}

type querier interface {
	QueryRowContext(ctx context.Context, q string, a ...any) *sql.Row
	QueryContext(ctx context.Context, q string, a ...any) (*sql.Rows, error)
}

func getUser(ctx context.Context, q querier, where string, a ...any) (*user, error) {
	u, err := scanUser(q.QueryRowContext(ctx, "SELECT "+userCols+" FROM users WHERE "+where, a...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return u, err
}

func notFound(id string) error { return scimerr.ScimErrorResourceNotFound(id) }

func conflict(format string, a ...any) error {
	e := scimerr.ScimErrorUniqueness
	e.Detail = fmt.Sprintf(format, a...)
	return e
}

func invalid(format string, a ...any) error {
	e := scimerr.ScimErrorInvalidValue
	e.Detail = fmt.Sprintf(format, a...)
	return e
}

var posixNameRE = regexp.MustCompile(`^[a-z_][a-z0-9_.-]{0,31}$`)

// posixName derives the POSIX name from a user document: the userName or
// the (primary, else first) email per user_name_from, mapped by
// user_names (syncd/names/users.go: a name already valid kept as it is,
// lower-cased; else a domain cut, characters mapped). The same rules the
// poller's validation applies; what fails them is refused here (400) so
// the identity provider shows the error. id is the user's SCIM id ("" on
// a create), for renames keyed by id.
func (s *Store) posixName(id string, doc map[string]any) (name, raw string, own bool, err error) {
	raw, _ = doc["userName"].(string)
	if s.opts.UserNameFrom == "email" {
		raw = primaryEmail(doc)
		if raw == "" {
			return "", "", false, invalid("no email to take the POSIX name from (receiver.user_name_from = \"email\")")
		}
	}
	if raw == "" {
		return "", "", false, invalid("userName is missing")
	}
	name, own, err = s.opts.UserNames.Map(id, raw)
	if err != nil {
		return "", "", false, invalid("%v", err)
	}
	if !posixNameRE.MatchString(name) {
		return "", "", false, invalid("%q: POSIX name %q must match %s (set user_names.rename)", raw, name, posixNameRE)
	}
	if err := s.checkFree("userName", raw, name); err != nil {
		return "", "", false, err
	}
	return name, raw, own, nil
}

func primaryEmail(doc map[string]any) string {
	list, _ := doc["emails"].([]any)
	first := ""
	for _, it := range list {
		m, _ := it.(map[string]any)
		v, _ := m["value"].(string)
		if v == "" {
			continue
		}
		if p, _ := m["primary"].(bool); p {
			return v
		}
		if first == "" {
			first = v
		}
	}
	return first
}

func intOf(v any) (int64, bool) {
	switch n := v.(type) {
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	case int:
		return int64(n), true
	case int64:
		return n, true
	case float64:
		return int64(n), n == float64(int64(n))
	case string:
		i, err := strconv.ParseInt(n, 10, 64)
		return i, err == nil
	}
	return 0, false
}

// fillPosix records the user's numbers in the ledger (allocating them
// when the identity provider sent none) and writes them into the
// document's POSIX extension, so GET shows what the nodes will see. e is
// the name's uid row (lookupID), source the userName behind it (recorded
// on the row: inheritsUID).
func (s *Store) fillPosix(tx *sql.Tx, name string, doc map[string]any, e ledgerEntry, source string) error {
	ext, _ := doc[PosixUserURN].(map[string]any)
	if ext == nil {
		ext = map[string]any{}
	}
	var sentUID *int64
	if v, ok := ext["uidNumber"]; ok {
		n, ok := intOf(v)
		if !ok {
			return invalid("%s:uidNumber is not an integer", PosixUserURN)
		}
		sentUID = &n
	}
	uid, inserted, err := s.allocateFrom(tx, "uid", name, sentUID, 0, e, source)
	if err != nil {
		if errors.Is(err, errNumberTaken) {
			return conflict("%v", err)
		}
		return err
	}
	// The ledger remembers whose name made its entry (see inheritsUID):
	// a row just inserted has it already.
	if !inserted && (!e.source.Valid || e.source.String != source) {
		if _, err := tx.Exec("UPDATE ids SET source=? WHERE kind='uid' AND name=?", source, name); err != nil {
			return err
		}
	}
	ext["uidNumber"] = uid
	if _, ok := ext["gidNumber"]; !ok {
		gid := s.opts.PrimaryGID
		if gid == 0 {
			if gid, err = s.allocatePrefer(tx, "gid", "user:"+name, nil, uid); err != nil {
				return err
			}
		}
		ext["gidNumber"] = gid
	} else if n, ok := intOf(ext["gidNumber"]); !ok {
		return invalid("%s:gidNumber is not an integer", PosixUserURN)
	} else if why := gidHeldElsewhere(tx, n, name); why != "" {
		// As for uids: a number the ledger keeps for a deleted group, a
		// retired name or another user's private group is never given
		// to this user's primary group (issue 20).
		return conflict("%s:gidNumber %d: %s", PosixUserURN, n, why)
	}
	doc[PosixUserURN] = ext
	return nil
}

func prevID(u *user) string {
	if u == nil {
		return ""
	}
	return u.ID
}

// inheritsUID refuses a user whose login name was derived (an unlisted
// domain cut, characters mapped: names.Users) when the ledger keeps that
// name's uid for a deleted user pushed under another userName: with
// user_names.domains empty, alice@b.example must not get the uid, and so
// the files, of a deleted alice@a.example. The same userName pushed again
// (an IdP migration keeping userNames), an own name (the login name
// itself, a listed domain, a rename) and ledger entries from before this
// check (no source recorded) keep the number as before.
func inheritsUID(e ledgerEntry, pname, raw string, own bool) error {
	if own || !e.found || !e.released || !e.source.Valid || e.source.String == strings.ToLower(raw) {
		return nil
	}
	return conflict("userName %q becomes the login name %q, whose uid %d the ledger keeps for a deleted user pushed as another userName: numbers are never given to someone else. If they are one person, list the domain in user_names.domains or set user_names.rename %q = %q; otherwise give this one another name with user_names.rename", raw, pname, e.num, raw, pname)
}

// cleanDoc drops what the server owns or keeps in columns, and the
// password (Okta sends one; nothing here uses it and it is never stored).
func cleanDoc(doc map[string]any) {
	for _, k := range []string{"id", "meta", "schemas", "externalId", "groups", "members", "password"} {
		delete(doc, k)
	}
}

func activeOf(doc map[string]any) bool {
	if b, ok := doc["active"].(bool); ok {
		return b
	}
	return true // absent: RFC 7643 leaves it to the provider; absent means enabled
}

// putUser validates and writes u (insert when prev is nil). It checks the
// case-insensitive uniqueness of userName and of the POSIX name, moves
// the ledger entries on a rename, and allocates numbers.
func (s *Store) putUser(ctx context.Context, tx *sql.Tx, prev *user, doc map[string]any, externalID *string) (*user, error) {
	userName, _ := doc["userName"].(string)
	if strings.TrimSpace(userName) == "" {
		return nil, invalid("userName is required")
	}
	id := newID()
	if prev != nil {
		id = prev.ID
	}
	pname, raw, own, err := s.posixName(prevID(prev), doc)
	if err != nil {
		return nil, err
	}
	xid := ""
	if externalID != nil {
		xid = *externalID
	} else if prev != nil {
		xid = prev.ExternalID
	}
	// userName and the POSIX name are unique; externalId is the identity
	// provider's match key: a second user with the same one would be a
	// second account for one person. One query for the three (an index
	// each), answered in that order.
	if err := s.uniqueUser(ctx, tx, id, userName, pname, xid); err != nil {
		return nil, err
	}
	if prev != nil && prev.PosixName != pname {
		if err := rename(tx, "uid", prev.PosixName, pname); err != nil {
			return nil, err
		}
		if err := rename(tx, "gid", "user:"+prev.PosixName, "user:"+pname); err != nil {
			return nil, err
		}
		if _, err := tx.Exec("UPDATE ssh_keys SET posix_name=? WHERE posix_name=? AND NOT EXISTS (SELECT 1 FROM ssh_keys WHERE posix_name=?)", pname, prev.PosixName, pname); err != nil {
			return nil, err
		}
		if _, err := tx.Exec("UPDATE OR IGNORE local_holds SET posix_name=? WHERE posix_name=?", pname, prev.PosixName); err != nil {
			return nil, err
		}
	}
	e, held, err := lookupUID(tx, pname)
	if err != nil {
		return nil, err
	}
	if prev == nil || prev.PosixName != pname {
		if err := inheritsUID(e, pname, raw, own); err != nil {
			return nil, err
		}
	}
	if err := s.fillPosix(tx, pname, doc, e, strings.ToLower(raw)); err != nil {
		return nil, err
	}
	cleanDoc(doc)
	if _, ok := doc["active"].(bool); !ok && prev != nil {
		// An update that leaves active out (PATCH remove path active, a PUT
		// without it) keeps the user's state: absent means enabled only
		// when a user is created, never a way to re-enable a disabled one.
		doc["active"] = prev.Active
	}
	// A local `syncd users disable` holds until `syncd users enable`: an
	// identity provider's later active:true does not lift it (issue 20).
	// held was read with the ledger row (lookupUID), after the rename
	// above moved the hold; nothing between moves it.
	if held {
		doc["active"] = false
	}
	u := &user{ID: id, UserName: userName, PosixName: pname, Active: activeOf(doc), Doc: doc, Modified: now(), ExternalID: xid}
	body, err := encodeDoc(doc)
	if err != nil {
		return nil, err
	}
	var ext any
	if u.ExternalID != "" {
		ext = u.ExternalID
	}
	if prev == nil {
		u.Created, u.Version = u.Modified, 1
		// The creator's scope is recorded with the row (what claim
		// would do next; none for a local command).
		var scope any
		if sc := scopeOf(ctx).name; sc != "" {
			scope = sc
		}
		_, err = tx.Exec(`INSERT INTO users(id, user_name, user_name_lc, posix_name, external_id, active, doc, created, modified, version, scope)
			VALUES(?,?,?,?,?,?,?,?,?,1,?)`, u.ID, u.UserName, strings.ToLower(u.UserName), u.PosixName, ext, u.Active, body, u.Created, u.Modified, scope)
	} else {
		u.Created, u.Version = prev.Created, prev.Version+1
		_, err = tx.Exec(`UPDATE users SET user_name=?, user_name_lc=?, posix_name=?, external_id=?, active=?, doc=?, modified=?, version=? WHERE id=?`,
			u.UserName, strings.ToLower(u.UserName), u.PosixName, ext, u.Active, body, u.Modified, u.Version, u.ID)
	}
	if err != nil {
		return nil, err
	}
	return u, nil
}

// attrs is the stored document with userName and active: what PATCH
// applies to.
func (u *user) attrs() escim.ResourceAttributes {
	attrs := make(escim.ResourceAttributes, len(u.Doc)+2)
	for k, v := range u.Doc {
		attrs[k] = v
	}
	attrs["userName"] = u.UserName
	attrs["active"] = u.Active
	return attrs
}

// resource is the user as served. The POSIX extension shows what the
// nodes get: a gecos the IdP did not send is the displayName (derived on
// every read, never stored, so it follows renames).
func (u *user) resource() escim.Resource {
	attrs := u.attrs()
	if ext, ok := u.Doc[PosixUserURN].(map[string]any); ok {
		if _, has := ext["gecos"]; !has {
			if dn, _ := u.Doc["displayName"].(string); dn != "" {
				cp := make(map[string]any, len(ext)+1)
				for k, v := range ext {
					cp[k] = v
				}
				cp["gecos"] = dn
				attrs[PosixUserURN] = cp
			}
		}
	}
	r := escim.Resource{ID: u.ID, Attributes: attrs, Meta: meta(u.Created, u.Modified, u.Version)}
	if u.ExternalID != "" {
		r.ExternalID = optional.NewString(u.ExternalID)
	}
	return r
}

func meta(created, modified string, version int64) escim.Meta {
	c, _ := time.Parse(time.RFC3339Nano, created)
	m, _ := time.Parse(time.RFC3339Nano, modified)
	return escim.Meta{Created: &c, LastModified: &m, Version: fmt.Sprintf(`W/"%d"`, version)}
}

// metaAttrs is meta as filters see it (meta.created, meta.lastModified).
func metaAttrs(created, modified string) map[string]any {
	return map[string]any{"created": created, "lastModified": modified}
}

func externalIDOf(attrs escim.ResourceAttributes) *string {
	if v, ok := attrs["externalId"].(string); ok {
		return &v
	}
	return nil
}

// Users is the /Users handler.
type Users struct {
	s   *Store
	sch docSchemas
}

// Create stores a new user (POST /Users).
func (h *Users) Create(r *http.Request, attrs escim.ResourceAttributes) (escim.Resource, error) {
	var out *user
	err := h.s.write(r.Context(), func(tx *sql.Tx) (bool, error) {
		doc := map[string]any(attrs)
		ext := externalIDOf(attrs)
		// putUser records the client's scope on the new row.
		u, err := h.s.putUser(r.Context(), tx, nil, doc, ext)
		out = u
		return err == nil, err
	})
	if err != nil {
		return escim.Resource{}, err
	}
	note(r, "user "+out.ID+" "+out.UserName)
	return out.resource(), nil
}

// Get returns one user.
func (h *Users) Get(r *http.Request, id string) (escim.Resource, error) {
	u, err := getUser(r.Context(), h.s.rdb, "id = ?", id)
	if err != nil {
		return escim.Resource{}, err
	}
	if out, err := outOfScope(r.Context(), h.s.rdb, r, "users", id); err != nil {
		return escim.Resource{}, err
	} else if u == nil || out {
		return escim.Resource{}, notFound(id)
	}
	return u.resource(), nil
}

// Replace is PUT: the document becomes attrs; the POSIX numbers stay.
func (h *Users) Replace(r *http.Request, id string, attrs escim.ResourceAttributes) (escim.Resource, error) {
	var out *user
	err := h.s.write(r.Context(), func(tx *sql.Tx) (bool, error) {
		prev, err := h.s.userInScope(r, tx, id)
		if err != nil {
			return false, err
		}
		doc := map[string]any(attrs)
		// Keep the allocated numbers when the IdP's PUT has no POSIX
		// extension (most cannot send one).
		if _, ok := doc[PosixUserURN]; !ok {
			if ext, ok := prev.Doc[PosixUserURN]; ok {
				doc[PosixUserURN] = ext
			}
		}
		if out, err = h.s.putUser(r.Context(), tx, prev, doc, externalIDOf(attrs)); err != nil {
			return false, err
		}
		return true, claim(r.Context(), tx, "users", id)
	})
	if err != nil {
		return escim.Resource{}, err
	}
	note(r, "user "+out.ID+" "+out.UserName)
	return out.resource(), nil
}

// Patch applies PATCH operations.
func (h *Users) Patch(r *http.Request, id string, ops []escim.PatchOperation) (escim.Resource, error) {
	var out *user
	err := h.s.write(r.Context(), func(tx *sql.Tx) (bool, error) {
		prev, err := h.s.userInScope(r, tx, id)
		if err != nil {
			return false, err
		}
		doc := prev.attrs()
		if prev.ExternalID != "" {
			doc["externalId"] = prev.ExternalID
		}
		for _, op := range ops {
			if err := h.sch.applyOp(doc, op); err != nil {
				return false, err
			}
		}
		ext := ""
		if v, ok := doc["externalId"].(string); ok {
			ext = v
		}
		if out, err = h.s.putUser(r.Context(), tx, prev, doc, &ext); err != nil {
			return false, err
		}
		return true, claim(r.Context(), tx, "users", id)
	})
	if err != nil {
		return escim.Resource{}, err
	}
	note(r, "user "+out.ID+" "+out.UserName)
	return out.resource(), nil
}

// Delete removes a user; its numbers stay in the ledger (tombstone).
func (h *Users) Delete(r *http.Request, id string) error {
	return h.s.write(r.Context(), func(tx *sql.Tx) (bool, error) {
		prev, err := h.s.userInScope(r, tx, id)
		if err != nil {
			return false, err
		}
		note(r, "user "+prev.ID+" "+prev.UserName)
		return true, deleteUser(tx, prev)
	})
}

// userInScope is the user id for a write: 404 when absent or in another
// client's scope.
func (s *Store) userInScope(r *http.Request, tx *sql.Tx, id string) (*user, error) {
	prev, err := getUser(r.Context(), tx, "id = ?", id)
	if err != nil {
		return nil, err
	}
	if out, err := outOfScope(r.Context(), tx, r, "users", id); err != nil {
		return nil, err
	} else if prev == nil || out {
		return nil, notFound(id)
	}
	return prev, nil
}

// deleteUser removes the user, its memberships and its uploaded keys (a
// name pushed again later must not get back keys someone uploaded for the
// old account); the ledger keeps its numbers.
func deleteUser(tx *sql.Tx, u *user) error {
	for _, q := range []string{"DELETE FROM users WHERE id=?", "DELETE FROM members WHERE member_id=?"} {
		if _, err := tx.Exec(q, u.ID); err != nil {
			return err
		}
	}
	if _, err := tx.Exec("DELETE FROM ssh_keys WHERE posix_name=?", u.PosixName); err != nil {
		return err
	}
	if err := release(tx, "uid", u.PosixName); err != nil {
		return err
	}
	return release(tx, "gid", "user:"+u.PosixName)
}

// GetAll lists users: an eq filter on userName, externalId or id is an
// index lookup; any other filter is evaluated over every user in order.
func (h *Users) GetAll(r *http.Request, p escim.ListRequestParams) (escim.Page, error) {
	ctx := r.Context()
	var expr filter.Expression
	if p.FilterValidator != nil {
		expr = p.FilterValidator.GetFilter()
	} else if e := listFilter(r); e != nil {
		expr = e
	}
	scoped, scopeArgs := scopeWhere(ctx)
	where, args := scoped, scopeArgs
	if col, v, ok := indexedEq(expr, map[string]string{"username": "user_name_lc", "externalid": "external_id", "id": "id"}); ok {
		if col == "user_name_lc" {
			v = strings.ToLower(v)
		}
		where, args, expr = scoped+" AND "+col+" = ?", append(scopeArgs, v), nil
	}
	if expr == nil {
		var total int
		if err := h.s.rdb.QueryRowContext(ctx, "SELECT count(*) FROM users WHERE "+where, args...).Scan(&total); err != nil {
			return escim.Page{}, err
		}
		page := escim.Page{TotalResults: total, Resources: []escim.Resource{}}
		if p.Count <= 0 {
			return page, nil
		}
		rows, err := h.s.rdb.QueryContext(ctx, "SELECT "+userCols+" FROM users WHERE "+where+" ORDER BY rowid LIMIT ? OFFSET ?",
			append(args, p.Count, max(p.StartIndex, 1)-1)...)
		if err != nil {
			return escim.Page{}, err
		}
		defer rows.Close()
		for rows.Next() {
			u, err := scanUser(rows)
			if err != nil {
				return escim.Page{}, err
			}
			page.Resources = append(page.Resources, u.resource())
		}
		return page, rows.Err()
	}
	rows, err := h.s.rdb.QueryContext(ctx, "SELECT "+userCols+" FROM users WHERE "+scoped+" ORDER BY rowid", scopeArgs...)
	if err != nil {
		return escim.Page{}, err
	}
	defer rows.Close()
	page := escim.Page{Resources: []escim.Resource{}}
	for rows.Next() {
		u, err := scanUser(rows)
		if err != nil {
			return escim.Page{}, err
		}
		res := u.resource()
		m := map[string]any(res.Attributes)
		m["id"], m["externalId"], m["meta"] = u.ID, u.ExternalID, metaAttrs(u.Created, u.Modified)
		if !matchExpr(m, expr) {
			continue
		}
		delete(m, "id")
		delete(m, "externalId")
		delete(m, "meta")
		page.TotalResults++
		if page.TotalResults >= p.StartIndex && len(page.Resources) < p.Count {
			page.Resources = append(page.Resources, res)
		}
	}
	return page, rows.Err()
}

// indexedEq recognises `attr eq "value"` on an indexed attribute.
func indexedEq(e filter.Expression, cols map[string]string) (col, value string, ok bool) {
	ae, isAttr := e.(*filter.AttributeExpression)
	if !isAttr || ae.Operator != filter.EQ || ae.AttributePath.SubAttribute != nil {
		return "", "", false
	}
	if u := ae.AttributePath.URI(); u != "" && u != CoreUserURN && u != CoreGroupURN {
		return "", "", false
	}
	col, ok = cols[strings.ToLower(ae.AttributePath.AttributeName)]
	v, isStr := ae.CompareValue.(string)
	return col, v, ok && isStr
}

// gidHeldElsewhere says why gid may not be user name's primary gid: the
// ledger keeps it for a deleted group, a retired name or another user's
// private group. A live SCIM group's gid (a shared primary group) is fine.
func gidHeldElsewhere(tx *sql.Tx, gid int64, name string) string {
	var owner string
	var released sql.NullString
	if tx.QueryRow("SELECT name, released FROM ids WHERE kind='gid' AND num=?", gid).Scan(&owner, &released) != nil {
		return ""
	}
	switch {
	case owner == "user:"+name:
		return ""
	case strings.HasPrefix(owner, "retired:"):
		return fmt.Sprintf("the ledger keeps it for %q, a name that moved to another number: numbers are never reused", strings.TrimPrefix(owner, "retired:"))
	case released.Valid:
		return fmt.Sprintf("the ledger keeps it for %q, which was deleted: numbers are never reused", owner)
	case strings.HasPrefix(owner, "user:"):
		return fmt.Sprintf("it is the private group of user %q", strings.TrimPrefix(owner, "user:"))
	}
	return ""
}

// uniqueUser refuses (409) a user id whose userName (ignoring case),
// POSIX name or externalId (when not empty) another user holds, naming
// the holder as the client may see it; userName is checked first, then
// the POSIX name, then externalId.
func (s *Store) uniqueUser(ctx context.Context, tx *sql.Tx, id, userName, pname, xid string) error {
	var xidArg any
	if xid != "" {
		xidArg = xid
	}
	// Not the request's context: with one that can be cancelled,
	// database/sql and the driver each start a goroutine per query to
	// watch it (issue 18, recv2: 2-3% of a create's CPU), for an indexed
	// lookup of microseconds in a batch that does not stop for one
	// client anyway (writeBatch).
	rows, err := tx.Query(`SELECT id, user_name, user_name_lc = ?, posix_name = ? FROM users
		WHERE (user_name_lc = ? OR posix_name = ? OR external_id = ?) AND id <> ?`,
		strings.ToLower(userName), pname, strings.ToLower(userName), pname, xidArg, id)
	if err != nil {
		return err
	}
	type hit struct {
		id, name        string
		byName, byPosix bool
	}
	var hits []hit
	for rows.Next() {
		var h hit
		if err := rows.Scan(&h.id, &h.name, &h.byName, &h.byPosix); err != nil {
			rows.Close()
			return err
		}
		hits = append(hits, h)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, h := range hits {
		if h.byName {
			return conflict("userName %q is already taken by %s (userName is unique ignoring case)", userName, holder(ctx, tx, nil, "users", h.id, h.name))
		}
	}
	for _, h := range hits {
		if h.byPosix {
			return conflict("userName %q gives the POSIX name %q, already used by %s (set user_names.rename or user_names.domains to tell them apart)", userName, pname, holder(ctx, tx, nil, "users", h.id, h.name))
		}
	}
	if len(hits) > 0 {
		return conflict("externalId %q already belongs to %s: match it instead of creating another", xid, holder(ctx, tx, nil, "users", hits[0].id, hits[0].name))
	}
	return nil
}

// lookupUID is lookupID of the uid row of pname, and whether a local
// admin disabled pname (local_holds), in one query instead of two (issue
// 18, recv2: a statement less per create, under the write lock).
func lookupUID(tx *sql.Tx, pname string) (ledgerEntry, bool, error) {
	var e ledgerEntry
	var num sql.NullInt64
	var released sql.NullBool
	var held bool
	err := tx.QueryRow(`SELECT i.num, i.released IS NOT NULL, i.source, EXISTS(SELECT 1 FROM local_holds WHERE posix_name=?1)
		FROM (SELECT 1) LEFT JOIN ids i ON i.kind='uid' AND i.name=?1`, pname).Scan(&num, &released, &e.source, &held)
	if err != nil {
		return ledgerEntry{}, false, err
	}
	if num.Valid {
		e.found, e.num, e.released = true, num.Int64, released.Bool
	} else {
		e.source = sql.NullString{}
	}
	return e, held, nil
}
