package validate

import (
	"bufio"
	"fmt"
	"os"
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
}

// ReadLocal reads passwd- and group-format files. A missing file is an
// error: without it, clashes could not be detected.
func ReadLocal(passwdPath, groupPath string) (*Local, error) {
	l := &Local{
		UserNames: map[string]bool{}, UIDs: map[int64]bool{},
		GroupNames: map[string]bool{}, GIDs: map[int64]bool{},
	}
	if err := readColonFile(passwdPath, l.UserNames, l.UIDs); err != nil {
		return nil, err
	}
	if err := readColonFile(groupPath, l.GroupNames, l.GIDs); err != nil {
		return nil, err
	}
	return l, nil
}

// readColonFile collects field 1 (name) and field 3 (id) of each line.
func readColonFile(path string, names map[string]bool, ids map[int64]bool) error {
	f, err := os.Open(path)
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
		if id, err := strconv.ParseInt(fields[2], 10, 64); err == nil {
			ids[id] = true
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("validate: local accounts: read %s: %w", path, err)
	}
	return nil
}
