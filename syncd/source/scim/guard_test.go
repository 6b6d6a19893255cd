package scim

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/scimbridge/scimbridge/syncd/redact"
	"github.com/scimbridge/scimbridge/tests/scimserver"
)

// guardToken is the bearer token of these tests: long and random-looking,
// with characters that URL and JSON encodings change.
const guardToken = "gT0k3n/9f8e7d6c5b4a+3210=zyxwvutsrqponmlk"

// noLeak fails if text holds the token or any FragmentLen run of it.
func noLeak(t *testing.T, where, text string) {
	t.Helper()
	for _, form := range []string{guardToken, url.QueryEscape(guardToken)} {
		for i := 0; i+redact.FragmentLen <= len(form); i++ {
			if strings.Contains(text, form[i:i+redact.FragmentLen]) {
				t.Fatalf("%s holds part of the token (%q):\n%s", where, form[i:i+redact.FragmentLen], text)
			}
		}
	}
}

// logTo is a logger writing everything, debug included, into b.
func logTo(b *bytes.Buffer) logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(b)
	l.SetLevel(logrus.TraceLevel)
	return l
}

// guardServer is a scimserver requiring guardToken.
func guardServer(t *testing.T, f scimserver.Faults) (*scimserver.Server, string) {
	t.Helper()
	return testServer(t, scimserver.Options{Token: guardToken, Faults: f}, 30, 5)
}

// tokenSeen counts requests to h that carried the token.
type tokenSeen struct {
	requests, withToken atomic.Int64
}

func (s *tokenSeen) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		if strings.Contains(r.Header.Get("Authorization"), guardToken) || strings.Contains(r.URL.RawQuery, url.QueryEscape(guardToken)) {
			s.withToken.Add(1)
		}
		h.ServeHTTP(w, r)
	})
}

func fetchErr(t *testing.T, c *Client) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir, err := c.Fetch(ctx)
	if err == nil {
		t.Fatalf("fetch succeeded (%d users)", len(dir.Users))
	}
	return err
}

// https to http on the same host: refused before anything is sent, even
// when the http origin is listed; the error names the option.
func TestRedirectHTTPSToHTTPRefused(t *testing.T) {
	var plain tokenSeen
	hs := httptest.NewServer(plain.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "plain", 500)
	})))
	defer hs.Close()
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, hs.URL+r.URL.RequestURI(), http.StatusMovedPermanently)
	}))
	defer tlsSrv.Close()
	for _, allow := range [][]string{nil, {hs.URL}} {
		var logs bytes.Buffer
		c := newTestClient(t, tlsSrv.URL+"/scim/v2", func(o *Options) {
			o.Token, o.HTTPClient, o.Log, o.AllowedRedirectOrigins = guardToken, tlsSrv.Client(), logTo(&logs), allow
		})
		err := fetchErr(t, c)
		var re *RedirectError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), "leaves https for http") || !strings.Contains(err.Error(), "allowed_redirect_origins") {
			t.Fatalf("allow %v: error %v", allow, err)
		}
		if n := plain.requests.Load(); n != 0 {
			t.Fatalf("allow %v: the http server got %d requests", allow, n)
		}
		noLeak(t, "error", err.Error())
		noLeak(t, "log", logs.String())
	}
}

