package validate

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
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
