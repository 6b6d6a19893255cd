package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"

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

	pwText, err := migrate.Current(*pwFile, "passwd", nssSources(*sources))
	if err != nil {
		return err
	}
	grText, err := migrate.Current(*grFile, "group", nssSources(*sources))
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
		rep.Owned = append(rep.Owned, migrate.ScanFiles(split(*scan), uids, gids)...)
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		enc.Encode(rep)
	} else {
		rep.Print(os.Stdout, path)
	}
	if len(rep.Changes) > 0 {
		return exitError{exitChanges, fmt.Errorf("%d change(s) if this node switches to the snapshot", len(rep.Changes))}
	}
	return nil
}

// nssSources is --sources as migrate.Current takes it: nil when not
// given (every source), else the listed ones (maybe none).
func nssSources(s string) []string {
	if s == "" {
		return nil
	}
	return append([]string{}, split(s)...)
}
