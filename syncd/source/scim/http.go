package scim

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"mime"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/scimbridge/scimbridge/syncd/redact"
)

// HTTPError is a SCIM request that failed with an HTTP status.
type HTTPError struct {
	URL    string
	Status int
	// ScimType and Detail come from a SCIM error body, if there was one.
	ScimType, Detail string
	// Authenticate is the WWW-Authenticate header of a 401 (for bearer
	// tokens it names the problem: error="invalid_token").
	Authenticate string
}

func (e *HTTPError) Error() string {
	s := fmt.Sprintf("GET %s: HTTP %d", e.URL, e.Status)
	switch e.Status {
	case http.StatusUnauthorized:
		s += " (the server refused the credentials: check the bearer token, or the basic auth user and password; tokens expire and are revoked)"
	case http.StatusForbidden:
		s += " (the credentials are valid but not allowed to read this: check the token's scopes or the SCIM client's permissions at the identity provider)"
	case http.StatusNotFound:
		s += " (no such endpoint: check base_url, which must be the SCIM root such as https://host/scim/v2, and users_endpoint/groups_endpoint)"
	}
	if e.ScimType != "" {
		s += " " + e.ScimType
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	if e.Authenticate != "" {
		s += " [WWW-Authenticate: " + e.Authenticate + "]"
	}
	return redact.String(s)
}

// transportHint says whether a transport error is permanent, and what
// fixes it.
func transportHint(err error) (string, bool) {
	var ua x509.UnknownAuthorityError
	var he x509.HostnameError
	var ci x509.CertificateInvalidError
	var rh tls.RecordHeaderError
	var alert tls.AlertError
	var cve *tls.CertificateVerificationError
	switch {
	case errors.As(err, &ua):
		return " (the server's certificate is not signed by a CA this host trusts: set ca_file to the PEM file of the CA that signed it)", true
	case errors.As(err, &he):
		return " (the certificate is not for the host in base_url: use the name the certificate names in base_url)", true
	case errors.As(err, &ci):
		return " (the server's certificate is invalid (expired or not yet valid, or not for TLS servers): renew it on the server, check this host's clock)", true
	case errors.As(err, &cve):
		return " (the server's certificate does not verify: set ca_file to the PEM file of the CA that signed it)", true
	case errors.As(err, &rh), strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return " (base_url says https but the server answers plain HTTP on that port: use the server's TLS port, or http:// on a trusted network only)", true
	case errors.As(err, &alert):
		return " (the server refused the TLS handshake: check base_url's port and that the server accepts TLS 1.2 or newer)", true
	}
	return "", false
}

// NewTransport is the HTTP transport for a SCIM service: TLS 1.2 or newer,
// verified against the system store plus caFile (PEM) when given.
func NewTransport(caFile string) (*http.Transport, error) {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("scim: CA file: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("scim: CA file %s: no PEM certificate in it", caFile)
		}
		t.TLSClientConfig.RootCAs = pool
	}
	t.MaxIdleConnsPerHost = 4
	return t, nil
}

// get fetches u and decodes the JSON body into v, retrying what is worth
// retrying: 429 and 503 (after Retry-After), 502, 504 and transport
// errors, with jittered exponential backoff, at most MaxRetries times.
// Any other failure is final: a page that failed is never skipped.
func (c *Client) get(ctx context.Context, u string, v any) error {
	if attrsRefused(c.base.Host) {
		u = withoutAttributes(u)
	}
	err := c.getRetrying(ctx, u, v)
	var he *HTTPError
	if !errors.As(err, &he) || he.Status != http.StatusBadRequest || !strings.Contains(u, "attributes=") {
		return err
	}
	// A server that answers attributes= with 400 (AWS IAM Identity
	// Center, some SCIM libraries): ask again without it; when that
	// works, the server is remembered for the life of the process and
	// the fallback logged once, naming the option that skips the try.
	plain := withoutAttributes(u)
	if err2 := c.getRetrying(ctx, plain, v); err2 != nil {
		return err
	}
	if rp, ok := v.(*rawPage); ok {
		// As for a decoded page: an answer without attributes= that
		// does not decode is no proof the server refuses them.
		var p listPage
		if rp.decodeInto(&p) != nil {
			return err
		}
	}
	if _, seen := attrsRefusedHosts.LoadOrStore(c.base.Host, true); !seen {
		c.log.WithField("url", shownURL(u)).WithField("status", he.Status).Warn("scim: the server refuses the attributes= parameter; reading without it from now on (attributes it returns only on request will be missing; set send_attributes = false to skip the first try)")
	}
	return nil
}

