package mirror

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/scimbridge/scimbridge/syncd/cache"
	"github.com/scimbridge/scimbridge/syncd/validate"
)

// A node's own accounts. The head rejects a SCIM user whom its own
// /etc/passwd or /etc/group claims (validate: local-name, local-uid,
// local-group-member), but a node has its own files: a stale
// `sudo:x:27:ghost` line there makes `files` add gid 27 to the SCIM user
// ghost at every login on that node. A node cannot change the signed
// snapshot (it installs the head's bytes), so it checks the live snapshot
// against its own files after every install and whenever they change,
// and reports each clash at error level, in `syncd status` (exit 1, with
// the line to fix) and in scimbridge_mirror_local_conflicts; pam_scim and
// spank_scim refuse a SCIM user that a local /etc/group line names
// (scim_local_group_member in c/localgroup.c), so the stale line grants
// nothing at login or in a job. The fix is local: take the name off that
// /etc/group line (or rename the local account).

// LocalFiles are the node's passwd and group files (tests point them
// elsewhere).
type LocalFiles struct{ Passwd, Group string }

// DefaultLocalFiles are the files glibc's `files` module reads.
var DefaultLocalFiles = LocalFiles{Passwd: "/etc/passwd", Group: "/etc/group"}

type localCheck struct {
	key       string // live file identity and the files' mtimes and sizes
	conflicts []string
}

func fileKey(paths ...string) string {
	var b strings.Builder
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil {
			fmt.Fprintf(&b, "%s:%d:%d;", p, fi.ModTime().UnixNano(), fi.Size())
		} else {
			fmt.Fprintf(&b, "%s:-;", p)
		}
	}
	return b.String()
}

// checkLocal recomputes the clashes when the live snapshot or the local
// files changed since the last check; r.LocalConflicts gets the result.
func (n *Node) checkLocal(r *Result) {
	files := n.Local
	if files.Passwd == "" {
		files = DefaultLocalFiles
	}
	// The live file by inode, not mtime: a quiet head's manifest moves
	// its mtime (source_contact) on every poll, and installs replace the
	// inode (never written in place).
	key := fileKey(files.Passwd, files.Group)
	if fi, err := os.Stat(n.Live); err == nil {
		id := idOf(fi)
		key += fmt.Sprintf("live:%d:%d:%d", id.dev, id.ino, id.size)
	}
	if n.local == nil || n.local.key != key {
		c, err := LocalConflicts(n.Live, files)
		if err != nil {
			if !os.IsNotExist(err) {
				n.Log.WithError(err).Warn("mirror: cannot check the live snapshot against this node's own accounts")
			}
			return
		}
		if n.local == nil || strings.Join(n.local.conflicts, "\n") != strings.Join(c, "\n") {
			for _, line := range c {
				n.Log.WithField("check", "local accounts").Error("mirror: " + line)
			}
		}
		n.local = &localCheck{key: key, conflicts: c}
	}
	r.LocalConflicts = n.local.conflicts
}

// LocalConflicts lists, one sentence each, the SCIM users of the snapshot
// at live that files claim: a local account of the same name or uid, or
// a local group line listing the name as a member.
func LocalConflicts(live string, files LocalFiles) ([]string, error) {
	loc, err := validate.ReadLocal(files.Passwd, files.Group)
	if err != nil {
		return nil, err
	}
	// The live file was checked whole when it was installed: a few
	// lookups need not read its whole index again (each checks what it
	// reads).
	c, err := cache.OpenLookups(live)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	// Looked up from the local side (a node's files hold tens of names,
	// the snapshot 100,000 users): a lookup per local name, uid and group
	// member, not a walk of every SCIM user (issue 18: that walk was most
	// of a node's install and of every `mirror --once`).
	type clash struct {
		u          cache.User
		name, uid  bool
		localGroup []string
	}
	found := map[string]*clash{}
	add := func(u cache.User, err error) *clash {
		if err != nil {
			return nil
		}
		k := found[u.Name]
		if k == nil {
			k = &clash{u: u}
			found[u.Name] = k
		}
		return k
	}
	lookup := func(name string) (cache.User, error) {
		u, err := c.User(name)
		if err != nil && !errors.Is(err, cache.ErrNotFound) {
			return u, fmt.Errorf("look up %s in %s: %w", name, live, err)
		}
		return u, err
	}
	for name := range loc.UserNames {
		u, err := lookup(name)
		if err != nil && !errors.Is(err, cache.ErrNotFound) {
			return nil, err
		}
		if k := add(u, err); k != nil && strings.ToLower(u.Name) == name {
			k.name = true
		}
	}
	for uid := range loc.UIDs {
		if uid < 0 || uid > math.MaxUint32 {
			continue
		}
		u, err := c.UserByUID(uint32(uid))
		if err != nil && !errors.Is(err, cache.ErrNotFound) {
			return nil, fmt.Errorf("look up uid %d in %s: %w", uid, live, err)
		}
		if k := add(u, err); k != nil {
			k.uid = true
		}
	}
	for name, gl := range loc.Members {
		u, err := lookup(name)
		if err != nil && !errors.Is(err, cache.ErrNotFound) {
			return nil, err
		}
		if k := add(u, err); k != nil && strings.ToLower(u.Name) == name {
			k.localGroup = gl
		}
	}
	all := make([]*clash, 0, len(found))
	for _, k := range found {
		if k.name || k.uid || len(k.localGroup) > 0 {
			all = append(all, k)
		}
	}
	// In uid order, as the walk listed them.
	sort.Slice(all, func(i, j int) bool { return all[i].u.UID < all[j].u.UID })
	var out []string
	for _, k := range all {
		u := k.u
		switch {
		case k.name:
			out = append(out, fmt.Sprintf("SCIM user %s has the name of a local account in %s: `files` answers for it on this node; rename or remove the local account", u.Name, files.Passwd))
		case k.uid:
			out = append(out, fmt.Sprintf("SCIM user %s has uid %d, a local account's in %s: files it owns here are that account's; remove or renumber the local account", u.Name, u.UID, files.Passwd))
		}
		if gl := slices.Clone(k.localGroup); len(gl) > 0 {
			sort.Strings(gl)
			out = append(out, fmt.Sprintf("SCIM user %s is listed as a member of local group(s) %s in %s: on this node the account inherits them at login; remove %s from those lines",
				u.Name, strings.Join(gl, ", "), files.Group, u.Name))
		}
	}
	return out, nil
}
