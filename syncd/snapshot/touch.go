package snapshot

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Freshness (shared contract between syncd, the mirror and every gate):
// the live snapshot file's mtime is the time of the last SUCCESSFUL
// contact with the identity source, not the time of the last change. A
// poll that finds nothing new still refreshes it, so a quiet directory
// behind a healthy syncd is never "stale"; a syncd that cannot reach the
// source lets it age. Gates compute staleness as now - mtime. Readers
// identify a snapshot by device, inode and size, so a touch never looks
// like a new file.

// Touch sets the mtime of the live snapshot at path to t (utimensat,
// following no symlink: the live path is a regular file that syncd
// renamed there), leaving its atime alone. A missing file is an error
// wrapping fs.ErrNotExist.
func Touch(path string, t time.Time) error {
	ts := []unix.Timespec{
		{Sec: 0, Nsec: unix.UTIME_OMIT}, // atime unchanged
		unix.NsecToTimespec(t.UnixNano()),
	}
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, path, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("snapshot: set the freshness time of %s: %w", path, &fs.PathError{Op: "utimensat", Path: path, Err: err})
	}
	return nil
}

// Freshness returns the live snapshot's source-contact time (its mtime).
func Freshness(path string) (time.Time, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return time.Time{}, err
	}
	return fi.ModTime(), nil
}

// carryFreshness gives the new file at tmp the live file's mtime: a
// rewrite that did not come from contact with the source (the Slurm
// step recording associations) must not make the data look fresher
// than it is. The head's commit touches the file after writing it.
func carryFreshness(live, tmp string) error {
	t, err := Freshness(live)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return Touch(tmp, t)
}
