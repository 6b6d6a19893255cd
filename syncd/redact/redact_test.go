package redact

import (
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
}
