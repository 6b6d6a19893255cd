package redact

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
)

const tok = "tS3cr3t/t0ken+with=Odd&chars-0123456789abcdef"

func TestString(t *testing.T) {
	Reset()
	defer Reset()
	if got := String("nothing registered " + tok); got != "nothing registered "+tok {
		t.Fatalf("scrubbed with no secret: %q", got)
	}
	Add(tok, "")
	for _, c := range []struct{ name, in string }{
		{"raw", "Authorization: Bearer " + tok + " was refused"},
		{"query", "https://idp/scim?access_token=" + url.QueryEscape(tok) + "&x=1"},
		{"path", "https://idp/" + url.PathEscape(tok) + "/Users"},
		{"json", `{"detail":"` + strings.ReplaceAll(tok, "/", `\/`) + `"}`},
		{"prefix", "token " + tok[:14] + "... is invalid"},
		{"suffix", "token ..." + tok[len(tok)-13:]},
		{"middle", "x" + tok[10:30] + "y"},
		{"twice", tok + "|" + tok},
	} {
		got := String(c.in)
		if !strings.Contains(got, Marker) {
			t.Errorf("%s: no marker in %q", c.name, got)
		}
		for i := 0; i+FragmentLen <= len(tok); i++ {
			if strings.Contains(got, tok[i:i+FragmentLen]) {
				t.Errorf("%s: %q still holds %q", c.name, got, tok[i:i+FragmentLen])
			}
		}
	}
	plain := "GET https://idp.example.com/scim/v2/Users: HTTP 401"
	if got := String(plain); got != plain {
		t.Errorf("plain text changed: %q", got)
	}
}

func TestShortSecretWholeOnly(t *testing.T) {
	Reset()
	defer Reset()
	Add("hunter2")
	if got := String("pw hunter2 hunter"); got != "pw "+Marker+" hunter" {
		t.Fatalf("got %q", got)
	}
}

func TestErrorAndHook(t *testing.T) {
	Reset()
	defer Reset()
	Add(tok)
	base := errors.New("HTTP 401: echo " + tok)
	err := Error(fmt.Errorf("fetch: %w", base))
	if strings.Contains(err.Error(), tok[:FragmentLen]) || !errors.Is(err, base) {
		t.Fatalf("Error: %q (Is %v)", err, errors.Is(err, base))
	}
	if Error(err) != err || Error(nil) != nil {
		t.Fatal("Error wraps twice or wraps nil")
	}
	var b strings.Builder
	l := logrus.New()
	l.SetOutput(&b)
	l.AddHook(Hook{})
	u, _ := url.Parse("https://idp/x?token=" + url.QueryEscape(tok))
	l.WithError(base).WithField("url", u).WithField("s", tok).WithField("n", 3).Error("msg " + tok)
	if strings.Contains(b.String(), tok[:FragmentLen]) || !strings.Contains(b.String(), "n=3") {
		t.Fatalf("log: %s", b.String())
	}
}

func TestHasExact(t *testing.T) {
	Reset()
	defer Reset()
	if HasExact(tok) {
		t.Fatal("nothing registered")
	}
	Add(tok)
	if !HasExact("gecos "+tok) || !HasExact(url.QueryEscape(tok)) || HasExact(tok[:20]) || HasExact("short") {
		t.Fatal("HasExact")
	}
	// Encoded, or wrapped over lines (red team, issue 9).
	if !HasExact("x"+base64.StdEncoding.EncodeToString([]byte("Bearer "+tok))) || !HasExact(hex.EncodeToString([]byte(tok))) ||
		!HasExact(tok[:9]+"\n"+tok[9:30]+"\r\n "+tok[30:]) || HasExact("Alice Smith") {
		t.Fatal("HasExact: encoded or wrapped")
	}
}

// Encoded echoes (red team, issue 9): base64 at every alignment (also
// inside the base64 of a whole header line), base64url, hex, lower-case
// percent escapes, and the token wrapped over lines.
func TestEncodedEchoes(t *testing.T) {
	Reset()
	defer Reset()
	Add(tok)
	wrapped := ""
	for i := 0; i < len(tok); i += 7 {
		wrapped += tok[i:min(i+7, len(tok))] + "\r\n "
	}
	for _, c := range []struct{ name, in, leak string }{
		{"base64", base64.StdEncoding.EncodeToString([]byte(tok)), base64.StdEncoding.EncodeToString([]byte(tok))[4:16]},
		{"base64 of the header", "dump: " + base64.StdEncoding.EncodeToString([]byte("Authorization: Bearer "+tok)), base64.StdEncoding.EncodeToString([]byte("Authorization: Bearer " + tok))[40:52]},
		{"base64 shifted by one", base64.StdEncoding.EncodeToString([]byte("x" + tok)), base64.StdEncoding.EncodeToString([]byte("x" + tok))[4:16]},
		{"base64url", base64.RawURLEncoding.EncodeToString([]byte("ab" + tok)), base64.RawURLEncoding.EncodeToString([]byte("ab" + tok))[4:16]},
		{"hex", "0x" + hex.EncodeToString([]byte(tok)), hex.EncodeToString([]byte(tok))[:12]},
		{"lower-case escapes", "q=" + strings.ToLower(url.QueryEscape(tok)), ""},
		{"wrapped", "token:\n" + wrapped + "end", tok[:7]},
	} {
		got := String(c.in)
		if !strings.Contains(got, Marker) || (c.leak != "" && strings.Contains(got, c.leak)) {
			t.Errorf("%s: %q -> %q", c.name, c.in, got)
		}
	}
	if got := String("token:\n" + wrapped + "end"); got != "token:\n"+Marker+"\r\n end" {
		t.Errorf("wrapped: %q", got)
	}
	plain := "GET https://idp.example.com/scim/v2/Users: HTTP 401\nWWW-Authenticate: Bearer realm=\"scim\""
	if got := String(plain); got != plain {
		t.Errorf("plain text changed: %q", got)
	}
	// A short secret has no encoded forms (they would match ordinary text).
	Reset()
	Add("hunter2")
	if s := base64.StdEncoding.EncodeToString([]byte("hunter2")); String(s) != s {
		t.Errorf("short secret's base64 scrubbed")
	}
}