// attrsRefusedHosts are the servers (host:port) that answered attributes=
// with 400 and answered without it.
var attrsRefusedHosts sync.Map

func attrsRefused(host string) bool {
	_, ok := attrsRefusedHosts.Load(host)
	return ok
}

// withoutAttributes is u without its attributes= parameter.
func withoutAttributes(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	q := p.Query()
	if !q.Has("attributes") {
		return u
	}
	q.Del("attributes")
	p.RawQuery = q.Encode()
	return p.String()
}

// getRetrying is get without the attributes= fallback.
func (c *Client) getRetrying(ctx context.Context, u string, v any) error {
	var lastErr error
	began := time.Now()
	for attempt := 0; ; attempt++ {
		wait, err := c.try(ctx, u, v)
		if err == nil {
			return nil
		}
		lastErr = err
		// A hung source shows: every timeout is an error in the log with
		// the option that sets it, and retries after timeouts stop within
		// the budget (poll_interval), so one poll fails, not five.
		// The wait before the next attempt is drawn once, here: the
		// budget below is checked with the very wait the retry will take
		// (a second random draw could be three times the first and end
		// the retry past poll_interval).
		delay := wait
		if delay == 0 {
			delay = c.backoff(attempt)
		}
		if delay > c.opts.MaxWait {
			delay = c.opts.MaxWait
		}
		var te *TimeoutError
		if errors.As(err, &te) || errors.Is(err, context.DeadlineExceeded) {
			c.log.WithField("url", shownURL(u)).WithError(err).Error("scim: the source did not answer in time (read_timeout, request_timeout)")
			next := c.opts.ReadTimeout
			if next <= 0 {
				next = c.opts.RequestTimeout
			}
			if b := c.opts.TimeoutRetryBudget; b > 0 && wait >= 0 && time.Since(began)+delay+next > b {
				return fmt.Errorf("%w (gave up after %d attempt(s) in %s: no retry could end within poll_interval %s)",
					lastErr, attempt+1, time.Since(began).Round(time.Second), b)
			}
		}
		if wait < 0 || attempt >= c.opts.MaxRetries {
			if attempt > 0 && wait >= 0 {
				return fmt.Errorf("%w (gave up after %d retries)", lastErr, attempt)
			}
			return lastErr
		}
		wait = delay
		c.log.WithField("url", u).WithField("wait", wait.String()).WithError(err).Warn("scim: retrying request")
		c.stats.retries.Add(1)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (while waiting to retry: %w)", lastErr, ctx.Err())
		case <-t.C:
		}
	}
}

// backoff is the jittered exponential wait before retry n+1 when the
// server gave no Retry-After: base·2^n, capped, times [0.5, 1.5).
func (c *Client) backoff(n int) time.Duration {
	d := c.opts.BackoffBase << min(n, 16)
	if d > c.opts.MaxWait || d <= 0 {
		d = c.opts.MaxWait
	}
	return time.Duration(float64(d) * (0.5 + rand.Float64()))
}

// try makes one request. wait < 0 means the error is not retryable;
// wait > 0 is the server's Retry-After.
func (c *Client) try(ctx context.Context, u string, v any) (time.Duration, error) {
	return c.tryShown(ctx, u, shownURL(u), v)
}

// shownURL is u with its query unescaped, for messages people read.
func shownURL(u string) string {
	if s, err := url.QueryUnescape(u); err == nil {
		return redact.String(s)
	}
	return redact.String(u)
}

