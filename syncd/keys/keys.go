// Package keys decides which SSH public keys sshd may accept for a user:
// the AuthorizedKeysCommand scim-keys is a thin wrapper around it.
//
// The answer comes from the snapshot (no network): keys of a user that
// exists, is active and is in one of the allowed groups, each key parsed
// and printed in canonical form. Optionally, Live asks the SCIM service
// for that one user's current keys, so that a rotated or revoked key
// applies at the next login rather than the next sync; the snapshot still
// decides whether the user may log in at all, and any failure of the live
// read falls back to the snapshot's keys.
package keys

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/crypto/ssh"

	"github.com/scimbridge/scimbridge/syncd/cache"
)

// ReaderConfigPath and DefaultCachePath are the C reader's
// SCIM_READER_CONFIG_PATH and SCIM_DEFAULT_CACHE_PATH.
const (
	ReaderConfigPath = "/etc/scimbridge/reader.conf"
	DefaultCachePath = "/var/lib/scimbridge/cache.db"
)

// ConfiguredCachePath is the path the NSS and PAM modules read, by the C
// reader's rule (scim_configured_path): the last "cache_path = /abs"
// line of ReaderConfigPath if that file is a regular file owned by root
// and not group or world writable, else DefaultCachePath. Never the
// environment. Picking the path is all this does: the C reader behind
// cache.Open reads reader.conf itself and answers UNAVAIL (scim-keys then
// prints no key) when the file is untrusted, unreadable or malformed.
func ConfiguredCachePath() string {
	return configuredPath(ReaderConfigPath)
}

func configuredPath(conf string) string {
	f, err := os.Open(conf)
	if err != nil {
		return DefaultCachePath
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o022 != 0 {
		return DefaultCachePath
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || st.Uid != 0 {
		return DefaultCachePath
	}
	buf := make([]byte, 4095) // the C reader reads at most 4095 bytes
	n, _ := f.Read(buf)
	path := DefaultCachePath
	for _, line := range strings.Split(string(buf[:n]), "\n") {
		line = strings.TrimLeft(line, " \t")
		rest, ok := strings.CutPrefix(line, "cache_path")
		if !ok {
			continue
		}
		rest = strings.TrimLeft(rest, " \t")
		rest, ok = strings.CutPrefix(rest, "=")
		if !ok {
			continue
		}
		v := strings.TrimRight(strings.TrimLeft(rest, " \t"), " \t\r")
		if strings.HasPrefix(v, "/") && len(v) < 4096 {
			path = v
		}
	}
	return path
}

// Decision is why a user gets keys or not (for logs; sshd sees only the
// printed keys).
type Decision int

const (
	Allowed    Decision = iota
	Unknown             // not in the snapshot
	Disabled            // active=false at the source
	NotAllowed          // in none of the allowed groups
	Shadowed            // the name logs in to another account (other uid)
)

func (d Decision) String() string {
	switch d {
	case Allowed:
		return "allowed"
	case Unknown:
		return "not in the snapshot"
	case Disabled:
		return "disabled"
	case NotAllowed:
		return "not in an allowed group"
	case Shadowed:
		return "the name resolves to another account"
	}
	return fmt.Sprintf("Decision(%d)", int(d))
}

// Check looks name up in the snapshot and applies the login policy of
// pam_scim: the user exists (exact name), is active, and when allow is
// not empty, is listed as a member of one of those groups. The error is
// set only when the snapshot cannot be read.
func Check(c *cache.Cache, name string, allow []string) (cache.User, Decision, error) {
	u, err := c.User(name)
	if errors.Is(err, cache.ErrNotFound) {
		return u, Unknown, nil
	}
	if err != nil {
		return u, Unknown, err
	}
	if u.Name != name {
		// The reader matches exactly; this guards the guarantee that we
		// never answer for another user.
		return u, Unknown, nil
	}
	if !u.Active {
		return u, Disabled, nil
	}
	if len(allow) == 0 {
		return u, Allowed, nil
	}
	for _, g := range allow {
		in, err := c.InGroup(name, g)
		if err != nil && !errors.Is(err, cache.ErrNotFound) {
			return u, Unknown, err
		}
		if in {
			return u, Allowed, nil
		}
	}
	return u, NotAllowed, nil
}

// SystemUID resolves name through the system's name service (NSS:
// getpwnam_r, as sshd does), the account sshd is about to log in.
func SystemUID(name string) (uint32, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return 0, err
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return 0, err
	}
	return uint32(uid), nil
}

// SameAccount reports whether the account the system resolves name to is
// the snapshot's user u. A local account listed before scim in
// nsswitch.conf may share a SCIM user's name: keys from the identity
// provider must never open it. A name the system cannot resolve is not
// the same account either.
func SameAccount(u cache.User, resolve func(string) (uint32, error)) bool {
	uid, err := resolve(u.Name)
	return err == nil && uid == u.UID
}

// Canonical parses each line as one OpenSSH public key and returns it as
// "type base64". Lines that are not exactly one plain public key are
// dropped and reported in bad: keys with options (from=, command=...)
// because the identity provider is not trusted to set sshd options,
// certificates because they need a cert-authority line, and anything
// with trailing data. Comments are dropped. Duplicates are removed.
func Canonical(lines []string) (keys []string, bad []error) {
	seen := map[string]bool{}
	for i, line := range lines {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if strings.ContainsAny(line, "\n\r\x00") {
			bad = append(bad, fmt.Errorf("key %d: control characters", i+1))
			continue
		}
		pub, _, opts, rest, err := ssh.ParseAuthorizedKey([]byte(line))
		switch {
		case err != nil:
			bad = append(bad, fmt.Errorf("key %d: %v", i+1, err))
			continue
		case len(opts) > 0:
			bad = append(bad, fmt.Errorf("key %d: has options, refused", i+1))
			continue
		case len(bytes.TrimSpace(rest)) > 0:
			bad = append(bad, fmt.Errorf("key %d: trailing data", i+1))
			continue
		}
		if _, ok := pub.(*ssh.Certificate); ok {
			bad = append(bad, fmt.Errorf("key %d: a certificate, not a key", i+1))
			continue
		}
		k := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub)))
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	return keys, bad
}
