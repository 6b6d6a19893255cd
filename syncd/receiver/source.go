package receiver

import (
	"context"
	"fmt"
	"strings"

	"github.com/scimbridge/scimbridge/syncd/source"
)

// Source is the store seen as an identity source: Fetch reads the whole
// pushed directory in one read transaction, so a snapshot never mixes two
// states. It feeds the same validate → snapshot → Slurm → publish
// pipeline as the SCIM poller.
type Source struct {
	S    *Store
	name string
	// held is what the last Update read (update.go).
	held *held
}

// NewSource names the source in logs and in the snapshot's meta.
func NewSource(s *Store, name string) *Source { return &Source{S: s, name: name} }

// Name implements source.Source.
func (src *Source) Name() string { return src.name }

// Fetch implements source.Source.
func (src *Source) Fetch(ctx context.Context) (*source.Directory, error) {
	s := src.S
	tx, err := s.rdb.BeginTx(ctx, &sqlReadOnly)
	if err != nil {
		return nil, fmt.Errorf("receiver store: %w", err)
	}
	defer tx.Rollback()
	keys := map[string][]string{}
	rows, err := tx.QueryContext(ctx, "SELECT posix_name, keys FROM ssh_keys")
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var n, k string
		if err := rows.Scan(&n, &k); err != nil {
			rows.Close()
			return nil, err
		}
		keys[n] = splitKeys(k)
	}
	rows.Close()

	dir := &source.Directory{}
	rows, err = tx.QueryContext(ctx, "SELECT "+userCols+" FROM users ORDER BY rowid")
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		u, err := scanUser(rows)
		if err != nil {
			rows.Close()
			return nil, err
		}
		dir.Users = append(dir.Users, s.toSource(u, keys[u.PosixName]))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}

	dir.Groups, err = s.readGroups(ctx, tx)
	return dir, err
}

// toSource maps a stored user to what validation expects. The name is the
// derived POSIX name; numbers come from the document's POSIX extension
// (allocated or sent); keys from the configured attribute plus uploads.
func (s *Store) toSource(u *user, uploaded []string) source.User {
	su := source.User{ID: u.ID, ExternalID: u.ExternalID, UserName: u.PosixName}
	active := u.Active
	su.Active = &active
	ext, _ := u.Doc[PosixUserURN].(map[string]any)
	if n, ok := intOf(ext["uidNumber"]); ok {
		su.UID = &n
	}
	if n, ok := intOf(ext["gidNumber"]); ok {
		su.GID = &n
	}
	su.Home, _ = ext["homeDirectory"].(string)
	su.Shell, _ = ext["loginShell"].(string)
	su.GECOS, _ = ext["gecos"].(string)
	if su.GECOS == "" {
		su.GECOS, _ = u.Doc["displayName"].(string)
	}
	su.Quota, su.Malformed = quotaAt(u.Doc, s.opts.QuotaAttribute)
	seen := map[string]bool{}
	for _, k := range append(stringsAt(u.Doc, s.opts.SSHKeysAttribute), uploaded...) {
		k = strings.TrimSpace(k)
		if k != "" && !seen[k] {
			seen[k] = true
			su.SSHKeys = append(su.SSHKeys, k)
		}
	}
	return su
}

// quotaAt reads a quota attribute: its one value, or a Malformed entry.
func quotaAt(doc map[string]any, path string) (string, map[string]string) {
	switch q := stringsAt(doc, path); len(q) {
	case 0:
		return "", nil
	case 1:
		return q[0], nil
	default:
		return "", map[string]string{source.FieldQuota: fmt.Sprintf("%d values, want one", len(q))}
	}
}

// stringsAt reads the strings at an attribute path: "attr", "attr.sub" or
// "urn:...:attr"; multi-valued complex items give their value.
func stringsAt(doc map[string]any, path string) []string {
	if path == "" {
		return nil
	}
	c := doc
	name := path
	if i := strings.LastIndexByte(path, ':'); i >= 0 {
		c, _ = doc[findKey(doc, path[:i])].(map[string]any)
		name = path[i+1:]
	}
	if c == nil {
		return nil
	}
	sub := ""
	if i := strings.IndexByte(name, '.'); i >= 0 {
		name, sub = name[:i], name[i+1:]
	}
	v := c[findKey(c, name)]
	if m, ok := v.(map[string]any); ok && sub != "" {
		v = m[findKey(m, sub)]
	}
	var out []string
	add := func(x any) {
		switch x := x.(type) {
		case string:
			out = append(out, x)
		case map[string]any:
			if s, ok := x[findKey(x, "value")].(string); ok {
				out = append(out, s)
			}
		}
	}
	if list, ok := v.([]any); ok {
		for _, x := range list {
			add(x)
		}
	} else {
		add(v)
	}
	return out
}

func splitKeys(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}