// A redirect to another host is refused (nothing reaches it); listed in
// allowed_redirect_origins it is followed, with the token.
func TestRedirectCrossOrigin(t *testing.T) {
	var seen tokenSeen
	other := scimserver.New(scimserver.Options{Token: guardToken})
	if err := other.Load(scimserver.Generate(20, 4, 3)); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(seen.wrap(other))
	defer hs.Close()
	// Another host name for the same address: localhost vs 127.0.0.1.
	otherOrigin := strings.Replace(hs.URL, "127.0.0.1", "localhost", 1)
	_, base := guardServer(t, scimserver.Faults{Hostile: scimserver.Hostile{RedirectTo: otherOrigin, RedirectEchoToken: true}})

	var logs bytes.Buffer
	c := newTestClient(t, base, func(o *Options) { o.Token, o.Log = guardToken, logTo(&logs) })
	err := fetchErr(t, c)
	var re *RedirectError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "changes the scheme, host or port") ||
		!strings.Contains(err.Error(), `list "`+origin(mustURL(otherOrigin))+`" there`) {
		t.Fatalf("error %v", err)
	}
	if strings.Contains(err.Error(), "access_token") {
		t.Fatalf("the refused Location's query is shown: %v", err)
	}
	if n := seen.requests.Load(); n != 0 {
		t.Fatalf("the other origin got %d requests", n)
	}
	noLeak(t, "error", err.Error())
	noLeak(t, "log", logs.String())

	// Allowed: followed, token sent, the other server's data read.
	_, base2 := guardServer(t, scimserver.Faults{Hostile: scimserver.Hostile{RedirectTo: otherOrigin}})
	c = newTestClient(t, base2, func(o *Options) {
		o.Token, o.AllowedRedirectOrigins = guardToken, []string{otherOrigin + "/"}
	})
	dir, err := c.Fetch(context.Background())
	if err != nil {
		t.Fatalf("allowed redirect: %v", err)
	}
	if len(dir.Users) != 20 || seen.withToken.Load() == 0 {
		t.Fatalf("allowed redirect: %d users, %d requests with the token", len(dir.Users), seen.withToken.Load())
	}
}

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}

// A redirect within the origin (a moved base path) is followed with the
// token.
func TestRedirectSameOriginFollowed(t *testing.T) {
	srv := scimserver.New(scimserver.Options{Token: guardToken})
	if err := srv.Load(scimserver.Generate(25, 3, 5)); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rest, ok := strings.CutPrefix(r.URL.Path, "/old"); ok {
			u := *r.URL
			u.Path = rest
			http.Redirect(w, r, u.String(), http.StatusPermanentRedirect)
			return
		}
		srv.ServeHTTP(w, r)
	}))
	defer hs.Close()
	c := newTestClient(t, hs.URL+"/old/scim/v2", func(o *Options) { o.Token = guardToken })
	dir, err := c.Fetch(context.Background())
	if err != nil || len(dir.Users) != 25 {
		t.Fatalf("fetch through a same-origin redirect: %v", err)
	}
}

// Servers that echo the credentials, in any status and body, and in a
// refused redirect's Location: neither the error nor the log holds them,
// and the error still says what happened.
func TestEchoedTokenScrubbed(t *testing.T) {
	for _, c := range []struct {
		name string
		h    scimserver.Hostile
		want string
	}{
		{"401 json", scimserver.Hostile{EchoAuthStatus: 401}, "HTTP 401"},
		{"403 plain", scimserver.Hostile{EchoAuthStatus: 403, EchoAuthPlain: true}, "HTTP 403"},
		{"500 json", scimserver.Hostile{EchoAuthStatus: 500}, "HTTP 500"},
		{"502 plain", scimserver.Hostile{EchoAuthStatus: 502, EchoAuthPlain: true}, "HTTP 502"},
		{"redirect", scimserver.Hostile{RedirectTo: "http://localhost:1", RedirectEchoToken: true}, "allowed_redirect_origins"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, base := guardServer(t, scimserver.Faults{Hostile: c.h})
			var logs bytes.Buffer
			cl := newTestClient(t, base, func(o *Options) {
				o.Token, o.Log, o.MaxRetries, o.BackoffBase = guardToken, logTo(&logs), 1, time.Millisecond
			})
			err := fetchErr(t, cl)
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error does not say %q: %v", c.want, err)
			}
			noLeak(t, "error", err.Error())
			noLeak(t, "log", logs.String())
			// The HTTPError's fields, as a caller would print them.
			var he *HTTPError
			if errors.As(err, &he) {
				noLeak(t, "HTTPError fields", fmt.Sprintf("%+v", *he))
			}
			if _, err := cl.Changed(context.Background()); err != nil {
				noLeak(t, "Changed error", err.Error())
			}
		})
	}
}

