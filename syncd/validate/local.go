package validate

import (
	"bufio"
	"fmt"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
)

// Local is the node's own account database (/etc/passwd, /etc/group).
// SCIM entries must not shadow or alias a local account: a SCIM user
// named "root", or with the uid of "slurm", would be either invisible
// (files is first in nsswitch.conf) or an alias with that account's
// files.
type Local struct {
	UserNames  map[string]bool
	UIDs       map[int64]bool
	GroupNames map[string]bool
	GIDs       map[int64]bool
	// Members maps a (lower-cased) name listed as a member on a local
	// group line to those groups' names.
	Members map[string][]string
	// Homes maps a local account's home to its name ("/" left out).
	Homes map[string]string
	// GroupByGID names local groups by gid.
	GroupByGID map[int64]string
}

// groupLabel is " NAME" for a local gid, or "".
func (l *Local) groupLabel(gid int64) string {
	if n := l.GroupByGID[gid]; n != "" {
		return " " + n
	}
	return ""
}

// ReadLocal reads passwd- and group-format files. A missing file is an
// error: without it, clashes could not be detected.
func ReadLocal(passwdPath, groupPath string) (*Local, error) {
	l := &Local{
		UserNames: map[string]bool{}, UIDs: map[int64]bool{},
		GroupNames: map[string]bool{}, GIDs: map[int64]bool{},
		Members: map[string][]string{}, Homes: map[string]string{}, GroupByGID: map[int64]string{},
	}
	if err := readColonFile(passwdPath, l.UserNames, l.UIDs, func(f []string, _ int64) {
		if len(f) > 5 && strings.HasPrefix(f[5], "/") {
			if h := path.Clean(f[5]); h != "/" && l.Homes[h] == "" {
				l.Homes[h] = f[0]
			}
		}
	}); err != nil {
		return nil, err
	}
	if err := readColonFile(groupPath, l.GroupNames, l.GIDs, func(f []string, id int64) {
		if id >= 0 && l.GroupByGID[id] == "" {
			l.GroupByGID[id] = f[0]
		}
		if len(f) > 3 {
			for _, m := range strings.Split(f[3], ",") {
				if m = strings.ToLower(strings.TrimSpace(m)); m != "" && !slices.Contains(l.Members[m], f[0]) {
					l.Members[m] = append(l.Members[m], f[0])
				}
			}
		}
	}); err != nil {
		return nil, err
	}
	return l, nil
}

// readColonFile collects field 1 (name) and field 3 (id) of each line.
func readColonFile(file string, names map[string]bool, ids map[int64]bool, more func(fields []string, id int64)) error {
	f, err := os.Open(file)
	if err != nil {
		return fmt.Errorf("validate: local accounts: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20) // group lines can be long
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' || line[0] == '+' || line[0] == '-' {
			continue // comments and NIS compat entries
		}
		fields := strings.Split(line, ":")
		if len(fields) < 3 {
			continue
		}
		names[strings.ToLower(fields[0])] = true
		id, err := strconv.ParseInt(fields[2], 10, 64)
		if err == nil {
			ids[id] = true
		} else {
			id = -1
		}
		more(fields, id)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("validate: local accounts: read %s: %w", file, err)
	}
	return nil
}
