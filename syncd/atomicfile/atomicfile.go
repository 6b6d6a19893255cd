// Package atomicfile replaces small files (status, records, manifests)
// so that a reader sees the old contents or the new, never a mix, and a
// crash leaves no half-written file under the real name.
//
// Decisions:
//   - The temp file is ".NAME.new-*" beside the target (same filesystem,
//     so the rename is atomic; hidden, so globbing readers skip it).
//   - Mode is set on the temp file before the rename: the target is never
//     visible with a wider mode than asked for.
//   - The data is fsynced before the rename and the directory after it:
//     after a crash the name points at complete contents.
//   - Snapshots do not come here: they are SQLite files with their own
//     verification (syncd/snapshot).
package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// Write replaces path with b, mode mode.
func Write(path string, b []byte, mode os.FileMode) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".new-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(f.Name()) // after a successful rename: gone already
	fail := func(what string, err error) error {
		f.Close()
		return fmt.Errorf("write %s: %s %s: %w", path, what, f.Name(), err)
	}
	if err := f.Chmod(mode); err != nil {
		return fail("chmod", err)
	}
	if _, err := f.Write(b); err != nil {
		return fail("write", err)
	}
	if err := f.Sync(); err != nil {
		return fail("fsync", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: close %s: %w", path, f.Name(), err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return SyncDir(dir)
}

// SyncDir fsyncs a directory, so that a rename in it survives a crash.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}
