package scim

// Guards against a hostile or broken server (issue 9 item 5).
//
// Redirects: a redirect is followed only to the base URL's own origin
// (scheme, host and port) or to an origin the administrator listed in
// allowed_redirect_origins; never from https to http, whatever the list
// says. Go's client would follow any redirect, keep the Authorization
// header for the same host name whatever the scheme (https→http sent the
// token in clear) and drop it for other hosts while still returning their
// data. Here the credentials are set explicitly on each hop that is
// allowed, and a refused hop is never sent at all.
//
// Secrets: the token and basic credentials are registered with
// syncd/redact when the client is made; every error the client returns
// is scrubbed, and so is every piece of a server's answer that goes into
// an error (before it is cut short). A record whose attributes hold a
// credential is marked malformed and its values scrubbed, so an echoing
// server cannot get the token into the snapshot either.
//
// Caps: every fetch is bounded in users, groups, list pages (per
// listing), bytes per response and bytes in all; a listing that keeps
// bringing nothing new fails after a few pages. Each cap is an option and
// its error names it. The defaults are sized for a directory of a
// million users (twice that in records, pages of 100).

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/scimbridge/scimbridge/syncd/redact"
	"github.com/scimbridge/scimbridge/syncd/source"
)

// Default caps (see Options).
const (
	DefaultMaxUsers         = 2_000_000
	DefaultMaxGroups        = 2_000_000
	DefaultPageCap          = 20_000
	DefaultMaxResponseBytes = 256 << 20
	DefaultMaxFetchBytes    = 4 << 30
)

// staleCursorPages is how many cursor pages in a row may bring no record
// not seen before: a server handing out new cursors for the same page
// would otherwise page until page_cap.
const staleCursorPages = 5

// maxRedirects bounds a redirect chain (Go's default is 10 too).
const maxRedirects = 10

// LimitError is a fetch stopped by a cap. Option is the configuration
// key that raises it.
type LimitError struct {
	Option string
	Limit  int64
	What   string // what went over, e.g. "listing Users: more than 2000000 users"
	Hint   string // why it may have happened
}

func (e *LimitError) Error() string {
	s := fmt.Sprintf("scim: %s (%s = %d)", e.What, e.Option, e.Limit)
	if e.Hint != "" {
		s += ": " + e.Hint
	}
	return s + fmt.Sprintf("; the fetch is abandoned and the live snapshot kept; raise %s if the directory really is this large", e.Option)
}

// RedirectError is a redirect the client refused to follow.
type RedirectError struct {
	From, To string // origins
	Path     string // the target's path (its query is never shown)
	Reason   string
}

func (e *RedirectError) Error() string {
	return redact.String(fmt.Sprintf("redirect from %s to %s%s refused: %s; the credentials are sent only to %s and the origins in allowed_redirect_origins: list %q there if it is the same SCIM service, or point base_url at where the service now lives",
		e.From, e.To, e.Path, e.Reason, e.From, e.To))
}

// origin is scheme://host:port with the default port filled in and the
// host lower-cased.
func origin(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if port == "" {
		switch scheme {
		case "https":
			port = "443"
		case "http":
			port = "80"
		}
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}

// ParseOrigin checks an allowed_redirect_origins entry: an http(s) URL
// with a host and nothing after it but an optional "/".
func ParseOrigin(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil {
		return "", err
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return "", fmt.Errorf("%q: want https://host[:port]", s)
	}
	if u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%q: want an origin, https://host[:port], with no user, path or query", s)
	}
	return origin(u), nil
}

// checkRedirect is the http.Client's CheckRedirect.
func (c *Client) checkRedirect(req *http.Request, via []*http.Request) error {
	from := origin(c.base)
	to := origin(req.URL)
	refuse := func(reason string) error {
		return &RedirectError{From: from, To: to, Path: req.URL.EscapedPath(), Reason: reason}
	}
	if len(via) >= maxRedirects {
		return refuse(fmt.Sprintf("more than %d redirects in a row", maxRedirects))
	}
	if strings.EqualFold(c.base.Scheme, "https") && !strings.EqualFold(req.URL.Scheme, "https") {
		return refuse("it leaves https for " + req.URL.Scheme + " (never followed: the token would travel in clear)")
	}
	if to != from && !c.redirectOK[to] {
		return refuse("it changes the scheme, host or port")
	}
	c.setAuth(req)
	return nil
}

// setAuth puts the credentials on a request to a trusted origin.
func (c *Client) setAuth(req *http.Request) {
	switch {
	case c.opts.Token != "":
		req.Header.Set("Authorization", "Bearer "+c.opts.Token)
	case c.opts.BasicUser != "":
		req.SetBasicAuth(c.opts.BasicUser, c.opts.BasicPassword)
	}
}