// A server that puts the token into a record's attributes gets that
// record marked malformed and its values scrubbed.
func TestEchoInDataMarked(t *testing.T) {
	srv := scimserver.New(scimserver.Options{Token: guardToken})
	d := scimserver.Generate(5, 1, 9)
	d.Users[2].DisplayName = "Echo " + guardToken
	if err := srv.Load(d); err != nil {
		t.Fatal(err)
	}
	base, stop := srv.Start()
	defer stop()
	c := newTestClient(t, base, func(o *Options) { o.Token, o.Attrs.GECOS = guardToken, "displayName" })
	dir, err := c.Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	marked := 0
	for _, u := range dir.Users {
		noLeak(t, "gecos", u.GECOS)
		if strings.Contains(u.Malformed["gecos"], "credential") {
			marked++
		}
	}
	if marked != 1 {
		t.Fatalf("%d users marked", marked)
	}
}

// Each cap stops the fetch quickly with an error naming its option.
func TestCaps(t *testing.T) {
	for _, c := range []struct {
		name   string
		f      scimserver.Faults
		mod    func(*Options)
		option string
		want   string
	}{
		{"endless cursor", scimserver.Faults{Hostile: scimserver.Hostile{EndlessCursor: true}},
			func(o *Options) { o.MaxUsers = 450 }, "max_users", "more than 450 users"},
		{"endless cursor groups", scimserver.Faults{Hostile: scimserver.Hostile{EndlessCursor: true}},
			func(o *Options) { o.MaxGroups = 250; o.MaxUsers = 1 << 20 }, "max_groups", "more than 250 groups"},
		{"ignored count", scimserver.Faults{Hostile: scimserver.Hostile{IgnoreCount: true}},
			func(o *Options) { o.MaxResponseBytes = 64 << 10 }, "max_response_bytes", "count=100"},
		{"fetch bytes", scimserver.Faults{},
			func(o *Options) { o.MaxFetchBytes = 100 << 10 }, "max_fetch_bytes", "has read more than"},
		{"page cap", scimserver.Faults{},
			func(o *Options) { o.PageCap = 3 }, "page_cap", "more than 3 pages"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, base := testServer(t, scimserver.Options{Faults: c.f}, 1000, 300)
			cl := newTestClient(t, base, c.mod)
			t0 := time.Now()
			err := fetchErr(t, cl)
			var le *LimitError
			if !errors.As(err, &le) || (c.option != "" && le.Option != c.option) || !strings.Contains(err.Error(), c.want) ||
				!strings.Contains(err.Error(), "raise "+le.Option) {
				t.Fatalf("error %v", err)
			}
			if n := srv.Requests().Total; n > 40 || time.Since(t0) > 10*time.Second {
				t.Fatalf("not fast: %d requests, %v", n, time.Since(t0))
			}
		})
	}
}

// A page repeated forever under fresh cursors stops after a few pages.
func TestRepeatedPageForever(t *testing.T) {
	srv, base := testServer(t, scimserver.Options{Faults: scimserver.Faults{Hostile: scimserver.Hostile{RepeatPageForever: true}}}, 300, 10)
	err := fetchErr(t, newTestClient(t, base, nil))
	if !strings.Contains(err.Error(), "pages in a row brought no record not seen before") {
		t.Fatalf("error %v", err)
	}
	if n := srv.Requests().Total; n > 20 {
		t.Fatalf("%d requests", n)
	}
}

