package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type groupedDir struct {
	*fakeDir
	gids []uint32
}

func (d groupedDir) UserGroups(string) ([]uint32, error) { return d.gids, nil }

// The status file as syncd/homes writes it (WriteStatus), trimmed.
const homesStatusJSON = `{"at":"2026-12-01T18:00:00Z","driver":"gluster","homes":2,"projects":2,
 "targets":[
  {"kind":"user","name":"ada","id":10001,"path":"/home/ada","root":"/home","usage":{"used":8589934592,"soft":10737418240,"hard":16106127360,"over_soft":false,"over_hard":false}},
  {"kind":"user","name":"bob","id":10002,"path":"/home/bob","root":"/home","usage":{"used":1,"soft":2,"hard":3}},
  {"kind":"team","name":"physics","id":30001,"path":"/project/physics","root":"/project","usage":{"used":1099511627776,"soft":858993459200,"hard":1099511627776,"over_soft":true,"over_hard":true}},
  {"kind":"team","name":"chem","id":30002,"path":"/project/chem","root":"/project","usage":{"used":1,"soft":2,"hard":3}}]}`

func TestStorageFromHomesPass(t *testing.T) {
	dir := t.TempDir()
	cachePath := filepath.Join(dir, "cache.db")
	if err := os.WriteFile(homesStatusFile(cachePath), []byte(homesStatusJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	g := &gatherer{run: fakeRun(nil, nil), openDir: func(string) (directory, error) { return groupedDir{adaDir(), []uint32{10001, 30001}}, nil }}
	rep := g.gather(context.Background(), cachePath, "ada", 0)
	if len(rep.Storage) != 2 {
		t.Fatalf("want ada's home and physics only (not bob's, not chem): %+v", rep.Storage)
	}
	home, proj := rep.Storage[0], rep.Storage[1]
	if home.Kind != "home" || home.Path != "/home/ada" || home.Used != 8<<30 || home.Hard != 15<<30 || home.OverSoft {
		t.Errorf("home: %+v", home)
	}
	if proj.Kind != "project" || proj.Name != "physics" || !proj.OverHard {
		t.Errorf("project: %+v", proj)
	}
	if !hasNote(rep, "your project /project/physics is over its hard limit (1T used of 1T): new writes fail") || !hasNote(rep, "GlusterFS keeps no grace period") {
		t.Errorf("notes: %q", rep.Notes)
	}
	var b bytes.Buffer
	renderTable(&b, rep)
	for _, want := range []string{"Storage (home and project quotas)", "home     /home/ada", "8G", "10G", "15G", "(over hard: writes fail)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}

// On a node that mounts the storage but does not run the homes pass (no
// status file beside its snapshot), mylimits reads the copy the pass left
// at the top of the home's root, says how old it is, and flags it when
// stale; a copy a user could have written is not trusted.
func TestStorageFromSharedCopyOnANode(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root (the copy must be root's)")
	}
	dir := t.TempDir()
	cachePath := filepath.Join(dir, "node", "cache.db")
	root := filepath.Join(dir, "home")
	os.MkdirAll(filepath.Dir(cachePath), 0o755)
	os.MkdirAll(filepath.Join(root, "ada"), 0o755)
	os.Chmod(dir, 0o755)
	ada := adaDir()
	u := ada.users["ada"]
	u.Home = filepath.Join(root, "ada")
	ada.users["ada"] = u
	g := &gatherer{run: fakeRun(nil, nil), openDir: func(string) (directory, error) { return groupedDir{ada, []uint32{10001, 30001}}, nil }}
	shared := filepath.Join(root, sharedUsageFile)

	recent := strings.Replace(homesStatusJSON, "2026-12-01T18:00:00Z", time.Now().Add(-20*time.Minute).UTC().Format(time.RFC3339), 1)
	if err := os.WriteFile(shared, []byte(recent), 0o644); err != nil {
		t.Fatal(err)
	}
	rep := g.gather(context.Background(), cachePath, "ada", 0)
	if len(rep.Storage) != 2 || rep.Storage[0].Path != "/home/ada" || rep.Storage[1].Name != "physics" {
		t.Fatalf("storage from the shared copy: %+v (notes %q)", rep.Storage, rep.Notes)
	}
	if !hasNote(rep, "recorded it 20m0s ago") || !hasNote(rep, shared) || hasNote(rep, "stale") {
		t.Errorf("notes: %q", rep.Notes)
	}

	// Old figures are shown, and flagged.
	os.WriteFile(shared, []byte(homesStatusJSON), 0o644)
	rep = g.gather(context.Background(), cachePath, "ada", 0)
	if len(rep.Storage) != 2 || !hasNote(rep, "may be stale") {
		t.Errorf("stale copy: %+v %q", rep.Storage, rep.Notes)
	}

	// Not trusted: a copy its owner is not root, one writable by others,
	// a symlink, one in a directory others can write to.
	for name, plant := range map[string]func(){
		"user's":         func() { os.Chown(shared, 10001, 10001) },
		"world-writable": func() { os.Chmod(shared, 0o666) },
		"symlink": func() {
			os.Remove(shared)
			os.WriteFile(filepath.Join(dir, "mine.json"), []byte(homesStatusJSON), 0o644)
			os.Symlink(filepath.Join(dir, "mine.json"), shared)
		},
		"open directory": func() { os.Chmod(root, 0o1777) },
	} {
		os.Remove(shared)
		os.Chmod(root, 0o755)
		os.WriteFile(shared, []byte(homesStatusJSON), 0o644)
		plant()
		rep = g.gather(context.Background(), cachePath, "ada", 0)
		if len(rep.Storage) != 0 || !hasNote(rep, "not trusted") {
			t.Errorf("%s copy: storage %+v, notes %q", name, rep.Storage, rep.Notes)
		}
	}

	// The storage host's own status file wins, without an age note.
	os.Chmod(root, 0o755)
	os.WriteFile(homesStatusFile(cachePath), []byte(homesStatusJSON), 0o644)
	rep = g.gather(context.Background(), cachePath, "ada", 0)
	if len(rep.Storage) != 2 || hasNote(rep, "storage host's homes pass recorded") {
		t.Errorf("local status: %+v %q", rep.Storage, rep.Notes)
	}
}
