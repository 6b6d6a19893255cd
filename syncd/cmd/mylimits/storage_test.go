package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
