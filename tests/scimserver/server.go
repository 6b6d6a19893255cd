package scimserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Options configure a Server. The zero value is a usable server: POSIX
// flavour, index paging only, no authentication, base path /scim/v2.
type Options struct {
	Flavor Flavor // zero value: FlavorPOSIX
	// BasePath prefixes every SCIM endpoint; default "/scim/v2".
	BasePath string
	// Token, when set, is required as "Authorization: Bearer <Token>".
	Token string
	// BasicUser/BasicPassword, when set, are accepted as HTTP basic auth
	// (alone or besides Token).
	BasicUser, BasicPassword string
	// Cursor enables RFC 9865 cursor paging (advertised in
	// ServiceProviderConfig). Without it a "cursor" parameter is ignored
	// the way a pre-9865 server would ignore it.
	Cursor bool
	// CursorDefault makes cursor the defaultPaginationMethod: a request
	// with neither startIndex nor cursor is answered cursor-style.
	CursorDefault bool
	// CursorTimeout is how long an issued cursor stays valid; default 10m.
	CursorTimeout time.Duration
	// DefaultPageSize is used when a request has no count; default 100.
	DefaultPageSize int
	// MaxPageSize caps count; default 1000.
	MaxPageSize int
	// ReturnedRequest marks the POSIX extensions "returned": "request"
	// (Oracle IDCS style): absent from responses unless named in
	// attributes=.
	ReturnedRequest bool
	// UserGroups renders the User's read-only "groups" attribute (RFC 7643
	// section 4.1.2): the groups listing the user ("direct") and, through
	// nested groups, those listing them ("indirect").
	UserGroups bool
	// NoAdmin disables the /_admin/ API.
	NoAdmin bool
	// Faults are in effect from the start (see SetFaults).
	Faults Faults
	// Now is the clock for meta timestamps; default time.Now.
	Now func() time.Time
	// Logf, when set, receives one line per request.
	Logf func(format string, args ...any)
}

// ListHook is called before a list request (GET /Users, GET /Groups or
// .search) is answered, with the resource type ("User" or "Group") and
// the request's query. It runs outside the server's locks, so it may
// change the directory: tests use it to change records while a client
// is in the middle of a full read.
type ListHook func(resourceType string, query url.Values)

// SetListHook installs h (nil removes it).
func (s *Server) SetListHook(h ListHook) {
	s.fmu.Lock()
	defer s.fmu.Unlock()
	s.listHook = h
}

// Server is an in-memory SCIM 2.0 service provider. It is an http.Handler;
// all methods are safe for concurrent use.
type Server struct {
	opts   Options
	flavor Flavor
	base   string // base path, no trailing slash

	mu            sync.RWMutex
	users         map[string]*userRec
	groups        map[string]*groupRec
	seq           uint64 // insertion counter: the default listing order
	gen           uint64 // bumped by every change; invalidates rendered maps
	omu           sync.Mutex
	userOrder     []*userRec
	groupOrder    []*groupRec
	userOrderGen  uint64
	groupOrderGen uint64
	memberOf      map[string][]string // member id -> ids of groups listing it
	memberOfGen   uint64
	// initial is what Reset restores (the last Load or LoadFixture).
	initial *Directory

	fmu       sync.Mutex
	faults    Faults
	listCount int // list requests since SetFaults, for Faults.FailListRequest
	storm     int // requests still to answer 429/503

	listHook ListHook

	cursors cursorStore
	stats   counters
	idSeq   atomic.Uint64
}

type userRec struct {
	u     User
	seq   uint64
	cache atomic.Pointer[rendered]
	enc   encodedCache
}

type groupRec struct {
	g     Group
	seq   uint64
	cache atomic.Pointer[rendered]
	enc   encodedCache
}

type encodedCache = atomic.Pointer[encoded]

// rendered is a resource's full representation for one base URL and one
// state of the store.
type rendered struct {
	gen  uint64
	base string
	m    map[string]any
}

// New returns an empty server.
func New(opts Options) *Server {
	if opts.Flavor.UserURN == "" {
		opts.Flavor = FlavorPOSIX
	}
	if opts.BasePath == "" {
		opts.BasePath = "/scim/v2"
	}
	if opts.CursorTimeout <= 0 {
		opts.CursorTimeout = 10 * time.Minute
	}
	if opts.DefaultPageSize <= 0 {
		opts.DefaultPageSize = 100
	}
	if opts.MaxPageSize <= 0 {
		opts.MaxPageSize = 1000
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Server{
		opts:   opts,
		flavor: opts.Flavor,
		base:   "/" + strings.Trim(opts.BasePath, "/"),
		users:  map[string]*userRec{},
		groups: map[string]*groupRec{},
	}
	s.cursors.init()
	s.SetFaults(opts.Faults)
	return s
}

// Flavor returns the extension flavour the server serves.
func (s *Server) Flavor() Flavor { return s.flavor }

// BasePath returns the path prefix of the SCIM endpoints, e.g. "/scim/v2".
func (s *Server) BasePath() string { return s.base }

// Start serves on a fresh 127.0.0.1 port. It returns the SCIM base URL
// (e.g. "http://127.0.0.1:43123/scim/v2") and a function that stops the
// listener and waits for it.
func (s *Server) Start() (baseURL string, stop func()) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic("scimserver: listen on 127.0.0.1:0: " + err.Error())
	}
	url, stop := s.Serve(ln, nil)
	return url, stop
}

