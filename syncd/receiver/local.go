package receiver

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// Local changes: `syncd users ...`, `syncd groups ...` and `syncd keys
// set` on the head write through the same store, rules and ledger as the
// SCIM handlers, so a small lab needs no identity provider at all, and a
// cluster with one can still upload keys its IdP cannot send. Each change
// is audited (client "local:<who>") in its own transaction.

// LocalUser are the attributes `syncd users add` takes.
type LocalUser struct {
	Name, DisplayName, Email, Shell, Home string
}

func (s *Store) auditTx(tx *sql.Tx, client, method, target string, err error) {
	detail, status := "", 200
	if err != nil {
		detail, status = err.Error(), 400
	}
	tx.Exec(`INSERT INTO audit(at, client, remote, method, path, status, target, detail) VALUES(?,?,?,?,?,?,?,?)`,
		time.Now().UTC().Format(time.RFC3339Nano), client, "local", method, "-", status, target, detail)
}

// findUser finds a user by POSIX name or userName (ignoring case).
func findUser(ctx context.Context, tx *sql.Tx, name string) (*user, error) {
	lc := strings.ToLower(name)
	u, err := getUser(ctx, tx, "posix_name = ? OR user_name_lc = ?", lc, lc)
	if err != nil {
		return nil, err
	}
	if u == nil {
		return nil, fmt.Errorf("no user %q in the receiver store", name)
	}
	return u, nil
}

// AddUser creates a user (or re-creates one: a name seen before gets its
// old uid back from the ledger).
func (s *Store) AddUser(ctx context.Context, client string, lu LocalUser) (uid int64, err error) {
	err = s.write(ctx, func(tx *sql.Tx) (bool, error) {
		doc := map[string]any{"userName": lu.Name, "active": true}
		if lu.DisplayName != "" {
			doc["displayName"] = lu.DisplayName
		}
		if lu.Email != "" {
			doc["emails"] = []any{map[string]any{"value": lu.Email, "primary": true, "type": "work"}}
		}
		ext := map[string]any{}
		if lu.Shell != "" {
			ext["loginShell"] = lu.Shell
		}
		if lu.Home != "" {
			ext["homeDirectory"] = lu.Home
		}
		if lu.DisplayName != "" {
			ext["gecos"] = lu.DisplayName
		}
		doc[PosixUserURN] = ext
		u, err := s.putUser(ctx, tx, nil, doc, nil)
		if err == nil {
			uid, _ = intOf(u.Doc[PosixUserURN].(map[string]any)["uidNumber"])
		}
		s.auditTx(tx, client, "users add", lu.Name, err)
		return err == nil, err
	})
	return uid, err
}

// SetActive enables or disables a user.
func (s *Store) SetActive(ctx context.Context, client, name string, active bool) error {
	return s.write(ctx, func(tx *sql.Tx) (bool, error) {
		u, err := findUser(ctx, tx, name)
		if err == nil {
			// Disabling here holds until enabled here (users.go: putUser).
			if active {
				_, err = tx.Exec("DELETE FROM local_holds WHERE posix_name=?", u.PosixName)
			} else {
				_, err = tx.Exec("INSERT INTO local_holds(posix_name, since, by) VALUES(?,?,?) ON CONFLICT(posix_name) DO NOTHING", u.PosixName, now(), client)
			}
		}
		if err == nil {
			u.Doc["active"] = active
			u.Doc["userName"] = u.UserName
			xid := u.ExternalID
			_, err = s.putUser(ctx, tx, u, u.Doc, &xid)
		}
		s.auditTx(tx, client, fmt.Sprintf("users set active=%v", active), name, err)
		return err == nil, err
	})
}

// RemoveUser deletes a user; its uid stays in the ledger.
func (s *Store) RemoveUser(ctx context.Context, client, name string) error {
	return s.write(ctx, func(tx *sql.Tx) (bool, error) {
		u, err := findUser(ctx, tx, name)
		if err == nil {
			err = deleteUser(tx, u)
		}
		s.auditTx(tx, client, "users remove", name, err)
		return err == nil, err
	})
}

