package slurm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// LockWait bounds how long a reconcile waits for another one to finish.
var LockWait = 2 * time.Minute

// lock takes an exclusive flock on path, waiting at most LockWait. The
// lock goes with the process, so a crashed reconcile never wedges the
// next one.
func lock(path string) (unlock func(), err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("slurm: lock %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("slurm: lock %s: %w", path, err)
	}
	deadline := time.Now().Add(LockWait)
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("slurm: lock %s: %w", path, err)
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("slurm: lock %s: another reconcile has held it for over %v", path, LockWait)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
