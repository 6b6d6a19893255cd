package validate

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/crypto/ssh"
)

// canonicalKey writes what ssh.MarshalAuthorizedKey writes, plus the
// cleaned comment, for every key type and however the line was spaced;
// a line already canonical comes back as the same string (no copy).
func TestCanonicalKeyIsMarshalAuthorizedKey(t *testing.T) {
	_, edk, _ := ed25519.GenerateKey(rand.Reader)
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ek, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	for _, priv := range []any{edk, rk, ek} {
		pub, err := ssh.NewPublicKey(publicOf(priv))
		if err != nil {
			t.Fatal(err)
		}
		base := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub)))
		fields := strings.Fields(base)
		for _, tc := range []struct{ line, comment, want string }{
			{base, "", base},
			{base + " alice@laptop", "alice@laptop", base + " alice@laptop"},
			{fields[0] + "   " + fields[1] + "\tbob", "bob", base + " bob"},
			{base + " caf\u00e9\x01 x", "caf\u00e9\x01 x", base + " caf x"},
		} {
			got := canonicalKey(tc.line, pub, tc.comment)
			if got != tc.want {
				t.Errorf("%s: canonicalKey(%q) = %q, want %q", pub.Type(), tc.line, got, tc.want)
			}
			if (got == tc.line) != (unsafe.StringData(got) == unsafe.StringData(tc.line)) {
				t.Errorf("%s: a canonical line %q was copied", pub.Type(), tc.line)
			}
		}
	}
}

func publicOf(priv any) any {
	switch k := priv.(type) {
	case ed25519.PrivateKey:
		return k.Public()
	case *rsa.PrivateKey:
		return &k.PublicKey
	case *ecdsa.PrivateKey:
		return &k.PublicKey
	}
	return nil
}

// plainEd25519 answers what the parser's path answers (ssh.ParseAuthorizedKey,
// canonicalKey, ssh.FingerprintSHA256) for every line it takes, and
// declines the lines that path refuses or that it does not know.
func TestPlainEd25519IsTheParser(t *testing.T) {
	pubs := make([]string, 0, 3)
	for range 3 {
		pk, _, _ := ed25519.GenerateKey(rand.Reader)
		pub, err := ssh.NewPublicKey(pk)
		if err != nil {
			t.Fatal(err)
		}
		pubs = append(pubs, strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub))))
	}
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	rpub, _ := ssh.NewPublicKey(&rk.PublicKey)
	rsaB64 := strings.Fields(string(ssh.MarshalAuthorizedKey(rpub)))[1]
	b64 := strings.Fields(pubs[0])[1]
	blob, _ := base64.StdEncoding.DecodeString(b64)
	reenc := func(mut func(b []byte)) string {
		b := append([]byte(nil), blob...)
		mut(b)
		return base64.StdEncoding.EncodeToString(b)
	}
	lines := []string{
		pubs[0], pubs[1] + " alice@laptop", pubs[2] + "\tbob", pubs[0] + "   spaced   out  ",
		pubs[0] + " caf\u00e9\x01 x", pubs[0] + " \x01\x02", pubs[0] + " " + strings.Repeat("c", 300),
		pubs[0] + " a\tb", pubs[0] + " \xff\xfe", pubs[0] + " \r",
		"ssh-ed25519  " + b64 + " two spaces", "ssh-ed25519\t" + b64, "ssh-rsa " + b64,
		"ssh-ed25519 " + rsaB64, "ssh-ed25519 " + b64[:67], "ssh-ed25519 " + b64 + "A",
		"ssh-ed25519 " + b64[:66] + "==", "ssh-ed25519 " + b64[:30] + "\r" + b64[31:],
		"ssh-ed25519 " + b64[:30] + "!" + b64[31:],
		"ssh-ed25519 " + reenc(func(b []byte) { b[18] = 31 }),                             // key length 31 in a 51-byte blob
		"ssh-ed25519 " + reenc(func(b []byte) { b[5] = 'S' }),                             // blob's own type differs
		"ssh-ed25519 " + reenc(func(b []byte) { b[3] = 12 }),                              // type length wrong
		"ssh-ed25519 " + base64.StdEncoding.EncodeToString(append(blob[:50:50], 0, 0, 0)), // 53 bytes
		"ssh-ed25519 " + b64 + " comment\nssh-ed25519 " + b64,
	}
	for _, line := range lines {
		got, ok := plainEd25519(line)
		pub, comment, opts, rest, err := ssh.ParseAuthorizedKey([]byte(line))
		parsed := err == nil && len(opts) == 0 && len(strings.TrimSpace(string(rest))) == 0
		if !ok {
			if parsed && strings.HasPrefix(line, "ssh-ed25519 ") && !strings.ContainsAny(line, "\n") && line[12] != ' ' && line[12] != '\t' &&
				len(strings.FieldsFunc(line[12:], func(r rune) bool { return r == ' ' || r == '\t' })[0]) == 68 {
				t.Errorf("plainEd25519 declined %q, which the parser reads as a plain ed25519 key", line)
			}
			continue
		}
		if !parsed {
			t.Errorf("plainEd25519 took %q, which the parser refuses (%v, opts %q, rest %q)", line, err, opts, rest)
			continue
		}
		want := parsedKey{canonicalKey(line, pub, comment), ssh.FingerprintSHA256(pub)}
		if got != want {
			t.Errorf("plainEd25519(%q) = %+v, the parser's path %+v", line, got, want)
		}
		if got.key == line && unsafe.StringData(got.key) != unsafe.StringData(line) {
			t.Errorf("a canonical line %q was copied", line)
		}
	}
}