func (c *Client) tryShown(ctx context.Context, u, shown string, v any) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.RequestTimeout)
	defer cancel()
	// read_timeout: a watchdog that cancels the request when no byte has
	// come for that long (before the headers, or within the body).
	rctx, idleCancel := context.WithCancelCause(ctx)
	defer idleCancel(nil)
	ctx = rctx
	kick := func() {}
	if d := c.opts.ReadTimeout; d > 0 {
		idle := time.AfterFunc(d, func() { idleCancel(errReadIdle) })
		defer idle.Stop()
		kick = func() { idle.Reset(d) }
	}
	idleErr := func(err error) error {
		return &TimeoutError{Option: "read_timeout", Err: fmt.Errorf("GET %s: %w", shown, err),
			Hint: fmt.Sprintf(": no data from the source for read_timeout (%s): it is hung or unreachable (raise read_timeout if it is only slow to answer)", c.opts.ReadTimeout)}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return -1, fmt.Errorf("GET %s: %w", shown, err)
	}
	req.Header.Set("Accept", "application/scim+json, application/json")
	req.Header.Set("User-Agent", "scimbridge-syncd")
	c.setAuth(req)
	c.stats.requests.Add(1)
	resp, err := c.http.Do(req)
	if err != nil && context.Cause(ctx) == errReadIdle {
		return 0, idleErr(err)
	}
	if err != nil {
		// A refused redirect is final; its target may carry anything
		// in its query, so only the RedirectError's text is shown.
		var re *RedirectError
		if errors.As(err, &re) {
			return -1, fmt.Errorf("GET %s: %w", shown, re)
		}
		// Transport errors (refused, reset, timeout) are worth a retry;
		// a context cancelled by our caller is not.
		if ctx.Err() != nil && errors.Is(ctx.Err(), context.Canceled) {
			return -1, fmt.Errorf("GET %s: %w", shown, err)
		}
		// A certificate that does not verify will not verify on retry,
		// nor will plain HTTP answering a TLS client or a TLS alert:
		// these fail at once, naming the option that fixes them.
		hint, permanent := transportHint(err)
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		if permanent {
			return -1, fmt.Errorf("GET %s: %w%s", shown, err, hint)
		}
		return 0, fmt.Errorf("GET %s: %w", shown, err)
	}
	defer resp.Body.Close()
	limit, opt := c.bodyLimit(ctx)
	if resp.ContentLength > limit {
		return -1, c.tooLarge(shown, u, limit, opt, resp.ContentLength)
	}
	kick()
	var buf *[]byte
	if rb, ok := v.(readBuffer); ok {
		buf = rb.buffer()
	}
	body, err := readBody(buf, io.LimitReader(kicker{resp.Body, kick}, limit+1), min(resp.ContentLength, limit+1))
	if err != nil && context.Cause(ctx) == errReadIdle {
		return 0, idleErr(err)
	}
	c.stats.bytes.Add(int64(len(body)))
	if b := budgetOf(ctx); b != nil {
		b.used.Add(int64(len(body)))
	}
	if err != nil {
		return 0, fmt.Errorf("GET %s: HTTP %d: reading body: %w", shown, resp.StatusCode, err)
	}
	if int64(len(body)) > limit {
		return -1, c.tooLarge(shown, u, limit, opt, 0)
	}
	// A UTF-8 byte order mark is not JSON, but some services write one.
	body = bytes.TrimPrefix(body, []byte("\xef\xbb\xbf"))
	if resp.StatusCode != http.StatusOK {
		he := &HTTPError{URL: shown, Status: resp.StatusCode}
		if resp.StatusCode == http.StatusUnauthorized {
			he.Authenticate = clip(resp.Header.Get("WWW-Authenticate"))
		}
		// Servers echo the request (the Authorization header too) in
		// error bodies: every part shown is scrubbed whole, before clip
		// or snippet cut it short.
		var se struct {
			ScimType string `json:"scimType"`
			Detail   string `json:"detail"`
		}
		if json.Unmarshal(body, &se) == nil {
			he.ScimType, he.Detail = clip(se.ScimType), clip(se.Detail)
		} else {
			he.Detail = snippet(body)
		}
		switch resp.StatusCode {
		case http.StatusTooManyRequests, http.StatusServiceUnavailable:
			return retryAfter(resp.Header.Get("Retry-After"), time.Now()), he
		case http.StatusBadGateway, http.StatusGatewayTimeout:
			return 0, he
		}
		return -1, he
	}
	if err := checkJSON(resp.Header.Get("Content-Type"), body); err != nil {
		return -1, fmt.Errorf("GET %s: HTTP %d: %w", shown, resp.StatusCode, err)
	}
	if rp, ok := v.(*rawPage); ok {
		// A walk's page: decoded by the walk (ahead.go).
		rp.body, rp.shown, rp.status = body, shown, resp.StatusCode
		return 0, nil
	}
	if err := decode(body, v); err != nil {
		return -1, fmt.Errorf("GET %s: HTTP %d: body is not SCIM JSON: %v", shown, resp.StatusCode, err)
	}
	return 0, nil
}

