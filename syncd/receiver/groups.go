package receiver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"strings"

	escim "github.com/elimity-com/scim"
	"github.com/elimity-com/scim/optional"
	"github.com/scim2/filter-parser/v2"
)

// group is one stored group. Members live in their own table (one row per
// membership) so that a PATCH adding one member to a big group writes one
// row, not the whole list.
type group struct {
	ID, DisplayName, ExternalID string
	Doc                         map[string]any
	Created, Modified           string
	Version                     int64
}

const groupCols = "id, display_name, COALESCE(external_id,''), doc, created, modified, version"

func scanGroup(r scanner) (*group, error) {
	g := &group{}
	var doc string
	if err := r.Scan(&g.ID, &g.DisplayName, &g.ExternalID, &doc, &g.Created, &g.Modified, &g.Version); err != nil {
		return nil, err
	}
	var err error
	if g.Doc, err = decodeDoc(doc); err != nil {
		return nil, fmt.Errorf("group %s: stored document: %w", g.ID, err)
	}
	return g, nil
}

func getGroup(ctx context.Context, q querier, where string, a ...any) (*group, error) {
	g, err := scanGroup(q.QueryRowContext(ctx, "SELECT "+groupCols+" FROM groups WHERE "+where, a...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return g, err
}

// member is one membership as served: value (the member's id), display
// and type.
func members(ctx context.Context, q querier, groupID string) ([]any, error) {
	rows, err := q.QueryContext(ctx, `SELECT m.member_id, u.user_name, g.display_name FROM members m
		LEFT JOIN users u ON u.id = m.member_id LEFT JOIN groups g ON g.id = m.member_id
		WHERE m.group_id = ? ORDER BY m.seq`, groupID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []any{}
	for rows.Next() {
		var id string
		var un, gn sql.NullString
		if err := rows.Scan(&id, &un, &gn); err != nil {
			return nil, err
		}
		m := map[string]any{"value": id}
		switch {
		case un.Valid:
			m["display"], m["type"], m["$ref"] = un.String, "User", "Users/"+id
		case gn.Valid:
			m["display"], m["type"], m["$ref"] = gn.String, "Group", "Groups/"+id
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

func (g *group) resource(mem []any) escim.Resource {
	attrs := make(escim.ResourceAttributes, len(g.Doc)+2)
	for k, v := range g.Doc {
		attrs[k] = v
	}
	attrs["displayName"] = g.DisplayName
	if mem != nil {
		attrs["members"] = mem
	}
	r := escim.Resource{ID: g.ID, Attributes: attrs, Meta: meta(g.Created, g.Modified, g.Version)}
	if g.ExternalID != "" {
		r.ExternalID = optional.NewString(g.ExternalID)
	}
	return r
}

// putGroup validates and writes g's row (insert when prev is nil).
func (s *Store) putGroup(ctx context.Context, tx *sql.Tx, prev *group, doc map[string]any, externalID *string) (*group, error) {
	name, _ := doc["displayName"].(string)
	if strings.TrimSpace(name) == "" {
		return nil, invalid("displayName is required")
	}
	id := newID()
	if prev != nil {
		id = prev.ID
	}
	if other, err := getGroup(ctx, tx, "display_name_lc = ? AND id <> ?", strings.ToLower(name), id); err != nil {
		return nil, err
	} else if other != nil {
		return nil, conflict("displayName %q is already taken by %s (unique ignoring case)", name, holder(ctx, tx, nil, "groups", other.ID, other.DisplayName))
	}
	if prev == nil || prev.DisplayName != name {
		// Only a new or renamed group: the check reads every group.
		if err := s.checkGroupName(ctx, tx, id, name); err != nil {
			return nil, err
		}
	}
	key := "group:" + strings.ToLower(name)
	if prev != nil {
		if err := rename(tx, "gid", "group:"+strings.ToLower(prev.DisplayName), key); err != nil {
			return nil, err
		}
	}
	ext, _ := doc[PosixGroupURN].(map[string]any)
	if ext == nil {
		ext = map[string]any{}
	}
	var sent *int64
	if v, ok := ext["gidNumber"]; ok {
		n, ok := intOf(v)
		if !ok {
			return nil, invalid("%s:gidNumber is not an integer", PosixGroupURN)
		}
		sent = &n
	}
	gid, err := s.allocate(tx, "gid", key, sent)
	if err != nil {
		if errors.Is(err, errNumberTaken) {
			return nil, conflict("%v", err)
		}
		return nil, err
	}
	ext["gidNumber"] = gid
	doc[PosixGroupURN] = ext
	cleanDoc(doc)
	g := &group{ID: id, DisplayName: name, Doc: doc, Modified: now()}
	if externalID != nil {
		g.ExternalID = *externalID
	} else if prev != nil {
		g.ExternalID = prev.ExternalID
	}
	body, err := encodeDoc(doc)
	if err != nil {
		return nil, err
	}
	var xid any
	if g.ExternalID != "" {
		xid = g.ExternalID
	}
	if prev == nil {
		g.Created, g.Version = g.Modified, 1
		_, err = tx.Exec(`INSERT INTO groups(id, display_name, display_name_lc, external_id, doc, created, modified, version)
			VALUES(?,?,?,?,?,?,?,1)`, g.ID, g.DisplayName, strings.ToLower(g.DisplayName), xid, body, g.Created, g.Modified)
	} else {
		g.Created, g.Version = prev.Created, prev.Version+1
		_, err = tx.Exec(`UPDATE groups SET display_name=?, display_name_lc=?, external_id=?, doc=?, modified=?, version=? WHERE id=?`,
			g.DisplayName, strings.ToLower(g.DisplayName), xid, body, g.Modified, g.Version, g.ID)
	}
	return g, err
}

// memberIDs reads the value of each member item.
func memberIDs(v any) ([]string, error) {
	list, ok := v.([]any)
	if !ok && v != nil {
		if m, isMap := v.(map[string]any); isMap {
			list = []any{m}
		} else {
			return nil, invalid("members must be a list of {\"value\": id}")
		}
	}
	var out []string
	for _, it := range list {
		id, ok := itemValue(it)
		if !ok || id == "" {
			return nil, invalid("a member has no value (the member's id)")
		}
		out = append(out, id)
	}
	return out, nil
}

// addMembers adds members that exist in the request's scope (a user or
// group of another client's scope is absent for this one).
func addMembers(ctx context.Context, tx *sql.Tx, groupID string, ids []string) (int, error) {
	n := 0
	scoped, scopeArgs := scopeWhere(ctx)
	for _, id := range ids {
		var kind string
		q := "SELECT 'u' FROM users WHERE id=? AND " + scoped + " UNION ALL SELECT 'g' FROM groups WHERE id=? AND " + scoped
		args := append(append([]any{id}, scopeArgs...), append([]any{id}, scopeArgs...)...)
		if tx.QueryRow(q, args...).Scan(&kind) != nil {
			return n, invalid("member %q is not a user or group here (push it first)", id)
		}
		res, err := tx.Exec(`INSERT OR IGNORE INTO members(group_id, member_id, seq)
			VALUES(?, ?, (SELECT COALESCE(max(seq), 0) + 1 FROM members WHERE group_id = ?))`, groupID, id, groupID)
		if err != nil {
			return n, err
		}
		k, _ := res.RowsAffected()
		n += int(k)
	}
	return n, nil
}

func removeMembers(tx *sql.Tx, groupID string, ids []string) (int, error) {
	n := 0
	for _, id := range ids {
		res, err := tx.Exec("DELETE FROM members WHERE group_id=? AND member_id=?", groupID, id)
		if err != nil {
			return n, err
		}
		k, _ := res.RowsAffected()
		n += int(k)
	}
	return n, nil
}

// isMembers reports whether an attribute path names members.
func isMembers(p *filter.Path) bool {
	return p != nil && strings.EqualFold(p.AttributePath.AttributeName, "members") &&
		(p.AttributePath.URI() == "" || p.AttributePath.URI() == CoreGroupURN)
}

// Groups is the /Groups handler.
type Groups struct {
	s   *Store
	sch docSchemas
}

// Create stores a new group with its members.
func (h *Groups) Create(r *http.Request, attrs escim.ResourceAttributes) (escim.Resource, error) {
	var out *group
	err := h.s.write(r.Context(), func(tx *sql.Tx) (bool, error) {
		ids, err := memberIDs(attrs["members"])
		if err != nil {
			return false, err
		}
		out, err = h.s.putGroup(r.Context(), tx, nil, map[string]any(attrs), externalIDOf(attrs))
		if err != nil {
			return false, err
		}
		if err := claim(r.Context(), tx, "groups", out.ID); err != nil {
			return false, err
		}
		_, err = addMembers(r.Context(), tx, out.ID, ids)
		return err == nil, err
	})
	if err != nil {
		return escim.Resource{}, err
	}
	note(r, "group "+out.ID+" "+out.DisplayName)
	return h.withMembers(r.Context(), out)
}

func (h *Groups) withMembers(ctx context.Context, g *group) (escim.Resource, error) {
	mem, err := members(ctx, h.s.rdb, g.ID)
	if err != nil {
		return escim.Resource{}, err
	}
	return g.resource(mem), nil
}

// excludesMembers: Entra asks excludedAttributes=members; big groups are
// then cheap to read.
func excludesMembers(r *http.Request) bool {
	for _, v := range strings.Split(r.URL.Query().Get("excludedAttributes"), ",") {
		if strings.EqualFold(strings.TrimSpace(v), "members") {
			return true
		}
	}
	return false
}

// Get returns one group with its members.
func (h *Groups) Get(r *http.Request, id string) (escim.Resource, error) {
	g, err := getGroup(r.Context(), h.s.rdb, "id = ?", id)
	if err != nil {
		return escim.Resource{}, err
	}
	if out, err := outOfScope(r.Context(), h.s.rdb, r, "groups", id); err != nil {
		return escim.Resource{}, err
	} else if g == nil || out {
		return escim.Resource{}, notFound(id)
	}
	if excludesMembers(r) {
		return g.resource(nil), nil
	}
	return h.withMembers(r.Context(), g)
}

// Replace is PUT: attributes and the whole member list.
func (h *Groups) Replace(r *http.Request, id string, attrs escim.ResourceAttributes) (escim.Resource, error) {
	var out *group
	err := h.s.write(r.Context(), func(tx *sql.Tx) (bool, error) {
		prev, err := getGroup(r.Context(), tx, "id = ?", id)
		if err != nil {
			return false, err
		}
		if out, err := outOfScope(r.Context(), tx, r, "groups", id); err != nil {
			return false, err
		} else if prev == nil || out {
			return false, notFound(id)
		}
		if err := claim(r.Context(), tx, "groups", id); err != nil {
			return false, err
		}
		ids, err := memberIDs(attrs["members"])
		if err != nil {
			return false, err
		}
		if out, err = h.s.putGroup(r.Context(), tx, prev, map[string]any(attrs), externalIDOf(attrs)); err != nil {
			return false, err
		}
		if _, err := tx.Exec("DELETE FROM members WHERE group_id=?", id); err != nil {
			return false, err
		}
		_, err = addMembers(r.Context(), tx, id, ids)
		return err == nil, err
	})
	if err != nil {
		return escim.Resource{}, err
	}
	note(r, "group "+out.ID+" "+out.DisplayName)
	return h.withMembers(r.Context(), out)
}

// Patch applies operations; member operations become row inserts and
// deletes: add (a value list), remove with a value list (Entra), remove
// members[value eq "id"] (Okta), replace (the whole list).
func (h *Groups) Patch(r *http.Request, id string, ops []escim.PatchOperation) (escim.Resource, error) {
	var out *group
	docChanged := false
	err := h.s.write(r.Context(), func(tx *sql.Tx) (bool, error) {
		prev, err := getGroup(r.Context(), tx, "id = ?", id)
		if err != nil {
			return false, err
		}
		if out, err := outOfScope(r.Context(), tx, r, "groups", id); err != nil {
			return false, err
		} else if prev == nil || out {
			return false, notFound(id)
		}
		if err := claim(r.Context(), tx, "groups", id); err != nil {
			return false, err
		}
		doc := prev.resource(nil).Attributes
		if prev.ExternalID != "" {
			doc["externalId"] = prev.ExternalID
		}
		docOps := 0
		for _, op := range ops {
			if op.Path == nil {
				if m, ok := op.Value.(map[string]any); ok {
					if k := findKey(m, "members"); m[k] != nil {
						mp := filter.Path{AttributePath: filter.AttributePath{AttributeName: "members"}}
						if err := h.memberOp(r.Context(), tx, id, op.Op, &mp, m[k]); err != nil {
							return false, err
						}
						delete(m, k)
					}
					if len(m) == 0 {
						continue
					}
				}
			} else if isMembers(op.Path) {
				if err := h.memberOp(r.Context(), tx, id, op.Op, op.Path, op.Value); err != nil {
					return false, err
				}
				continue
			}
			if err := h.sch.applyOp(doc, op); err != nil {
				return false, err
			}
			docOps++
		}
		docChanged = docOps > 0
		if docOps > 0 {
			ext := prev.ExternalID
			if v, ok := doc["externalId"].(string); ok {
				ext = v
			}
			out, err = h.s.putGroup(r.Context(), tx, prev, doc, &ext)
			if err != nil {
				return false, err
			}
		} else {
			if _, err := tx.Exec("UPDATE groups SET modified=?, version=version+1 WHERE id=?", now(), id); err != nil {
				return false, err
			}
			out = prev
			out.Version++
		}
		return true, nil
	})
	if err != nil {
		return escim.Resource{}, err
	}
	note(r, "group "+out.ID+" "+out.DisplayName)
	if !docChanged {
		// Only members changed: 204 No Content (RFC 7644 3.5.2), which
		// Okta and Entra expect; answering with a 10,000-member list on
		// every member PATCH would make a burst quadratic.
		return escim.Resource{}, nil
	}
	if excludesMembers(r) {
		return out.resource(nil), nil
	}
	return h.withMembers(r.Context(), out)
}

func (h *Groups) memberOp(ctx context.Context, tx *sql.Tx, groupID, op string, p *filter.Path, value any) error {
	if p.ValueExpression != nil {
		if op != escim.PatchOperationRemove {
			return invalid("%s %s: only remove takes a members filter", op, p)
		}
		mem, err := members(ctx, tx, groupID)
		if err != nil {
			return err
		}
		var drop []string
		for _, it := range mem {
			if matchItem(it, p.ValueExpression) {
				drop = append(drop, it.(map[string]any)["value"].(string))
			}
		}
		_, err = removeMembers(tx, groupID, drop)
		return err
	}
	if p.SubAttribute != nil || p.AttributePath.SubAttribute != nil {
		return invalid("%s: a member's sub-attributes cannot be changed", p)
	}
	ids, err := memberIDs(value)
	if err != nil {
		return err
	}
	switch op {
	case escim.PatchOperationAdd:
		_, err = addMembers(ctx, tx, groupID, ids)
	case escim.PatchOperationReplace:
		if _, err = tx.Exec("DELETE FROM members WHERE group_id=?", groupID); err == nil {
			_, err = addMembers(ctx, tx, groupID, ids)
		}
	case escim.PatchOperationRemove:
		if len(ids) == 0 {
			_, err = tx.Exec("DELETE FROM members WHERE group_id=?", groupID)
		} else {
			_, err = removeMembers(tx, groupID, ids)
		}
	}
	return err
}

// Delete removes a group; its gid stays in the ledger.
func (h *Groups) Delete(r *http.Request, id string) error {
	return h.s.write(r.Context(), func(tx *sql.Tx) (bool, error) {
		prev, err := getGroup(r.Context(), tx, "id = ?", id)
		if err != nil {
			return false, err
		}
		if out, err := outOfScope(r.Context(), tx, r, "groups", id); err != nil {
			return false, err
		} else if prev == nil || out {
			return false, notFound(id)
		}
		if err := claim(r.Context(), tx, "groups", id); err != nil {
			return false, err
		}
		note(r, "group "+prev.ID+" "+prev.DisplayName)
		for _, q := range []string{"DELETE FROM groups WHERE id=?", "DELETE FROM members WHERE group_id=? OR member_id=?"} {
			args := []any{id}
			if strings.Count(q, "?") == 2 {
				args = append(args, id)
			}
			if _, err := tx.Exec(q, args...); err != nil {
				return false, err
			}
		}
		return true, release(tx, "gid", "group:"+strings.ToLower(prev.DisplayName))
	})
}

// GetAll lists groups; displayName/externalId/id eq filters use indexes.
func (h *Groups) GetAll(r *http.Request, p escim.ListRequestParams) (escim.Page, error) {
	ctx := r.Context()
	var expr filter.Expression
	if p.FilterValidator != nil {
		expr = p.FilterValidator.GetFilter()
	}
	noMembers := excludesMembers(r)
	where, args := scopeWhere(ctx)
	if col, v, ok := indexedEq(expr, map[string]string{"displayname": "display_name_lc", "externalid": "external_id", "id": "id"}); ok {
		if col == "display_name_lc" {
			v = strings.ToLower(v)
		}
		where, args, expr = where+" AND "+col+" = ?", append(args, v), nil
	}
	page := escim.Page{Resources: []escim.Resource{}}
	limit := ""
	if expr == nil {
		// No filter to evaluate here: count and page in SQL.
		if err := h.s.rdb.QueryRowContext(ctx, "SELECT count(*) FROM groups WHERE "+where, args...).Scan(&page.TotalResults); err != nil {
			return escim.Page{}, err
		}
		if p.Count <= 0 {
			return page, nil
		}
		limit = " LIMIT ? OFFSET ?"
		args = append(args, p.Count, max(p.StartIndex, 1)-1)
	}
	rows, err := h.s.rdb.QueryContext(ctx, "SELECT "+groupCols+" FROM groups WHERE "+where+" ORDER BY rowid"+limit, args...)
	if err != nil {
		return escim.Page{}, err
	}
	var all []*group
	for rows.Next() {
		g, err := scanGroup(rows)
		if err != nil {
			rows.Close()
			return escim.Page{}, err
		}
		all = append(all, g)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return escim.Page{}, err
	}
	for _, g := range all {
		var mem []any
		if expr == nil {
			if !noMembers {
				if mem, err = members(ctx, h.s.rdb, g.ID); err != nil {
					return escim.Page{}, err
				}
			}
			page.Resources = append(page.Resources, g.resource(mem))
			continue
		}
		if mem, err = members(ctx, h.s.rdb, g.ID); err != nil {
			return escim.Page{}, err
		}
		m := map[string]any(g.resource(mem).Attributes)
		m["id"], m["externalId"], m["meta"] = g.ID, g.ExternalID, metaAttrs(g.Created, g.Modified)
		if !matchExpr(m, expr) {
			continue
		}
		page.TotalResults++
		if page.TotalResults >= p.StartIndex && len(page.Resources) < p.Count {
			if noMembers {
				mem = nil
			}
			page.Resources = append(page.Resources, g.resource(mem))
		}
	}
	return page, nil
}

// checkGroupName refuses a displayName the group name policy cannot map
// to a Linux name (400, naming the group_names key that would), or one
// whose Linux name another stored group's name maps to (409): either
// would otherwise be accepted here and then silently left out of every
// snapshot by validation.
func (s *Store) checkGroupName(ctx context.Context, tx *sql.Tx, id, name string) error {
	pol := s.opts.GroupNames.OrDefault()
	linux, err := pol.Map(id, name)
	if err != nil {
		return invalid("%v", err)
	}
	if err := s.checkFree("displayName", name, linux); err != nil {
		return err
	}
	rows, err := tx.QueryContext(ctx, "SELECT id, display_name FROM groups WHERE id <> ?", id)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var oid, oname string
		if err := rows.Scan(&oid, &oname); err != nil {
			return err
		}
		if n, err := pol.Map(oid, oname); err == nil && n == linux {
			rows.Close()
			return conflict("displayName %q becomes the Linux group name %q, which %s already has (group_names maps both to it; rename one, or set group_names.rename)", name, linux, holder(ctx, tx, nil, "groups", oid, oname))
		}
	}
	return rows.Err()
}
