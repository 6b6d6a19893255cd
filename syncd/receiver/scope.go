package receiver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
)

// Per-client scope (issue 20). Every user and group row records the scope
// of the client that created it (column scope; NULL: no creator known).
// Unless ServerOptions.SharedScope is set, a client reads, lists, changes
// and deletes only rows of its own scope, plus rows with no scope, which
// the first write by a scoped client claims. A row of another scope is
// answered 404 as if absent (RFC 7644 section 6: a tenant's resources do
// not exist for another tenant), with the refusal in the audit target.

type scopeKey struct{}

// reqScope is the scope of the request: name is the client's scope
// (empty for local commands), enforce is false with shared_scope.
type reqScope struct {
	name    string
	enforce bool
}

func withScope(ctx context.Context, name string, enforce bool) context.Context {
	return context.WithValue(ctx, scopeKey{}, reqScope{name: name, enforce: enforce})
}

func scopeOf(ctx context.Context) reqScope {
	sc, _ := ctx.Value(scopeKey{}).(reqScope)
	return sc
}

// scopeWhere is the SQL condition (and its argument) that keeps a list to
// the request's scope: "1" when nothing is enforced.
func scopeWhere(ctx context.Context) (string, []any) {
	sc := scopeOf(ctx)
	if !sc.enforce {
		return "1", nil
	}
	return "(scope IS NULL OR scope = ?)", []any{sc.name}
}

// outOfScope reports whether the row id of table (users or groups) belongs
// to another scope than the request's. When it does, the audit target says
// so; the caller answers 404 as for an absent id.
func outOfScope(ctx context.Context, q querier, r *http.Request, table, id string) (bool, error) {
	sc := scopeOf(ctx)
	if !sc.enforce {
		return false, nil
	}
	var owner sql.NullString
	err := q.QueryRowContext(ctx, "SELECT scope FROM "+table+" WHERE id = ?", id).Scan(&owner)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !owner.Valid || owner.String == sc.name {
		return false, nil
	}
	if r != nil {
		note(r, fmt.Sprintf("%s %s refused: created by scope %q, client scope %q (receiver.shared_scope)", table, id, owner.String, sc.name))
	}
	return true, nil
}

// claim records the request's scope on a row that has none: the row a
// client creates, or an unowned row (a store from before scopes, a local
// `syncd users add`) that a client writes first.
func claim(ctx context.Context, tx *sql.Tx, table, id string) error {
	sc := scopeOf(ctx)
	if sc.name == "" {
		return nil
	}
	_, err := tx.ExecContext(ctx, "UPDATE "+table+" SET scope = ? WHERE id = ? AND scope IS NULL", sc.name, id)
	return err
}

// migrateScope adds the columns a store made before them lacks: users
// and groups scope (per-client scope), ids source (the userName an entry
// was made for: users.go inheritsUID).
func migrateScope(db *sql.DB) error {
	for _, tc := range [][2]string{{"users", "scope"}, {"groups", "scope"}, {"ids", "source"}} {
		var n int
		if err := db.QueryRow("SELECT count(*) FROM pragma_table_info(?) WHERE name = ?", tc[0], tc[1]).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			if _, err := db.Exec("ALTER TABLE " + tc[0] + " ADD COLUMN " + tc[1] + " TEXT"); err != nil {
				return fmt.Errorf("adding %s.%s: %w", tc[0], tc[1], err)
			}
		}
	}
	return nil
}

// holder describes the row id of table (users or groups) named name for a
// 409 answered to the request: its id and name when the request's scope
// may see it, else only that another client's scope holds it. A conflict
// must not tell a token holder another IdP's ids or names (issue 20); the
// audit target keeps the full story.
func holder(ctx context.Context, q querier, r *http.Request, table, id, name string) string {
	kind := map[string]string{"users": "user", "groups": "group"}[table]
	hidden, err := outOfScope(ctx, q, r, table, id)
	if err != nil || hidden {
		// The audit log (root's) keeps what the answer leaves out.
		noteCtx(ctx, fmt.Sprintf("conflict with %s %s (%q) of another scope, not named in the answer", kind, id, name))
		return fmt.Sprintf("a %s created by another client's scope (receiver.clients scope; ask that IdP's admin, or set receiver.shared_scope)", kind)
	}
	return fmt.Sprintf("%s %s (%q)", kind, id, name)
}
