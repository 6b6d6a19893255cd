package publish

import (
	"context"
	"fmt"
	"github.com/scimbridge/scimbridge/syncd/filelock"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/scimbridge/scimbridge/syncd/snapshot"
)

// lockDir takes the publisher's lock, a flock on the publish directory
// itself (no lock file among the served ones): one publisher at a time
// writes there, across processes (the daemon and a `syncd sync --once`
// of the same head). It waits up to two minutes (or until ctx ends) for
// another publisher, and then removes the temp files a killed publisher
// left there (staleTemp): with the lock held no running publisher owns
// one.
func (p *Publisher) lockDir(ctx context.Context) (func(), error) {
	path := p.Dir
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil, fmt.Errorf("publish: lock: %w", err)
	}
	unlock, err := filelock.Wait(ctx, f, 2*time.Minute)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("publish: lock the directory %s: %w (another syncd publishing into the same [publish] dir?)", path, err)
	}
	removeStaleTemps(p.Dir)
	return func() { unlock(); f.Close() }, nil
}

// staleTemp: a name a publisher gives its temp files in the publish
// directory: the copy of the live snapshot (.snapshot-*.tmp), its
// compressed copy (.tmp.zst), and writeAtomic's temps of the manifest and
// of deltas (.NAME.new-*). None is ever named in a manifest.
func staleTemp(name string) bool {
	if strings.HasPrefix(name, ".snapshot-") {
		return strings.HasSuffix(name, ".tmp") || strings.HasSuffix(name, ".tmp.zst")
	}
	i := strings.LastIndex(name, ".new-")
	if !strings.HasPrefix(name, ".") || i < 1 {
		return false
	}
	base := name[1:i]
	return base == ManifestName || isPublishedFile(base)
}

// removeStaleTemps removes the temp files (staleTemp) in dir owned by
// this process's user; only under the publisher's lock (lockDir). It
// returns how many it removed.
func removeStaleTemps(dir string) int {
	n := snapshot.RemoveOwnTemps(dir, staleTemp)
	if n > 0 {
		fmt.Fprintf(os.Stderr, "publish: removed %d temp file(s) a killed publisher left in %s\n", n, dir)
	}
	return n
}
