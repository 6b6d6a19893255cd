// Package scim reads a whole directory from a SCIM 2.0 service provider
// (RFC 7643, RFC 7644, RFC 9865 cursor paging). It is syncd's identity
// source: Fetch returns every user and group, or an error; never a part.
//
// Servers misbehave in documented ways (see /work/shared/notes/scim.md):
// pages shift, repeat and overrun, totals lie, members go missing from
// group listings, rate limits answer 429. The client defends against
// each, and takes every attribute path from configuration: it never
// guesses a UID from id, externalId or employeeNumber.
package scim

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/scimbridge/scimbridge/syncd/redact"
)

// Options configures a Client. Zero values take the defaults noted.
type Options struct {
	BaseURL string
	// Token is a bearer token; BasicUser/BasicPassword is HTTP basic
	// auth. Neither is ever logged or put in an error.
	Token                    string
	BasicUser, BasicPassword string
	CAFile                   string
	// HTTPClient replaces the client built from CAFile (tests).
	HTTPClient *http.Client

	RequestTimeout time.Duration // per request; default 30s
	MaxRetries     int           // per request; default 0 (no retry)
	BackoffBase    time.Duration // first backoff; default 500ms
	MaxWait        time.Duration // longest single wait; default 60s

	// ReadTimeout: no byte of an answer for this long fails the request
	// (read_timeout); 0: only RequestTimeout. TimeoutRetryBudget: no
	// retry after a timeout that could end later than this after the
	// first attempt began (poll_interval); 0: MaxRetries alone.
	ReadTimeout, TimeoutRetryBudget time.Duration

	UsersEndpoint, GroupsEndpoint string     // default Users, Groups
	UsersQuery, GroupsQuery       url.Values // extra parameters (e.g. filter)

	Paging   string // auto (default), index or cursor
	PageSize int    // default 500
	PageCap  int    // pages per listing; default DefaultPageCap
	// Caps per fetch (see guard.go); zero takes the Default* value.
	MaxUsers, MaxGroups int   // distinct records per listing
	MaxResponseBytes    int64 // one response body
	MaxFetchBytes       int64 // every response of one Fetch together
	// AllowedRedirectOrigins are origins (https://host[:port]) besides
	// the base URL's that a redirect may lead to; the credentials are
	// sent there too. https to http is refused whatever is listed.
	AllowedRedirectOrigins []string

	SortBy string // sent when the server supports sorting; "" never
	// GroupMembers: auto (default) reads members from the group listing
	// and, when no listed group has any member while users exist, per
	// group, and when those have none either, from the users' groups
	// attribute; "listing" never fetches per group; "per-group" always
	// does; "per-user" asks which groups hold each user (members.value
	// eq), for servers that truncate member lists; "user-groups" reads
	// the users' read-only groups attribute (RFC 7643 section 4.1.2),
	// direct memberships only, as the listing gives.
	GroupMembers string
	// NoAttributesParam stops sending attributes= (AWS IAM Identity
	// Center rejects it); then returned:request attributes never arrive.
	NoAttributesParam bool
	// ChangeOverlap is how far the change check's window reaches back
	// before the start of the previous read; default DefaultOverlap.
	ChangeOverlap time.Duration

	Attrs Attrs

	Log logrus.FieldLogger
}

// Attrs are the attribute paths syncd reads. Empty paths are not read.
type Attrs struct {
	UserName, UID, GID, GECOS, Home, Shell, SSHKeys, Active string
	GroupName, GroupGID                                     string
	// SSHKeysAlt is read when SSHKeys is absent from a user (the posix
	// preset reads sshPublicKey and accepts sshPublicKeys). When /Schemas
	// names only one of the two, only that one is asked for.
	SSHKeysAlt string
	// Quota is the optional per-user storage limit (home_quota);
	// GroupQuota the optional per-team one (project_quota).
	Quota, GroupQuota string
}

// Client is a SCIM identity source. It is safe for one Fetch at a time.
type Client struct {
	opts  Options
	base  *url.URL
	http  *http.Client
	log   logrus.FieldLogger
	paths paths
	// redirectOK are the allowed_redirect_origins, normalised.
	redirectOK map[string]bool

	mu   sync.Mutex
	disc *Discovery // nil until discovery succeeded
	// keyPaths are the SSH key paths asked for; nil: SSHKeys and
	// SSHKeysAlt both, until /Schemas says which one exists.
	keyPaths []Path
	// membersFromUsers: the last full read took memberships from the
	// users' groups attribute; askAllGroups: it read every group one by
	// one (listings without members). incrementalLogged: the reason
	// Update cannot apply changes was logged (update.go).
	membersFromUsers, askAllGroups, incrementalLogged bool
	// probeLogged: a search for deletions fell back to the id listing
	// and said why (removed.go).
	probeLogged bool
	// listDeletions: deletions are always read by the whole id listing
	// (tests of that listing).
	listDeletions bool
	// chg is what the cheap change check needs from the last full read
	// (change.go).
	chg changeState

	// serverCursors: the server answered index paging with a nextCursor
	// (RFC 9865 cursor-only paging); with paging = auto, walk by cursor.
	serverCursors atomic.Bool

	stats struct {
		requests, retries, bytes atomic.Int64
	}
}