// registerSecrets tells redact what never to write.
func registerSecrets(o Options) {
	redact.Add(o.Token, o.BasicPassword)
	if o.BasicUser != "" || o.BasicPassword != "" {
		redact.Add(base64.StdEncoding.EncodeToString([]byte(o.BasicUser + ":" + o.BasicPassword)))
	}
}

// budget is what one fetch may still read.
type budget struct {
	used atomic.Int64
	max  int64
}

type budgetKey struct{}

func withBudget(ctx context.Context, max int64) context.Context {
	return context.WithValue(ctx, budgetKey{}, &budget{max: max})
}

func budgetOf(ctx context.Context) *budget {
	b, _ := ctx.Value(budgetKey{}).(*budget)
	return b
}

// bodyLimit is how many bytes the response to u may have, and the option
// that sets it.
func (c *Client) bodyLimit(ctx context.Context) (int64, string) {
	limit, opt := c.opts.MaxResponseBytes, "max_response_bytes"
	if b := budgetOf(ctx); b != nil {
		if rest := b.max - b.used.Load(); rest < limit {
			limit, opt = max(rest, 0), "max_fetch_bytes"
		}
	}
	return limit, opt
}

// tooLarge is the error for a response over limit.
func (c *Client) tooLarge(shown, u string, limit int64, opt string, size int64) error {
	what := fmt.Sprintf("GET %s: the response is larger than %d bytes", shown, limit)
	if size > 0 {
		what = fmt.Sprintf("GET %s: the response is %d bytes", shown, size)
	}
	e := &LimitError{Option: opt, What: what}
	switch opt {
	case "max_fetch_bytes":
		e.Limit = c.opts.MaxFetchBytes
		e.What = fmt.Sprintf("GET %s: this fetch has read more than its %d bytes", shown, c.opts.MaxFetchBytes)
		e.Hint = "an endless listing, or records far larger than usual"
	default:
		e.Limit = c.opts.MaxResponseBytes
		e.Hint = "records far larger than usual"
		if pu, err := url.Parse(u); err == nil && pu.Query().Get("count") != "" {
			e.Hint = fmt.Sprintf("a page asked for count=%s: the server ignores count, or sends records far larger than usual", pu.Query().Get("count"))
		}
	}
	return e
}

// countCap is the record cap of a listing of segment.
func (c *Client) countCap(segment string) (int, string, string) {
	switch segment {
	case c.opts.UsersEndpoint:
		return c.opts.MaxUsers, "max_users", "users"
	case c.opts.GroupsEndpoint:
		return c.opts.MaxGroups, "max_groups", "groups"
	}
	return 0, "", ""
}

// pageCapError is the error for a listing longer than page_cap.
func (c *Client) pageCapError(segment string) error {
	return &LimitError{Option: "page_cap", Limit: int64(c.opts.PageCap),
		What: fmt.Sprintf("listing %s: more than %d pages", segment, c.opts.PageCap),
		Hint: "a server paging forever, or pages far smaller than asked"}
}

// echoes reports whether s holds a credential; the value is scrubbed.
func echoes(s *string, field string, m *map[string]string) {
	if !redact.HasExact(*s) {
		return
	}
	*s = redact.String(*s)
	noteMalformed(m, field, errors.New("holds a credential syncd sends to the server (the server echoes it); not published"))
}

// scrubUser marks and scrubs the attributes of u that echo a credential.
func scrubUser(u *source.User) {
	if redact.HasExact(u.ID) || redact.HasExact(u.ExternalID) {
		u.ID, u.ExternalID = redact.String(u.ID), redact.String(u.ExternalID)
		noteMalformed(&u.Malformed, source.FieldUserName, errors.New("its id holds a credential syncd sends to the server (the server echoes it)"))
	}
	echoes(&u.UserName, source.FieldUserName, &u.Malformed)
	echoes(&u.GECOS, source.FieldGECOS, &u.Malformed)
	echoes(&u.Home, source.FieldHome, &u.Malformed)
	echoes(&u.Shell, source.FieldShell, &u.Malformed)
	echoes(&u.Quota, source.FieldQuota, &u.Malformed)
	for i := range u.SSHKeys {
		echoes(&u.SSHKeys[i], source.FieldSSHKeys, &u.Malformed)
	}
}

// scrubGroup marks and scrubs the attributes of g that echo a credential.
func scrubGroup(g *source.Group) {
	if redact.HasExact(g.ID) {
		g.ID = redact.String(g.ID)
		noteMalformed(&g.Malformed, source.FieldName, errors.New("its id holds a credential syncd sends to the server (the server echoes it)"))
	}
	echoes(&g.DisplayName, source.FieldName, &g.Malformed)
	echoes(&g.Quota, source.FieldQuota, &g.Malformed)
	for i := range g.MemberIDs {
		if redact.HasExact(g.MemberIDs[i]) {
			g.MemberIDs[i] = redact.String(g.MemberIDs[i])
		}
	}
}
