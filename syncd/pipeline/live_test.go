package pipeline

import (
	"path/filepath"
	"testing"

	"github.com/scimbridge/scimbridge/syncd/snapshot"
)

func contents(names ...string) *snapshot.Contents {
	c := &snapshot.Contents{Source: "test"}
	for i, n := range names {
		uid := uint32(20001 + i)
		c.Users = append(c.Users, snapshot.User{Name: n, UID: uid, GID: uid, Home: "/home/" + n, Shell: "/bin/bash", Active: true, SCIMID: "id-" + n})
		c.Groups = append(c.Groups, snapshot.Group{Name: n, GID: uid, Members: []string{n}})
	}
	return c
}

func names(c *snapshot.Contents) []string {
	var out []string
	for _, u := range c.Users {
		out = append(out, u.Name)
	}
	return out
}

// The kept contents serve a poll only while the live file stores their
// digest: another writer's snapshot (sync --once, the Slurm step, a
// rollback) is read from the file, and a missing file is missing.
func TestLiveKeepFollowsTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	var k LiveKeep
	if _, _, _, err := k.load(path); !snapshot.IsNotExist(err) {
		t.Fatalf("no snapshot yet: want a not-exist error, got %v", err)
	}

	a := contents("ann", "bob")
	m, err := snapshot.Write(path, a)
	if err != nil {
		t.Fatal(err)
	}
	k.wrote(path, a, m)
	if k.Digest != snapshot.ContentsDigest(a) {
		t.Fatalf("the digest read back from the file is not the written contents' digest: %s vs %s", k.Digest, snapshot.ContentsDigest(a))
	}
	got, gm, kept, err := k.load(path)
	if err != nil || !kept || got != a || gm.Serial != m.Serial {
		t.Fatalf("the file this process wrote: want the kept contents (serial %d), got kept=%v serial %d err %v", m.Serial, kept, gm.Serial, err)
	}

	// Another writer replaces the file: the next poll must see its users.
	b := contents("ann", "bob", "cyd")
	if _, err := snapshot.Write(path, b); err != nil {
		t.Fatal(err)
	}
	got, _, kept, err = k.load(path)
	if err != nil || kept || len(got.Users) != 3 || got.Users[2].Name != "cyd" {
		t.Fatalf("after another writer: want the file's 3 users read back, got kept=%v %v err %v", kept, names(got), err)
	}
	// ... and what it read is kept for the poll after.
	again, _, kept, err := k.load(path)
	if err != nil || !kept || again != got {
		t.Fatalf("read back once: want it kept for the next poll, got kept=%v err %v", kept, err)
	}

	// Kept contents that differ from the file (a bug, or a write this
	// process never saw complete) are not trusted: the file wins.
	k.Contents = contents("mallory")
	k.Digest = snapshot.ContentsDigest(k.Contents)
	got, _, kept, err = k.load(path)
	if err != nil || kept || len(got.Users) != 3 {
		t.Fatalf("kept contents not in the file: want the file's users, got kept=%v %v err %v", kept, names(got), err)
	}

	// A nil keep (sync --once) always reads the file.
	var none *LiveKeep
	got, _, kept, err = none.load(path)
	if err != nil || kept || len(got.Users) != 3 {
		t.Fatalf("no keep: want the file read, got kept=%v err %v", kept, err)
	}
}