// AddMember adds a user to a group, creating the group if needed.
func (s *Store) AddMember(ctx context.Context, client, groupName, userName string) error {
	return s.editMember(ctx, client, "groups add-member", groupName, userName,
		func(tx *sql.Tx, g *group, u *user) error {
			if g == nil {
				var err error
				if g, err = s.putGroup(ctx, tx, nil, map[string]any{"displayName": groupName}, nil); err != nil {
					return err
				}
			}
			_, err := addMembers(ctx, tx, g.ID, []string{u.ID})
			return err
		})
}

// RemoveMember removes a user from a group.
func (s *Store) RemoveMember(ctx context.Context, client, groupName, userName string) error {
	return s.editMember(ctx, client, "groups remove-member", groupName, userName,
		func(tx *sql.Tx, g *group, u *user) error {
			if g == nil {
				return fmt.Errorf("no group %q in the receiver store", groupName)
			}
			n, err := removeMembers(tx, g.ID, []string{u.ID})
			if err == nil && n == 0 {
				return fmt.Errorf("%s is not a member of %s", userName, groupName)
			}
			return err
		})
}

// editMember runs edit on the named user and group (nil when the group does
// not exist) in one audited write: the add-member and remove-member commands.
func (s *Store) editMember(ctx context.Context, client, what, groupName, userName string,
	edit func(tx *sql.Tx, g *group, u *user) error) error {
	return s.write(ctx, func(tx *sql.Tx) (bool, error) {
		err := func() error {
			u, err := findUser(ctx, tx, userName)
			if err != nil {
				return err
			}
			g, err := getGroup(ctx, tx, "display_name_lc = ?", strings.ToLower(groupName))
			if err != nil {
				return err
			}
			return edit(tx, g, u)
		}()
		s.auditTx(tx, client, what, groupName+" "+userName, err)
		return err == nil, err
	})
}

// SetKeys replaces the uploaded SSH keys of a user (added to any keys the
// identity provider sends). No keys removes the upload.
func (s *Store) SetKeys(ctx context.Context, client, name string, keys []string) error {
	return s.write(ctx, func(tx *sql.Tx) (bool, error) {
		u, err := findUser(ctx, tx, name)
		if err == nil {
			if len(keys) == 0 {
				_, err = tx.Exec("DELETE FROM ssh_keys WHERE posix_name=?", u.PosixName)
			} else {
				_, err = tx.Exec(`INSERT INTO ssh_keys(posix_name, keys, modified) VALUES(?,?,?)
					ON CONFLICT(posix_name) DO UPDATE SET keys=excluded.keys, modified=excluded.modified`,
					u.PosixName, strings.Join(keys, "\n"), now())
			}
		}
		s.auditTx(tx, client, "keys set", name, err)
		return err == nil, err
	})
}

// AuditEntry is one audit row, for `syncd receive --audit`.
type AuditEntry struct {
	Seq                                              int64
	At, Client, Remote, Method, Path, Target, Detail string
	Status                                           int
}

// Audit returns the last n audit rows, oldest first.
func (s *Store) Audit(ctx context.Context, n int) ([]AuditEntry, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT seq, at, client, remote, method, path, status, target, detail FROM
		(SELECT * FROM audit ORDER BY seq DESC LIMIT ?) ORDER BY seq`, n)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []AuditEntry
	for rows.Next() {
		var a AuditEntry
		if err := rows.Scan(&a.Seq, &a.At, &a.Client, &a.Remote, &a.Method, &a.Path, &a.Status, &a.Target, &a.Detail); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// PruneAudit deletes audit rows older than before; it returns how many.
func (s *Store) PruneAudit(ctx context.Context, before time.Time) (int64, error) {
	var n int64
	err := s.write(ctx, func(tx *sql.Tx) (bool, error) {
		res, err := tx.Exec("DELETE FROM audit WHERE at < ?", before.UTC().Format(time.RFC3339Nano))
		if err == nil {
			n, _ = res.RowsAffected()
		}
		return false, err
	})
	return n, err
}