// usersBy serves /Users requests with users and every other request
// (discovery) with srv, the path's test prefix (one of prefixes, which
// tells users what to answer) removed first.
func usersBy(srv http.Handler, prefixes []string, users http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/Users") {
			users(w, r)
			return
		}
		r2 := r.Clone(r.Context())
		for _, p := range prefixes {
			r2.URL.Path = strings.TrimPrefix(r2.URL.Path, p)
		}
		srv.ServeHTTP(w, r2)
	})
}

// A body over max_response_bytes is refused, whether it says its length
// up front or streams without one; the read stops at the cap.
func TestOversizedBody(t *testing.T) {
	srv := scimserver.New(scimserver.Options{})
	var streamed atomic.Int64
	hs := httptest.NewServer(usersBy(srv, []string{"/len", "/chunked"}, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/scim+json")
		if r.URL.Query().Get("startIndex") == "1" && strings.Contains(r.URL.Path, "/len/") {
			w.Header().Set("Content-Length", fmt.Sprint(1<<30))
		}
		w.Write([]byte(`{"Resources":[`))
		chunk := bytes.Repeat([]byte(" "), 1<<16)
		for i := 0; i < 1<<12; i++ { // up to 256 MiB, unless the client hangs up
			if _, err := w.Write(chunk); err != nil {
				return
			}
			streamed.Add(int64(len(chunk)))
		}
	}))
	defer hs.Close()
	for _, path := range []string{"/chunked/scim/v2", "/len/scim/v2"} {
		streamed.Store(0)
		c := newTestClient(t, hs.URL+path, func(o *Options) { o.MaxResponseBytes = 1 << 20 })
		err := fetchErr(t, c)
		var le *LimitError
		if !errors.As(err, &le) || le.Option != "max_response_bytes" {
			t.Fatalf("%s: error %v", path, err)
		}
		if n := streamed.Load(); n > 64<<20 {
			t.Fatalf("%s: the server streamed %d bytes before the client stopped", path, n)
		}
	}
}

// A gzipped body is held to max_response_bytes after gunzip (a small
// body that unzips to 256 MiB is refused, not read whole), and a body
// that says gzip but is not is an error, never a page.
func TestGzippedBodyLimits(t *testing.T) {
	srv := scimserver.New(scimserver.Options{})
	var bomb bytes.Buffer
	zw := gzip.NewWriter(&bomb)
	zw.Write([]byte(`{"Resources":[`))
	chunk := bytes.Repeat([]byte(" "), 1<<16)
	for i := 0; i < 1<<12; i++ {
		zw.Write(chunk)
	}
	zw.Close()
	var gzipAsked atomic.Bool
	hs := httptest.NewServer(usersBy(srv, []string{"/bomb", "/bad"}, func(w http.ResponseWriter, r *http.Request) {
		gzipAsked.Store(strings.Contains(r.Header.Get("Accept-Encoding"), "gzip"))
		w.Header().Set("Content-Type", "application/scim+json")
		w.Header().Set("Content-Encoding", "gzip")
		if strings.Contains(r.URL.Path, "/bad/") {
			w.Write([]byte(`{"Resources":[],"totalResults":0}`))
			return
		}
		w.Write(bomb.Bytes())
	}))
	defer hs.Close()
	c := newTestClient(t, hs.URL+"/bomb/scim/v2", func(o *Options) { o.MaxResponseBytes = 1 << 20 })
	err := fetchErr(t, c)
	var le *LimitError
	if !errors.As(err, &le) || le.Option != "max_response_bytes" {
		t.Fatalf("gzip bomb (%d bytes zipped): error %v", bomb.Len(), err)
	}
	if !gzipAsked.Load() {
		t.Fatal("the client did not ask for gzip")
	}
	c = newTestClient(t, hs.URL+"/bad/scim/v2", func(o *Options) { o.MaxResponseBytes = 1 << 20; o.MaxRetries = 0 })
	if err := fetchErr(t, c); err == nil || !strings.Contains(err.Error(), "gzip") {
		t.Fatalf("a body labelled gzip that is not: error %v", err)
	}
}

