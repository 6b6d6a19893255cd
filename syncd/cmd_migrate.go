package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/scimbridge/scimbridge/syncd/cache"
	"github.com/scimbridge/scimbridge/syncd/migrate"
)

func init() {
	commands["migrate-check"] = command{
		Summary: "before switching nsswitch to scim: whose uid, gid, home or groups would change (exit 4 if any)",
		Run:     runMigrateCheck,
	}
}

// exitChanges is migrate-check's exit status when something would change.
const exitChanges = 4

// maxScan bounds the files --scan looks at.
const maxScan = 2_000_000

func runMigrateCheck(ctx context.Context, cfgPath string, args []string) error {
	fs := flags("migrate-check", &cfgPath)
	pwFile := fs.String("passwd", "", "compare with this passwd `file` (default: getent passwd, the node's current sources)")
	grFile := fs.String("group", "", "compare with this group `file` (default: getent group)")
	sources := fs.String("sources", "", "ask only these NSS `services` (getent -s, e.g. files,sss): leave scim out if it is already listed")
	cachePath := fs.String("cache", "", "snapshot `path` (default: cache_path of the configuration)")
	scan := fs.String("scan", "", "also list files under these `paths` (comma-separated) owned by ids that would change owner")
	procs := fs.Bool("processes", true, "list running processes owned by ids that would change owner")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	path := snapshotPath(cfgPath, *cachePath)
	c, err := cache.Open(path)
	if err != nil {
		return err
	}
	defer c.Close()
	us, err := c.Users()
	if err != nil {
		return err
	}
	gs, err := c.Groups()
	if err != nil {
		return err
	}
	var snapPw []migrate.Passwd
	for _, u := range us {
		snapPw = append(snapPw, migrate.Passwd{Name: u.Name, UID: u.UID, GID: u.GID, Home: u.Home, Shell: u.Shell})
	}
	var snapGr []migrate.Group
	for _, g := range gs {
		snapGr = append(snapGr, migrate.Group{Name: g.Name, GID: g.GID, Members: g.Members})
	}

	pwText, err := current(*pwFile, "passwd", *sources)
	if err != nil {
		return err
	}
	grText, err := current(*grFile, "group", *sources)
	if err != nil {
		return err
	}
	curPw, err := migrate.ParsePasswd(bytes.NewReader(pwText))
	if err != nil {
		return err
	}
	curGr, err := migrate.ParseGroup(bytes.NewReader(grText))
	if err != nil {
		return err
	}
	rep := migrate.Compare(curPw, curGr, snapPw, snapGr)
	uids, gids := rep.ChangedIDs(curPw, curGr)
	if *procs && len(uids) > 0 {
		rep.Owned = append(rep.Owned, migrate.Processes("/proc", uids)...)
	}
	if *scan != "" && len(uids)+len(gids) > 0 {
		rep.Owned = append(rep.Owned, scanFiles(split(*scan), uids, gids)...)
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		enc.Encode(rep)
	} else {
		printMigrate(os.Stdout, rep, path)
	}
	if len(rep.Changes) > 0 {
		return exitError{exitChanges, fmt.Errorf("%d change(s) if this node switches to the snapshot", len(rep.Changes))}
	}
	return nil
}

// current is the text of a passwd or group database: the file, or
// getent's answer (all sources, or each of sources).
func current(file, db, sources string) ([]byte, error) {
	if file != "" {
		return os.ReadFile(file)
	}
	if sources == "" {
		out, err := exec.Command("getent", db).Output()
		if err != nil {
			return nil, fmt.Errorf("getent %s: %w", db, err)
		}
		return out, nil
	}
	var all []byte
	for _, s := range split(sources) {
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

func scanFiles(roots []string, uids, gids map[uint32]string) []string {
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

func printMigrate(w io.Writer, r *migrate.Report, path string) {
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
