package validate

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"
	"sync"
	"unsafe"

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
	var seen map[string]bool // made at a user's second key
	drop := func(i int, format string, a ...any) {
		rej = append(rej, Rejection{
			Kind: KindSSHKey, ID: su.ID, Name: su.UserName, Reason: BadSSHKey,
			Detail: fmt.Sprintf("key %d: ", i+1) + fmt.Sprintf(format, a...),
		})
	}
	accept := func(i int, pk parsedKey) {
		if seen[pk.fp] {
			return // the same key twice is harmless; keep one
		}
		if len(keys) >= MaxKeysPerUser {
			drop(i, "more than %d keys", MaxKeysPerUser)
			return
		}
		if seen == nil {
			seen = make(map[string]bool, 2)
		}
		seen[pk.fp] = true
		keys = append(keys, pk.key)
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
			if pk, ok := plainEd25519(line); ok {
				accept(i, pk)
				continue
			}
			if pk, ok := keyMemo.get(line); ok {
				accept(i, pk)
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
			pk := parsedKey{canonicalKey(line, pub, comment), ssh.FingerprintSHA256(pub)}
			keyMemo.put(line, pk)
			accept(i, pk)
		}
	}
	return keys, rej
}

// canonicalKey is the line sshd gets for pub: "type base64 comment", as
// ssh.MarshalAuthorizedKey writes the key, with the cleaned comment. When
// line is already that (the usual case) it is line itself: the source's
// string, not a second copy of every key, made without building one
// (MarshalAuthorizedKey's buffers were 136 MB of a 100,000-user
// validation's garbage; issue 18).
func canonicalKey(line string, pub ssh.PublicKey, comment string) string {
	var buf [1024]byte
	b := append(buf[:0], pub.Type()...)
	b = append(b, ' ')
	b = base64.StdEncoding.AppendEncode(b, pub.Marshal())
	if c := cleanComment(comment); c != "" {
		b = append(append(b, ' '), c...)
	}
	if string(b) == line {
		return line
	}
	return string(b)
}

// plainEd25519 is what ssh.ParseAuthorizedKey, canonicalKey and
// ssh.FingerprintSHA256 make of line when line is an ed25519 key written
// the usual way: "ssh-ed25519", one space, the 68 base64 characters of
// the 51-byte blob (its own type ssh-ed25519, then 32 key bytes: what
// ssh.ParsePublicKey accepts, with nothing after), and an optional
// comment after a space or tab. ok is false for any other line, which
// takes the parser's path. Most keys a directory holds are such lines;
// the parser's path (parse, marshal again, fingerprint) was about 1.3 s
// of a 100,000-user validation's CPU and most of its garbage (issue 18).
// TestPlainEd25519IsTheParser holds it to the parser's answers.
func plainEd25519(line string) (parsedKey, bool) {
	const typ = "ssh-ed25519 "
	rest, ok := strings.CutPrefix(line, typ)
	if !ok {
		return parsedKey{}, false
	}
	end := strings.IndexAny(rest, " \t")
	if end < 0 {
		end = len(rest)
	}
	const b64Len = 68 // 51 bytes, no padding
	if end != b64Len {
		return parsedKey{}, false
	}
	var blob [51 + 3]byte // DecodedLen(68) is 51
	n, err := base64.StdEncoding.Decode(blob[:], unsafe.Slice(unsafe.StringData(rest), b64Len))
	if err != nil || n != 51 || string(blob[:19]) != "\x00\x00\x00\x0bssh-ed25519\x00\x00\x00\x20" {
		return parsedKey{}, false
	}
	sum := sha256.Sum256(blob[:51])
	var fb [7 + 43]byte // "SHA256:" and 32 bytes unpadded
	fp := string(base64.RawStdEncoding.AppendEncode(append(fb[:0], "SHA256:"...), sum[:]))
	after := rest[end:] // "" or what follows the key, from the space or tab
	if strings.IndexByte(after, '\n') >= 0 {
		return parsedKey{}, false // several lines: checkKeys splits them first
	}
	comment := cleanComment(strings.Trim(after, " \t"))
	switch {
	case comment == "": // the whole line when nothing follows the key
		return parsedKey{line[:len(typ)+end], fp}, true
	case len(after) == len(comment)+1 && after[0] == ' ' && after[1:] == comment:
		return parsedKey{line, fp}, true
	}
	return parsedKey{line[:len(typ)+end] + " " + comment, fp}, true
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

// parsedKey is what checkKeys made of one accepted key line: the
// canonical key and its fingerprint.
type parsedKey struct{ key, fp string }

// keyMemo remembers the key lines accepted by the last two validations.
// Parsing a key is the costliest check of a user (about 6% of a
// one-change poll's CPU at 10,000 users) and the answer depends on the
// line alone, so a poll that validates the whole directory again to
// apply one change parses only the keys it has not seen. Lines a
// validation did not meet again are forgotten at the end of the next
// (Directory rotates the memo), so it holds at most two directories'
// keys, and only accepted ones: a rejected line is parsed every time and
// rejected with the same reason.
var keyMemo memo

type memo struct {
	mu        sync.Mutex
	cur, prev map[string]parsedKey
}

func (m *memo) get(line string) (parsedKey, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if pk, ok := m.cur[line]; ok {
		return pk, true
	}
	pk, ok := m.prev[line]
	if ok {
		m.putLocked(line, pk)
	}
	return pk, ok
}

func (m *memo) put(line string, pk parsedKey) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.putLocked(line, pk)
}

func (m *memo) putLocked(line string, pk parsedKey) {
	if m.cur == nil {
		m.cur = make(map[string]parsedKey, len(m.prev)) // about as many as last time
	}
	m.cur[line] = pk
}

// ForgetKeys drops the remembered key lines, for a process that will not
// validate again (sync --once): at 100,000 users they are about 20 MB,
// held otherwise while the snapshot is written and verified.
func ForgetKeys() {
	keyMemo.mu.Lock()
	defer keyMemo.mu.Unlock()
	keyMemo.cur, keyMemo.prev = nil, nil
}

// rotate ends a validation: what it did not use is dropped next time.
func (m *memo) rotate() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.prev, m.cur = m.cur, nil
}