// Basic credentials echoed back: neither the password nor the encoded
// user:password pair is in the error or the log.
func TestEchoedBasicCredentialsScrubbed(t *testing.T) {
	const user, pass = "scim-reader", "B4sic-pa55word-0123456789"
	srv := scimserver.New(scimserver.Options{BasicUser: user, BasicPassword: pass,
		Faults: scimserver.Faults{Hostile: scimserver.Hostile{EchoAuthStatus: 401, EchoAuthPlain: true}}})
	base, stop := srv.Start()
	defer stop()
	var logs bytes.Buffer
	c := newTestClient(t, base, func(o *Options) { o.BasicUser, o.BasicPassword, o.Log = user, pass, logTo(&logs) })
	err := fetchErr(t, c)
	pair := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
	for _, text := range []string{err.Error(), logs.String()} {
		if strings.Contains(text, pass[:redact.FragmentLen]) || strings.Contains(text, pair[len(pair)-redact.FragmentLen:]) {
			t.Fatalf("credentials in %q", text)
		}
	}
	if !strings.Contains(err.Error(), "HTTP 401") || !strings.Contains(err.Error(), "Basic "+redact.Marker) {
		t.Fatalf("error %v", err)
	}
}

// A user listed twice with different active values (paging drift, or a
// hostile server) is disabled whichever listing comes first: the first
// listing used to win, so an active copy ahead of a disabled one let
// the user in. A repeat without active changes nothing. Likewise a group
// listed twice loses a member either listing leaves out.
func TestRepeatedUserNeverActiveByOrder(t *testing.T) {
	user := func(id, name, active string) string {
		a := ""
		if active != "" {
			a = `"active": ` + active + `, `
		}
		return `{"id": "` + id + `", "userName": "` + name + `", ` + a +
			`"urn:ietf:params:scim:schemas:extension:posix:2.0:User": {"uidNumber": 20001, "gidNumber": 20000}}`
	}
	h := &handWritten{bodies: map[string]string{
		"Users?1": `{"totalResults": 3, "Resources": [` + user("u1", "alice", "true") + `, ` + user("u2", "bob", "true") + `, ` +
			user("u3", "carol", "true") + `, ` + user("u1", "alice", `"False"`) + `, ` + user("u2", "bob", "") + `, ` +
			user("u3", "carol", `"no"`) + `]}`,
		"Users?7": `{"totalResults": 3, "Resources": []}`,
		"Groups?1": `{"totalResults": 2, "Resources": [
			{"id": "g1", "displayName": "hpc", "members": [{"value": "u1"}, {"value": "u2"}, {"value": "u3"}]},
			{"id": "g2", "displayName": "web", "members": [{"value": "u2"}]},
			{"id": "g1", "displayName": "hpc", "members": [{"value": "u2"}, {"value": "u3"}]},
			{"id": "g2", "displayName": "web"}]}`,
		"Groups?5": `{"totalResults": 2, "Resources": []}`,
	}}
	log := logrus.New()
	log.SetOutput(io.Discard)
	dir, err := shapeClient(t, serveHandWritten(t, h), log).Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, u := range dir.Users {
		got[u.ID] = u.Active != nil && *u.Active
	}
	if len(dir.Users) != 3 || got["u1"] || !got["u2"] || got["u3"] {
		t.Fatalf("active after repeats: %v (want u1 and u3 disabled, u2 active; 3 users, got %d)", got, len(dir.Users))
	}
	// A group listed twice keeps the members both name (a repeat without
	// members changes nothing).
	members := map[string]string{}
	for _, g := range dir.Groups {
		members[g.ID] = strings.Join(g.MemberIDs, ",")
	}
	if len(dir.Groups) != 2 || members["g1"] != "u2,u3" || members["g2"] != "u2" {
		t.Fatalf("members after repeats: %v (want g1 u2,u3 and g2 u2)", members)
	}
}
