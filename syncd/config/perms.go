package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// CheckSecretFile refuses a file that anyone but its owner could read,
// or whose owner is not root. The config file names the token and the
// token is the keys to the identity source: a readable copy is a leak.
//
// A syncd that is not running as root (only ever a developer's test run)
// also accepts files owned by its own user: such a process could read
// nothing more than its user can anyway.
func CheckSecretFile(path string) error {
	if err := CheckTrustedPath(path); err != nil {
		return err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s: not a regular file (%s)", path, fi.Mode().Type())
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%s: cannot read the owner", path)
	}
	euid := uint32(os.Geteuid())
	if st.Uid != 0 && st.Uid != euid {
		return fmt.Errorf("%s: owned by uid %d, must be owned by root", path, st.Uid)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("%s: mode %04o lets group or others read or write it; chmod 0600 %s", path, perm, path)
	}
	return nil
}

// CheckTrustedPath refuses a path that someone other than root (or the
// running user) could have made point elsewhere: every component, the
// path as written and the path its symlinks lead to, must be owned by
// root (or the running user), and every directory on it must not be
// writable by group or others unless it is sticky (/tmp), in which case
// the entry in it must be root's (issue 20: a token_file or config that
// was a symlink a user planted in a 1777 directory was accepted).
func CheckTrustedPath(path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := trustedComponents(path, abs); err != nil {
		return err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if real != abs {
		return trustedComponents(path, real)
	}
	return nil
}

func trustedComponents(shown, abs string) error {
	euid := uint32(os.Geteuid())
	parent := "/"
	pfi, err := os.Lstat(parent)
	if err != nil {
		return fmt.Errorf("%s: %w", shown, err)
	}
	for _, c := range strings.Split(strings.TrimPrefix(abs, "/"), "/") {
		if c == "" {
			continue
		}
		next := filepath.Join(parent, c)
		fi, err := os.Lstat(next)
		if err != nil {
			return fmt.Errorf("%s: %w", shown, err)
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return fmt.Errorf("%s: cannot read the owner of %s", shown, next)
		}
		if st.Uid != 0 && st.Uid != euid {
			what := "is"
			if fi.Mode()&os.ModeSymlink != 0 {
				what = "is a symlink"
			}
			return fmt.Errorf("%s: %s %s owned by uid %d: every directory and link on the path must be root's", shown, next, what, st.Uid)
		}
		if perm := pfi.Mode(); perm.Perm()&0o022 != 0 && perm&os.ModeSticky == 0 {
			return fmt.Errorf("%s: directory %s (mode %04o) is writable by group or others: anyone there could replace %s; chmod go-w %s", shown, parent, perm.Perm(), c, parent)
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			// The link's target is checked as a path of its own by
			// CheckTrustedPath; below it, components follow the target.
			target, err := filepath.EvalSymlinks(next)
			if err != nil {
				return fmt.Errorf("%s: %w", shown, err)
			}
			if err := trustedComponents(shown, target); err != nil {
				return err
			}
			next = target
			if fi, err = os.Stat(target); err != nil {
				return fmt.Errorf("%s: %w", shown, err)
			}
		}
		parent, pfi = next, fi
	}
	return nil
}
