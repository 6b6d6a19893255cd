// Package migrate compares what a node resolves today (its current name
// service: files, SSSD, LDAP, nsscache, as `getent` answers, or given
// passwd/group files) with a scimbridge snapshot, before the node's
// nsswitch.conf switches to scim: every user and group whose uid, gid,
// home or membership would change, and what on the node is owned by an
// id that would change owner.
package migrate

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Passwd is one passwd line.
type Passwd struct {
	Name     string
	UID, GID uint32
	Home     string
	Shell    string
}

// Group is one group line.
type Group struct {
	Name    string
	GID     uint32
	Members []string
}

// ParsePasswd reads passwd(5) lines (as getent passwd prints them).
func ParsePasswd(r io.Reader) ([]Passwd, error) {
	var out []Passwd
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<24)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || line[0] == '#' || line[0] == '+' || line[0] == '-' {
			continue
		}
		f := strings.Split(line, ":")
		if len(f) != 7 {
			return nil, fmt.Errorf("passwd line %d: %d fields, want 7", n, len(f))
		}
		uid, err1 := strconv.ParseUint(f[2], 10, 32)
		gid, err2 := strconv.ParseUint(f[3], 10, 32)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("passwd line %d: uid or gid is not a number", n)
		}
		out = append(out, Passwd{Name: f[0], UID: uint32(uid), GID: uint32(gid), Home: f[5], Shell: f[6]})
	}
	return out, sc.Err()
}

// ParseGroup reads group(5) lines.
func ParseGroup(r io.Reader) ([]Group, error) {
	var out []Group
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<26)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || line[0] == '#' || line[0] == '+' || line[0] == '-' {
			continue
		}
		f := strings.Split(line, ":")
		if len(f) != 4 {
			return nil, fmt.Errorf("group line %d: %d fields, want 4", n, len(f))
		}
		gid, err := strconv.ParseUint(f[2], 10, 32)
		if err != nil {
			return nil, fmt.Errorf("group line %d: gid is not a number", n)
		}
		g := Group{Name: f[0], GID: uint32(gid)}
		if f[3] != "" {
			g.Members = strings.Split(f[3], ",")
		}
		out = append(out, g)
	}
	return out, sc.Err()
}

// Change is one thing that would change for a name or an id.
type Change struct {
	Kind   string `json:"kind"` // user or group
	Name   string `json:"name"`
	What   string `json:"what"` // uid, gid, home, members, new, uid-owner, gid-owner
	Now    string `json:"now"`
	After  string `json:"after"`
	Detail string `json:"detail,omitempty"`
}

func (c Change) String() string {
	s := fmt.Sprintf("%s %s: %s %s -> %s", c.Kind, c.Name, c.What, c.Now, c.After)
	if c.Detail != "" {
		s += " (" + c.Detail + ")"
	}
	return s
}

// Report is what would change.
type Report struct {
	Changes []Change `json:"changes"`
	// Owned: files and processes owned by ids whose owner would change.
	Owned []string `json:"owned,omitempty"`
	// New: snapshot users and groups the node does not know yet (no
	// change to anything existing).
	NewUsers, NewGroups int
}

