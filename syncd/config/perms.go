package config

import (
	"fmt"
	"os"
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
