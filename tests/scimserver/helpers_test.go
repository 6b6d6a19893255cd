package scimserver

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// start serves a server loaded with the sample fixture and stops it when
// the test ends.
func start(t *testing.T, opts Options) (*Server, string) {
	t.Helper()
	s := New(opts)
	if err := s.LoadFixture(filepath.Join("testdata", "sample.json")); err != nil {
		t.Fatal(err)
	}
	base, stop := s.Start()
	t.Cleanup(stop)
	return s, base
}

// reply is one HTTP answer with its body decoded when it is JSON.
type reply struct {
	status int
	header http.Header
	raw    []byte
	body   map[string]any
}

func get(t *testing.T, u string, hdr ...string) reply {
	t.Helper()
	req, err := http.NewRequest("GET", u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return do(t, req)
}

func do(t *testing.T, req *http.Request) reply {
	t.Helper()
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", req.Method, req.URL, err)
	}
	r := reply{status: resp.StatusCode, header: resp.Header, raw: raw}
	json.Unmarshal(raw, &r.body)
	return r
}

// q builds a query string from name, value pairs.
func q(kv ...string) string {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Add(kv[i], kv[i+1])
	}
	return "?" + v.Encode()
}

func (r reply) resources() []map[string]any {
	var out []map[string]any
	rs, _ := r.body["Resources"].([]any)
	for _, x := range rs {
		out = append(out, x.(map[string]any))
	}
	return out
}

func (r reply) num(key string) int {
	f, _ := r.body[key].(float64)
	return int(f)
}

func (r reply) str(key string) string {
	s, _ := r.body[key].(string)
	return s
}

func (r reply) wantStatus(t *testing.T, status int) reply {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body: %.300s", r.status, status, r.raw)
	}
	return r
}

func (r reply) wantError(t *testing.T, status int, scimType string) {
	t.Helper()
	r.wantStatus(t, status)
	if got := r.str("scimType"); got != scimType {
		t.Fatalf("scimType %q, want %q; body: %s", got, scimType, r.raw)
	}
	if r.str("status") == "" || !hasSchema(r.body, URNError) {
		t.Fatalf("error body is not an RFC 7644 error: %s", r.raw)
	}
	if ct := r.header.Get("Content-Type"); ct != contentType {
		t.Fatalf("Content-Type %q, want %q", ct, contentType)
	}
}

func hasSchema(m map[string]any, urn string) bool {
	ss, _ := m["schemas"].([]any)
	for _, s := range ss {
		if s == urn {
			return true
		}
	}
	return false
}

func names(rs []map[string]any) []string {
	var out []string
	for _, r := range rs {
		n, _ := r["userName"].(string)
		if n == "" {
			n, _ = r["displayName"].(string)
		}
		out = append(out, n)
	}
	return out
}

func ids(rs []map[string]any) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r["id"].(string))
	}
	return out
}

// walkIndex pages through a listing by startIndex the way a careful
// client does (advancing by what it got), up to limit pages.
func walkIndex(t *testing.T, base, path string, count, limit int, extra ...string) (all []map[string]any, pages []reply) {
	t.Helper()
	start := 1
	for range limit {
		r := get(t, base+path+q(append([]string{"startIndex", itoa(start), "count", itoa(count)}, extra...)...)).wantStatus(t, 200)
		pages = append(pages, r)
		rs := r.resources()
		all = append(all, rs...)
		if len(rs) == 0 || start-1+len(rs) >= r.num("totalResults") {
			return all, pages
		}
		start += len(rs)
	}
	t.Fatalf("walk of %s did not end within %d pages", path, limit)
	return nil, nil
}

// walkCursor follows nextCursor up to limit pages.
func walkCursor(t *testing.T, base, path string, count, limit int, extra ...string) (all []map[string]any, pages []reply) {
	t.Helper()
	cursor := ""
	for range limit {
		r := get(t, base+path+q(append([]string{"cursor", cursor, "count", itoa(count)}, extra...)...)).wantStatus(t, 200)
		pages = append(pages, r)
		all = append(all, r.resources()...)
		next, ok := r.body["nextCursor"].(string)
		if !ok {
			return all, pages
		}
		cursor = next
	}
	t.Fatalf("cursor walk of %s did not end within %d pages", path, limit)
	return nil, nil
}

func itoa(n int) string { return strconv.Itoa(n) }

func newReq(t *testing.T, method, u, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	return req
}