type paths struct {
	userName, uid, gid, gecos, home, shell, sshKeys, active Path
	groupName, groupGID                                     Path
	sshKeysAlt, quota, groupQuota                           Path
}

// New checks opts and builds a client. It makes no request.
func New(opts Options) (*Client, error) {
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = 30 * time.Second
	}
	if opts.BackoffBase <= 0 {
		opts.BackoffBase = 500 * time.Millisecond
	}
	if opts.MaxWait <= 0 {
		opts.MaxWait = 60 * time.Second
	}
	if opts.UsersEndpoint == "" {
		opts.UsersEndpoint = "Users"
	}
	if opts.GroupsEndpoint == "" {
		opts.GroupsEndpoint = "Groups"
	}
	if opts.Paging == "" {
		opts.Paging = "auto"
	}
	if opts.PageSize <= 0 {
		opts.PageSize = 500
	}
	if opts.PageCap <= 0 {
		opts.PageCap = DefaultPageCap
	}
	if opts.MaxUsers <= 0 {
		opts.MaxUsers = DefaultMaxUsers
	}
	if opts.MaxGroups <= 0 {
		opts.MaxGroups = DefaultMaxGroups
	}
	if opts.MaxResponseBytes <= 0 {
		opts.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if opts.MaxFetchBytes <= 0 {
		opts.MaxFetchBytes = DefaultMaxFetchBytes
	}
	if opts.GroupMembers == "" {
		opts.GroupMembers = "auto"
	}
	if opts.Attrs.UserName == "" {
		opts.Attrs.UserName = "userName"
	}
	if opts.Attrs.GroupName == "" {
		opts.Attrs.GroupName = "displayName"
	}
	if opts.Log == nil {
		l := logrus.New()
		l.SetLevel(logrus.WarnLevel)
		opts.Log = l
	}
	registerSecrets(opts)
	redact.Install(opts.Log)
	base, err := url.Parse(strings.TrimRight(opts.BaseURL, "/"))
	if err != nil || (base.Scheme != "https" && base.Scheme != "http") || base.Host == "" {
		return nil, fmt.Errorf("scim: base URL %q: not an http(s) URL", opts.BaseURL)
	}
	if base.User != nil {
		return nil, errors.New("scim: base URL must not carry credentials")
	}
	c := &Client{opts: opts, base: base, log: opts.Log, redirectOK: map[string]bool{}}
	var errs []error
	for _, o := range opts.AllowedRedirectOrigins {
		n, err := ParseOrigin(o)
		if err != nil {
			errs = append(errs, fmt.Errorf("scim: allowed_redirect_origins: %w", err))
			continue
		}
		c.redirectOK[n] = true
	}
	parse := func(dst *Path, s, what string) {
		if s == "" {
			return
		}
		p, err := ParsePath(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("scim: %s: %w", what, err))
		}
		*dst = p
	}
	a := opts.Attrs
	parse(&c.paths.userName, a.UserName, "userName path")
	parse(&c.paths.uid, a.UID, "uid path")
	parse(&c.paths.gid, a.GID, "gid path")
	parse(&c.paths.gecos, a.GECOS, "gecos path")
	parse(&c.paths.home, a.Home, "home path")
	parse(&c.paths.shell, a.Shell, "shell path")
	parse(&c.paths.sshKeys, a.SSHKeys, "ssh keys path")
	parse(&c.paths.sshKeysAlt, a.SSHKeysAlt, "second ssh keys path")
	parse(&c.paths.active, a.Active, "active path")
	parse(&c.paths.quota, a.Quota, "home quota path")
	parse(&c.paths.groupQuota, a.GroupQuota, "project quota path")
	parse(&c.paths.groupName, a.GroupName, "group name path")
	parse(&c.paths.groupGID, a.GroupGID, "group gid path")
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if opts.HTTPClient != nil {
		hc := *opts.HTTPClient
		c.http = &hc
	} else {
		t, err := NewTransport(opts.CAFile)
		if err != nil {
			return nil, err
		}
		c.http = &http.Client{Transport: t}
	}
	c.http.CheckRedirect = c.checkRedirect
	c.http = c.chg.wrap(c.http)
	return c, nil
}

// Name is the base URL without credentials, query or fragment.
func (c *Client) Name() string {
	u := *c.base
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}

// Stats are counters for metrics and benchmarks.
type Stats struct{ Requests, Retries, Bytes int64 }

// Stats returns the client's counters since it was made.
func (c *Client) Stats() Stats {
	return Stats{c.stats.requests.Load(), c.stats.retries.Load(), c.stats.bytes.Load()}
}

// endpoint is base/segment with the given query.
func (c *Client) endpoint(segment string, q url.Values) string {
	u := *c.base
	u.Path = strings.TrimRight(u.Path, "/") + "/" + segment
	u.RawPath = ""
	u.RawQuery = q.Encode()
	return u.String()
}