// checkJSON rejects what is plainly not a SCIM JSON body: an HTML or XML
// error page from a proxy, an empty body, anything not starting with '{'
// (or '[', which the decoder then refuses where an object is needed).
// The media type is not otherwise trusted: servers label JSON text/plain,
// text/json or application/octet-stream, and the decoder is the judge.
// Truncation is caught by the decoder.
func checkJSON(contentType string, body []byte) error {
	if mt, _, err := mime.ParseMediaType(contentType); err == nil {
		if mt == "text/html" || mt == "text/xml" || strings.HasSuffix(mt, "/xml") || strings.HasSuffix(mt, "+xml") {
			return fmt.Errorf("body is %s, not SCIM JSON: %s", mt, snippet(body))
		}
	}
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 {
		return fmt.Errorf("empty body, not SCIM JSON")
	}
	if trimmed[0] != '{' && trimmed[0] != '[' {
		return fmt.Errorf("body is not SCIM JSON: %s", snippet(body))
	}
	return nil
}

// retryAfter parses Retry-After as delay-seconds or an HTTP-date; 0 when
// absent or unparseable (the caller then backs off on its own).
func retryAfter(h string, now time.Time) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0
	}
	if n, err := strconv.ParseInt(h, 10, 64); err == nil {
		if n < 0 {
			return 0
		}
		if n > 86400 {
			n = 86400
		}
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
		// A date in the past: retry now, but not in a tight loop.
		return time.Millisecond
	}
	return 0
}

// snippet is the start of a body for an error message, on one line,
// with any credential in it scrubbed.
func snippet(b []byte) string {
	const n = 120
	// Scrub enough beyond the cut that a secret starting before it is
	// seen whole.
	if w := n + redact.Longest(); len(b) > w {
		b = b[:w]
	}
	s := redact.String(string(b))
	if len(s) > n {
		s = s[:n]
	}
	return strconv.Quote(s)
}

// clip makes a server's text fit an error message: scrubbed of
// credentials, at most 300 bytes, on one line.
func clip(s string) string {
	const n = 300
	if w := n + redact.Longest(); len(s) > w {
		s = s[:w]
	}
	s = redact.String(s)
	if len(s) > n {
		s = s[:n] + "..."
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

// decode is json.Unmarshal, except that a list page is validated once
// and read in place (json.Unmarshal would scan it twice more before
// calling its UnmarshalJSON: a fifth of a full read's CPU).
func decode(body []byte, v any) error {
	p, ok := v.(*listPage)
	if !ok {
		return json.Unmarshal(body, v)
	}
	if !json.Valid(body) {
		var any any
		if err := json.Unmarshal(body, &any); err != nil {
			return err
		}
	}
	return p.UnmarshalJSON(body)
}

// readBody reads r whole: into *buf when buf is not nil (a buffer its
// owner keeps from page to page, grown as needed and kept grown), else
// into a new slice. size is the length announced, -1 if unknown.
func readBody(buf *[]byte, r io.Reader, size int64) ([]byte, error) {
	if buf == nil {
		return io.ReadAll(r)
	}
	b := (*buf)[:0]
	switch {
	case size > 0 && int64(cap(b)) < size+1:
		// +1: the read that sees EOF. An eighth more: pages of one
		// listing differ by a few bytes, and a buffer made to the byte
		// was made again for most pages (130 MB of buffers for 110
		// pages at 100,000 users, issue 18).
		b = make([]byte, 0, size+1+size/8)
	case size > 0 && cap(b) > bigBuffer && int64(cap(b)) > 4*(size+1):
		// A page far smaller than the buffer (the groups' first page,
		// with a group of every user in it, is 47 MB at 100,000 users,
		// the next 3 MB): the big one is not kept for the rest of the
		// listing.
		b = make([]byte, 0, size+1+size/8)
	}
	for {
		if len(b) == cap(b) {
			// Doubling: append's growth for large slices (1.25x) would
			// allocate five times a 13 MB page of groups on the way.
			nb := make([]byte, len(b), max(2*cap(b), 64<<10))
			copy(nb, b)
			b = nb
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			*buf = b
			return b, nil
		}
		if err != nil {
			*buf = b
			return b, err
		}
	}
}

// bigBuffer is the size above which a kept page buffer is given up for
// a page that needs a quarter of it (readBody).
const bigBuffer = 4 << 20

// errReadIdle is the cause of a request cancelled by read_timeout.
var errReadIdle = errors.New("no data within read_timeout")

// kicker calls kick on every read that returns data.
type kicker struct {
	r    io.Reader
	kick func()
}

func (k kicker) Read(p []byte) (int, error) {
	n, err := k.r.Read(p)
	if n > 0 {
		k.kick()
	}
	return n, err
}
