package validate

import (
	"fmt"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/scimbridge/scimbridge/syncd/source"
)

// MaxKeysPerUser bounds what one user can put in the snapshot.
const MaxKeysPerUser = 100

// checkKeys keeps each value that is exactly one OpenSSH public key
// without options, and rewrites it canonically ("type base64 comment").
// Options (command=, from=, environment=...) are refused: sshd would
// obey them, and they are not the identity source's to set. A value
// holding several lines is several keys, each checked alone.
func checkKeys(su *source.User) ([]string, []Rejection) {
	var keys []string
	var rej []Rejection
	seen := make(map[string]bool)
	drop := func(i int, format string, a ...any) {
		rej = append(rej, Rejection{
			Kind: KindSSHKey, ID: su.ID, Name: su.UserName, Reason: BadSSHKey,
			Detail: fmt.Sprintf("key %d: ", i+1) + fmt.Sprintf(format, a...),
		})
	}
	if why := su.Malformed[source.FieldSSHKeys]; why != "" {
		drop(0, "%s", why)
	}
	for i, v := range su.SSHKeys {
		for _, line := range strings.Split(v, "\n") {
			line = strings.TrimSpace(line)
			if line == "" {
				continue
			}
			if strings.HasPrefix(line, "\x00") {
				drop(i, "%s", strings.TrimPrefix(line, "\x00"))
				continue
			}
			pub, comment, opts, rest, err := ssh.ParseAuthorizedKey([]byte(line))
			switch {
			case err != nil:
				drop(i, "not an OpenSSH public key: %v", err)
				continue
			case len(opts) > 0:
				drop(i, "has options %q: not accepted from the identity source", strings.Join(opts, ","))
				continue
			case len(strings.TrimSpace(string(rest))) > 0:
				drop(i, "trailing data after the key")
				continue
			}
			k := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub)))
			if c := cleanComment(comment); c != "" {
				k += " " + c
			}
			fp := ssh.FingerprintSHA256(pub)
			if seen[fp] {
				continue // the same key twice is harmless; keep one
			}
			if len(keys) >= MaxKeysPerUser {
				drop(i, "more than %d keys", MaxKeysPerUser)
				continue
			}
			seen[fp] = true
			keys = append(keys, k)
		}
	}
	return keys, rej
}

// cleanComment keeps printable ASCII and spaces of a key comment.
func cleanComment(c string) string {
	c = strings.Map(func(r rune) rune {
		if r < 0x20 || r >= 0x7f {
			return -1
		}
		return r
	}, c)
	if len(c) > 200 {
		c = c[:200]
	}
	return strings.TrimSpace(c)
}
