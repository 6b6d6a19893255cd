package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scimbridge/scimbridge/syncd/snapshot"
)

// migrate-check: local passwd/group files (what the node resolves today)
// against a snapshot; each kind of change listed, exit status 4 when
// anything would change, 0 when nothing would.
func TestMigrateCheck(t *testing.T) {
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache.db")
	c := &snapshot.Contents{
		Users: []snapshot.User{
			{Name: "alice", UID: 20001, GID: 20000, Home: "/home/alice", Shell: "/bin/bash", Active: true},
			{Name: "bob", UID: 20002, GID: 20000, Home: "/home/bob", Shell: "/bin/bash", Active: true},
			{Name: "carol", UID: 20003, GID: 20000, Home: "/home/carol", Shell: "/bin/bash", Active: true},
			{Name: "dave", UID: 20004, GID: 20000, Home: "/home/dave", Shell: "/bin/bash", Active: true},
			{Name: "erin", UID: 20005, GID: 20000, Home: "/home/erin", Shell: "/bin/bash", Active: true},
		},
		Groups: []snapshot.Group{
			{Name: "physics", GID: 20000, Members: []string{"alice", "bob"}},
			{Name: "chem", GID: 20010, Members: []string{"carol"}},
			{Name: "newgrp", GID: 20020},
		},
	}
	if _, err := snapshot.Write(cache, c); err != nil {
		t.Fatal(err)
	}
	pw := filepath.Join(dir, "passwd")
	gr := filepath.Join(dir, "group")
	writeFile(t, pw, `root:x:0:0:root:/root:/bin/bash
alice:x:20001:20000:Alice:/home/alice:/bin/bash
bob:x:5002:20000:Bob:/home/bob:/bin/bash
carol:x:20003:100:Carol:/srv/carol:/bin/bash
legacy:x:20004:100:Legacy:/home/legacy:/bin/sh
`)
	writeFile(t, gr, `root:x:0:
physics:x:20000:alice,frank
chem:x:30010:carol
oldgrp:x:20020:
`)
	e := &env{cfgPath: filepath.Join(dir, "none.toml")}
	data := filepath.Join(dir, "data")
	writeFile(t, data+"/bobs-results.csv", "x\n")
	// Files whose owner, group, or both would change: chem's gid moves,
	// newgrp takes oldgrp's gid.
	writeFile(t, data+"/chem.dat", "x\n")
	writeFile(t, data+"/both.dat", "x\n")
	writeFile(t, data+"/old.dat", "x\n")
	scanned := os.Geteuid() == 0 && os.Chown(data+"/bobs-results.csv", 5002, 5002) == nil &&
		os.Chown(data+"/chem.dat", 0, 30010) == nil && os.Chown(data+"/both.dat", 5002, 30010) == nil &&
		os.Chown(data+"/old.dat", 0, 20020) == nil
	rc, out := runCLI(t, e, "migrate-check", "--cache", cache, "--passwd", pw, "--group", gr, "--processes=false", "--scan", data)
	if scanned {
		for _, want := range []string{"bobs-results.csv owned by uid 5002 (bob)", "chem.dat group gid 30010 (chem)",
			"both.dat owned by uid 5002 (bob)", "both.dat group gid 30010 (chem)", "old.dat group gid 20020 (newgrp)"} {
			if !strings.Contains(out, want) {
				t.Errorf("--scan did not list %q:\n%s", want, out)
			}
		}
	}
	for _, want := range []string{
		"user bob: uid 5002 -> 20002",
		"user carol: gid 100 -> 20000",
		"user carol: home /srv/carol -> /home/carol",
		"user dave: uid-owner 20004 is legacy -> 20004 is dave too",
		"group chem: gid 30010 -> 20010",
		"group physics: members 2 -> 2 (+bob -frank)",
		"group newgrp: gid-owner 20020 is oldgrp -> 20020 is newgrp too",
		"migrate-check: 7 change(s); 2 new user(s) and 1 new group(s)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "user alice") {
		t.Errorf("alice does not change:\n%s", out)
	}
	if rc != exitChanges {
		t.Errorf("rc %d, want %d", rc, exitChanges)
	}
	// Nothing changes: exit 0.
	writeFile(t, pw, "alice:x:20001:20000:Alice:/home/alice:/bin/bash\n")
	writeFile(t, gr, "physics:x:20000:alice,bob\n")
	if rc, out := runCLI(t, e, "migrate-check", "--cache", cache, "--passwd", pw, "--group", gr); rc != 0 || !strings.Contains(out, "nothing that resolves today would change") {
		t.Errorf("no change: rc %d\n%s", rc, out)
	}
}
