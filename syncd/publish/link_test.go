package publish

import (
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/scimbridge/scimbridge/syncd/snapshot"
)

// headSnapshot writes a head's live snapshot of n users (each given to
// more, when set) in staff, and the groups extra, under a temp dir d; it
// returns a signing key, d, the live path and the contents written.
func headSnapshot(t *testing.T, n int, more func(int, *snapshot.User), extra ...snapshot.Group) (ed25519.PrivateKey, string, string, *snapshot.Contents) {
	t.Helper()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	d := t.TempDir()
	live := filepath.Join(d, "head", "cache.db")
	c := &snapshot.Contents{Source: "test"}
	for i := range n {
		name := fmt.Sprintf("user%d", i)
		u := snapshot.User{Name: name, UID: uint32(5000 + i), GID: 5000, Home: "/home/" + name,
			Shell: "/bin/sh", Active: true, SCIMID: fmt.Sprint("u", i)}
		if more != nil {
			more(i, &u)
		}
		c.Users = append(c.Users, u)
	}
	c.Groups = append([]snapshot.Group{{Name: "staff", GID: 5000, SCIMID: "g1"}}, extra...)
	if _, err := snapshot.Write(live, c); err != nil {
		t.Fatal(err)
	}
	return key, d, live, c
}

// The snapshot this process's writer verified is published from a hard
// link to it, not a copy: the object's digest is the live file's, no
// link is left behind, and an object served uncompressed is an inode of
// its own (the live file's mtime moves with every contact), not the
// live file's. A live file this process did not write is copied and
// verified whole, as before.
func TestPublishLinksTheVerifiedSnapshot(t *testing.T) {
	key, d, live, _ := headSnapshot(t, 300, nil)
	links := func() uint64 {
		fi, err := os.Stat(live)
		if err != nil {
			t.Fatal(err)
		}
		return uint64(fi.Sys().(*syscall.Stat_t).Nlink)
	}
	sum, _, err := HashFile(live)
	if err != nil {
		t.Fatal(err)
	}
	had := links() // the snapshot history links the live file too
	for _, compress := range []string{"zstd", "none"} {
		dir := filepath.Join(d, "pub-"+compress)
		p := &Publisher{Dir: dir, Key: key, Compress: compress, Keep: 2, Deltas: 1}
		res, err := p.Publish(t.Context(), live, time.Now())
		if err != nil {
			t.Fatalf("%s: %v", compress, err)
		}
		if !res.NewObject || res.Manifest.SHA256 != sum {
			t.Fatalf("%s: manifest names %s (new object %v), the live file is %s", compress, res.Manifest.SHA256, res.NewObject, sum)
		}
		if !p.Linked {
			t.Fatalf("%s: the snapshot this process verified was copied, not linked", compress)
		}
		if n := links(); n != had {
			t.Fatalf("%s: the live file has %d links after publishing, %d before: the temp link stayed", compress, n, had)
		}
		obj := filepath.Join(dir, res.Manifest.Object)
		got, _, err := HashFile(obj)
		if err != nil {
			t.Fatal(err)
		}
		if got != res.Manifest.ObjectSHA256 {
			t.Fatalf("%s: object %s hashes to %s, the manifest says %s", compress, obj, got, res.Manifest.ObjectSHA256)
		}
		a, _ := os.Stat(live)
		b, _ := os.Stat(obj)
		if os.SameFile(a, b) {
			t.Fatalf("%s: the published object is the live file's inode", compress)
		}
	}
	// Another file at the live path (an admin's copy): copied.
	b, err := os.ReadFile(live)
	if err != nil {
		t.Fatal(err)
	}
	other := live + ".other"
	if err := os.WriteFile(other, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(other, live); err != nil {
		t.Fatal(err)
	}
	p := &Publisher{Dir: filepath.Join(d, "pub-other"), Key: key, Compress: "zstd", Keep: 2}
	if res, err := p.Publish(t.Context(), live, time.Now()); err != nil || res.Manifest.SHA256 != sum || p.Linked {
		t.Fatalf("a file this process did not write: %v, linked %v", err, p.Linked)
	}
}