// StartTLS is Start over HTTPS with the PEM certificate and key (for
// example testdata/tls/server.pem and server.key, signed by
// testdata/tls/ca.pem for 127.0.0.1, ::1 and localhost).
func (s *Server) StartTLS(certFile, keyFile string) (baseURL string, stop func(), err error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return "", nil, fmt.Errorf("load TLS certificate %s / key %s: %w", certFile, keyFile, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("listen on 127.0.0.1:0: %w", err)
	}
	url, stop := s.Serve(ln, &http.Server{TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}})
	return url, stop, nil
}

// Serve serves on ln (with TLS when srv has a TLSConfig) until stop is
// called. It returns the base URL.
func (s *Server) Serve(ln net.Listener, hs *http.Server) (baseURL string, stop func()) {
	if hs == nil {
		hs = &http.Server{}
	}
	hs.Handler = s
	if hs.ReadHeaderTimeout == 0 {
		hs.ReadHeaderTimeout = 10 * time.Second
	}
	scheme := "http"
	if hs.TLSConfig != nil {
		scheme = "https"
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var err error
		if hs.TLSConfig != nil {
			err = hs.ServeTLS(ln, "", "")
		} else {
			err = hs.Serve(ln)
		}
		if err != nil && !errors.Is(err, http.ErrServerClosed) && s.opts.Logf != nil {
			s.opts.Logf("scimserver: serve %s: %v", ln.Addr(), err)
		}
	}()
	stop = sync.OnceFunc(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if hs.Shutdown(ctx) != nil {
			hs.Close()
		}
		<-done
	})
	return scheme + "://" + ln.Addr().String() + s.base, stop
}

// ServeHTTP routes SCIM, discovery and admin requests.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/_admin/") {
		if s.opts.NoAdmin {
			http.NotFound(w, r)
			return
		}
		s.serveAdmin(w, r)
		return
	}
	rw := &recorder{ResponseWriter: w, status: http.StatusOK}
	start := time.Now()
	s.serveSCIM(rw, r)
	s.stats.record(r, rw.status, rw.fault)
	if s.opts.Logf != nil {
		s.opts.Logf("scimserver: %s %s -> %d %s (%v)", r.Method, r.URL.RequestURI(), rw.status, rw.fault, time.Since(start).Round(time.Millisecond))
	}
}

func (s *Server) serveSCIM(w *recorder, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, s.base)
	if !ok || (rest != "" && rest[0] != '/') {
		writeError(w, http.StatusNotFound, "", "no SCIM endpoint at "+r.URL.Path+" (base path is "+s.base+")")
		return
	}
	if s.hostileFaults(w, r) {
		return
	}
	if !s.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="scim"`)
		writeError(w, http.StatusUnauthorized, "", "authorization failure: missing or wrong credentials")
		return
	}
	if s.preFaults(w, r) {
		return
	}
	rest = strings.TrimSuffix(rest, "/")
	seg := strings.Split(strings.TrimPrefix(rest, "/"), "/")
	search := r.Method == http.MethodPost && len(seg) == 2 && seg[1] == ".search"
	if r.Method != http.MethodGet && r.Method != http.MethodHead && !search {
		writeError(w, http.StatusNotImplemented, "", "this service provider is read-only: "+r.Method+" "+r.URL.Path+" is not supported")
		return
	}
	switch {
	case len(seg) == 1 && seg[0] == "ServiceProviderConfig":
		s.serveConfig(w, r)
	case seg[0] == "Schemas" && len(seg) <= 2:
		s.serveSchemas(w, r, seg[1:])
	case seg[0] == "ResourceTypes" && len(seg) <= 2:
		s.serveResourceTypes(w, r, seg[1:])
	case seg[0] == "Users" || seg[0] == "Groups":
		rs := s.userSchema()
		if seg[0] == "Groups" {
			rs = s.groupSchema()
		}
		switch {
		case len(seg) == 1 || search:
			s.fmu.Lock()
			h := s.listHook
			s.fmu.Unlock()
			if h != nil {
				h(rs.name, r.URL.Query())
			}
			s.serveList(w, r, rs, search)
		case len(seg) == 2:
			s.serveGet(w, r, rs, seg[1])
		default:
			writeError(w, http.StatusNotFound, "", "no SCIM endpoint at "+r.URL.Path)
		}
	default:
		writeError(w, http.StatusNotFound, "", "no SCIM endpoint at "+r.URL.Path)
	}
}

// baseURL is the absolute base URL as the client addressed the server,
// for meta.location and $ref.
func (s *Server) baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + s.base
}

func (s *Server) returned() string {
	if s.opts.ReturnedRequest || s.currentFaults().ExtensionRequestOnly {
		return returnedRequest
	}
	return returnedDefault
}

func (s *Server) userSchema() *resourceSchema {
	return newResourceSchema(resourceTypeUser, "/Users", userSchema(), userExtSchema(s.flavor, s.returned()))
}

func (s *Server) groupSchema() *resourceSchema {
	return newResourceSchema(resourceTypeGroup, "/Groups", groupSchema(), groupExtSchema(s.flavor, s.returned()))
}

// recorder remembers the status and any fault for counters and logs.
type recorder struct {
	http.ResponseWriter
	status int
	fault  string
}

func (r *recorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}
