package migrate

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// What `syncd migrate-check` reads of this host (the passwd and group
// databases through getent, the files and processes owned by ids that
// would change) and prints. Package main keeps its flags (issue 18,
// item 6).

// Current is the text of a passwd or group database (db) on this host:
// the file, or getent's answer (all sources when sources is nil, else
// each of them in turn; a source with nothing in it is skipped).
func Current(file, db string, sources []string) ([]byte, error) {
	if file != "" {
		return os.ReadFile(file)
	}
	if sources == nil {
		out, err := exec.Command("getent", db).Output()
		if err != nil {
			return nil, fmt.Errorf("getent %s: %w", db, err)
		}
		return out, nil
	}
	var all []byte
	for _, s := range sources {
		out, err := exec.Command("getent", "-s", s, db).Output()
		if err != nil {
			if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 2 {
				continue // nothing in that source
			}
			return nil, fmt.Errorf("getent -s %s %s: %w", s, db, err)
		}
		all = append(all, out...)
	}
	return all, nil
}

// maxScan bounds the files ScanFiles looks at.
const maxScan = 2_000_000

// ScanFiles lists the files under roots owned by the uids or in the gids
// (each with the name that would change), at most maxScan files looked
// at; a root or entry that cannot be read is skipped.
func ScanFiles(roots []string, uids, gids map[uint32]string) []string {
	var out []string
	n := 0
	for _, root := range roots {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if n++; n > maxScan {
				return filepath.SkipAll
			}
			fi, err := d.Info()
			if err != nil {
				return nil
			}
			st, ok := fi.Sys().(*syscall.Stat_t)
			if !ok {
				return nil
			}
			// owner and group are two changes: a file can have both
			if who, hit := uids[st.Uid]; hit {
				out = append(out, fmt.Sprintf("file %s owned by uid %d (%s)", p, st.Uid, who))
			}
			if who, hit := gids[st.Gid]; hit {
				out = append(out, fmt.Sprintf("file %s group gid %d (%s)", p, st.Gid, who))
			}
			return nil
		})
	}
	if n > maxScan {
		out = append(out, fmt.Sprintf("(scan stopped after %d files)", maxScan))
	}
	return out
}

// Print prints the report as `syncd migrate-check` does, path being the
// snapshot it compared with.
func (r *Report) Print(w io.Writer, path string) {
	for _, c := range r.Changes {
		fmt.Fprintln(w, c.String())
	}
	for _, o := range r.Owned {
		fmt.Fprintln(w, o)
	}
	verdict := "nothing that resolves today would change"
	if len(r.Changes) > 0 {
		verdict = fmt.Sprintf("%d change(s)", len(r.Changes))
	}
	fmt.Fprintf(w, "%s: %s; %d new user(s) and %d new group(s) from %s\n", "migrate-check", verdict, r.NewUsers, r.NewGroups, strings.TrimSpace(path))
}
