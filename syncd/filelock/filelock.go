// Package filelock takes an exclusive flock(2) with a bounded wait: the
// writers' lock beside the snapshot and the publisher's lock on its
// directory.
//
// Decisions:
//   - flock, not fcntl locks: tied to the open file, released when the
//     process dies (kill -9 leaves no stale lock), and not dropped when
//     some other descriptor of the same file is closed.
//   - Polling LOCK_NB every 100 ms rather than a blocking flock: the wait
//     is bounded and ends with the caller's context (SIGTERM).
package filelock

import (
	"context"
	"errors"
	"os"
	"syscall"
	"time"
)

// Wait takes an exclusive lock on f, waiting up to max or until ctx
// ends. The returned function releases it (and leaves f open).
func Wait(ctx context.Context, f *os.File, max time.Duration) (func(), error) {
	deadline := time.Now().Add(max)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, err
		}
		if time.Now().After(deadline) {
			return nil, errors.New("still held by another process after " + max.String())
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}