// Compare lists what switching from (curPw, curGr) to the snapshot's
// users and groups would change. Names the node resolves and the
// snapshot does not are left alone (other sources still answer them).
func Compare(curPw []Passwd, curGr []Group, snapPw []Passwd, snapGr []Group) *Report {
	r := &Report{}
	byName := map[string]Passwd{}
	byUID := map[uint32]Passwd{}
	for _, p := range curPw {
		if _, dup := byName[p.Name]; !dup {
			byName[p.Name] = p
		}
		if _, dup := byUID[p.UID]; !dup {
			byUID[p.UID] = p
		}
	}
	for _, s := range snapPw {
		c, ok := byName[s.Name]
		if !ok {
			r.NewUsers++
			if o, taken := byUID[s.UID]; taken {
				r.Changes = append(r.Changes, Change{Kind: "user", Name: s.Name, What: "uid-owner",
					Now: fmt.Sprintf("%d is %s", s.UID, o.Name), After: fmt.Sprintf("%d is %s too", s.UID, s.Name),
					Detail: "the uid already belongs to another account: its files would show two owners"})
			}
			continue
		}
		if c.UID != s.UID {
			r.Changes = append(r.Changes, Change{Kind: "user", Name: s.Name, What: "uid", Now: fmt.Sprint(c.UID), After: fmt.Sprint(s.UID),
				Detail: "files owned by the old uid lose their owner's name"})
		}
		if c.GID != s.GID {
			r.Changes = append(r.Changes, Change{Kind: "user", Name: s.Name, What: "gid", Now: fmt.Sprint(c.GID), After: fmt.Sprint(s.GID)})
		}
		if c.Home != s.Home {
			r.Changes = append(r.Changes, Change{Kind: "user", Name: s.Name, What: "home", Now: c.Home, After: s.Home})
		}
	}
	gByName := map[string]Group{}
	gByGID := map[uint32]Group{}
	for _, g := range curGr {
		if _, dup := gByName[g.Name]; !dup {
			gByName[g.Name] = g
		}
		if _, dup := gByGID[g.GID]; !dup {
			gByGID[g.GID] = g
		}
	}
	for _, s := range snapGr {
		c, ok := gByName[s.Name]
		if !ok {
			r.NewGroups++
			if o, taken := gByGID[s.GID]; taken {
				r.Changes = append(r.Changes, Change{Kind: "group", Name: s.Name, What: "gid-owner",
					Now: fmt.Sprintf("%d is %s", s.GID, o.Name), After: fmt.Sprintf("%d is %s too", s.GID, s.Name)})
			}
			continue
		}
		if c.GID != s.GID {
			r.Changes = append(r.Changes, Change{Kind: "group", Name: s.Name, What: "gid", Now: fmt.Sprint(c.GID), After: fmt.Sprint(s.GID)})
		}
		added, removed := diffSets(c.Members, s.Members)
		if len(added)+len(removed) > 0 {
			r.Changes = append(r.Changes, Change{Kind: "group", Name: s.Name, What: "members",
				Now: fmt.Sprintf("%d", len(c.Members)), After: fmt.Sprintf("%d", len(s.Members)),
				Detail: describe(added, removed)})
		}
	}
	sort.SliceStable(r.Changes, func(i, j int) bool {
		if r.Changes[i].Kind != r.Changes[j].Kind {
			return r.Changes[i].Kind > r.Changes[j].Kind // users first
		}
		return r.Changes[i].Name < r.Changes[j].Name
	})
	return r
}

func diffSets(now, after []string) (added, removed []string) {
	in := map[string]bool{}
	for _, m := range now {
		in[m] = true
	}
	out := map[string]bool{}
	for _, m := range after {
		out[m] = true
		if !in[m] {
			added = append(added, m)
		}
	}
	for _, m := range now {
		if !out[m] {
			removed = append(removed, m)
		}
	}
	sort.Strings(added)
	sort.Strings(removed)
	return added, removed
}

func describe(added, removed []string) string {
	var parts []string
	if len(added) > 0 {
		parts = append(parts, "+"+strings.Join(clip(added), ",+"))
	}
	if len(removed) > 0 {
		parts = append(parts, "-"+strings.Join(clip(removed), ",-"))
	}
	return strings.Join(parts, " ")
}

func clip(s []string) []string {
	if len(s) > 10 {
		return append(s[:10:10], fmt.Sprintf("... %d more", len(s)-10))
	}
	return s
}

// ChangedIDs are the uids and gids whose owner or number would change.
func (r *Report) ChangedIDs(curPw []Passwd, curGr []Group) (uids, gids map[uint32]string) {
	uids, gids = map[uint32]string{}, map[uint32]string{}
	pw := map[string]Passwd{}
	for _, p := range curPw {
		pw[p.Name] = p
	}
	gr := map[string]Group{}
	for _, g := range curGr {
		gr[g.Name] = g
	}
	for _, c := range r.Changes {
		switch {
		case c.Kind == "user" && c.What == "uid":
			uids[pw[c.Name].UID] = c.Name
		case c.Kind == "user" && c.What == "uid-owner":
			if n, err := strconv.ParseUint(strings.Fields(c.Now)[0], 10, 32); err == nil {
				uids[uint32(n)] = c.Name
			}
		case c.Kind == "group" && c.What == "gid":
			gids[gr[c.Name].GID] = c.Name
		case c.Kind == "group" && c.What == "gid-owner":
			// a new SCIM group takes a gid a local group has: files of
			// that gid get a second group name
			if n, err := strconv.ParseUint(strings.Fields(c.Now)[0], 10, 32); err == nil {
				gids[uint32(n)] = c.Name
			}
		}
	}
	return uids, gids
}

// Processes lists running processes whose real uid is in uids (from
// /proc; procDir for tests).
func Processes(procDir string, uids map[uint32]string) []string {
	var out []string
	des, _ := os.ReadDir(procDir)
	for _, de := range des {
		if _, err := strconv.Atoi(de.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(procDir, de.Name(), "status"))
		if err != nil {
			continue
		}
		var name string
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Name:"); ok {
				name = strings.TrimSpace(v)
			}
			if v, ok := strings.CutPrefix(line, "Uid:"); ok {
				f := strings.Fields(v)
				if len(f) > 0 {
					if n, err := strconv.ParseUint(f[0], 10, 32); err == nil {
						if who, hit := uids[uint32(n)]; hit {
							out = append(out, fmt.Sprintf("process %s (%s) runs as uid %d (%s)", de.Name(), name, n, who))
						}
					}
				}
			}
		}
	}
	return out
}
