package publish

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scimbridge/scimbridge/syncd/snapshot"
)

// A publisher killed mid-publish leaves its temp files in the publish
// directory; the next Publish removes them under the publisher's lock (a
// flock on the directory) and keeps everything else. While another
// publisher holds the lock, Publish waits, and gives up with an error
// naming the directory when its context ends, touching nothing.
func TestPublishRemovesKilledPublishersTemps(t *testing.T) {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	d := t.TempDir()
	live := filepath.Join(d, "head", "cache.db")
	c := &snapshot.Contents{Source: "test", Users: []snapshot.User{{Name: "alice", UID: 5000, GID: 5000, Home: "/home/alice", Shell: "/bin/sh", Active: true, SCIMID: "u1"}},
		Groups: []snapshot.Group{{Name: "alice", GID: 5000, SCIMID: "g1"}}}
	if _, err := snapshot.Write(live, c); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(d, "pub")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sum := strings.Repeat("ab", 32)
	stale := []string{".snapshot-1234.tmp", ".snapshot-1234.tmp.zst", "." + ManifestName + ".new-99",
		"." + sum + ".from-" + strings.Repeat("cd", 32) + ".delta.zst.new-7"}
	kept := []string{"notes.txt", ".snapshot-1234.txt", ".other.new-1"}
	for _, n := range append(append([]string{}, stale...), kept...) {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	p := &Publisher{Dir: dir, Key: key, Compress: "none", Keep: 2}

	// Another publisher holds the lock: Publish waits and gives up.
	other, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(other.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	_, err = p.Publish(ctx, live, time.Now())
	cancel()
	if err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "lock") {
		t.Fatalf("Publish beside a held lock: %v, want an error naming the lock on %s", err, dir)
	}
	for _, n := range stale {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			t.Fatalf("%s removed while another publisher held the lock: %v", n, err)
		}
	}
	syscall.Flock(int(other.Fd()), syscall.LOCK_UN)
	other.Close()

	res, err := p.Publish(context.Background(), live, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range stale {
		if _, err := os.Stat(filepath.Join(dir, n)); !os.IsNotExist(err) {
			t.Errorf("%s left after Publish: %v", n, err)
		}
	}
	for _, n := range append(kept, ManifestName, res.Manifest.Object) {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			t.Errorf("%s gone after Publish: %v", n, err)
		}
	}
}
