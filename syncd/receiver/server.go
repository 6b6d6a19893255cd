package receiver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	escim "github.com/elimity-com/scim"
	"github.com/elimity-com/scim/optional"
	eschema "github.com/elimity-com/scim/schema"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
)

func init() {
	// Entra ID sends booleans as strings ("active": "False"). The library
	// accepts them only with this switch (strconv.ParseBool: True, FALSE,
	// 1, 0, ...); anything else is still a 400.
	eschema.SetAllowStringValues(true)
}

// Client is one identity provider allowed to push: its name (in the audit
// log), the SHA-256 of its bearer token and its scope: the users and groups
// it may see and change are those created with the same scope (empty: the
// name). Rotation entries of one IdP share a scope.
type Client struct {
	Name   string
	SHA256 [32]byte
	Scope  string
}

// ServerOptions configure the HTTP side.
type ServerOptions struct {
	Clients   []Client
	RateLimit float64 // requests per second per client
	RateBurst int
	MaxBody   int64
	// SharedScope lets every client see and change every user and group
	// (the behaviour before scopes); rows still record their creator.
	SharedScope bool
	// BaseURL is the externally visible SCIM root (meta.location); empty:
	// relative locations.
	BaseURL string
	Log     logrus.FieldLogger
	// Registerer gets the request metrics (nil: none).
	Registerer prometheus.Registerer
}

// HashToken is how tokens are stored: hex SHA-256.
func HashToken(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

func posixUserSchema() eschema.Schema {
	num := func(n, desc string) eschema.CoreAttribute {
		return eschema.SimpleCoreAttribute(eschema.SimpleNumberParams(eschema.NumberParams{
			Name: n, Type: eschema.AttributeTypeInteger(), Description: optional.NewString(desc)}))
	}
	str := func(n string, multi bool, desc string) eschema.CoreAttribute {
		return eschema.SimpleCoreAttribute(eschema.SimpleStringParams(eschema.StringParams{
			Name: n, MultiValued: multi, CaseExact: true, Description: optional.NewString(desc)}))
	}
	return eschema.Schema{ID: PosixUserURN, Name: optional.NewString("PosixUser"),
		Description: optional.NewString("POSIX account attributes; allocated by the receiver when the identity provider sends none"),
		Attributes: []eschema.CoreAttribute{
			num("uidNumber", "user id; allocated from uid_min-uid_max on first sight, kept for the userName forever"),
			num("gidNumber", "primary group id; a private group per user unless receiver.primary_gid is set"),
			str("homeDirectory", false, "home directory (home_template wins when set)"),
			str("loginShell", false, "login shell (must be in allowed_shells)"),
			str("gecos", false, "full name"),
			str("sshPublicKeys", true, "OpenSSH public keys"),
		}}
}

func posixGroupSchema() eschema.Schema {
	return eschema.Schema{ID: PosixGroupURN, Name: optional.NewString("PosixGroup"),
		Description: optional.NewString("POSIX group attributes"),
		Attributes: []eschema.CoreAttribute{eschema.SimpleCoreAttribute(eschema.SimpleNumberParams(eschema.NumberParams{
			Name: "gidNumber", Type: eschema.AttributeTypeInteger(),
			Description: optional.NewString("group id; allocated from gid_min-gid_max on first sight")}))}}
}

// NewHandler is the SCIM service provider over s, with authentication,
// rate limits, body caps and the audit log around it. Mount it at the
// SCIM root (it answers /Users, /Groups, /ServiceProviderConfig, /Schemas,
// /ResourceTypes, with or without a /v2 prefix).
func NewHandler(s *Store, o ServerOptions) (*Gate, error) {
	core, group := eschema.CoreUserSchema(), eschema.CoreGroupSchema()
	ent, pu, pg := eschema.ExtensionEnterpriseUser(), posixUserSchema(), posixGroupSchema()
	userExts := []escim.SchemaExtension{{Schema: ent}, {Schema: pu}}
	groupExts := []escim.SchemaExtension{{Schema: pg}}
	// The configured SSH keys and quota attributes must be ones the
	// library accepts: an attribute or extension we do not serve yet is
	// added (e.g. CoreWeave's sunkSshKeys as a multi-valued string, a
	// site's homeQuota as a string such as "50G").
	addAttr := func(coreURN string, core *eschema.Schema, exts *[]escim.SchemaExtension, path string, attr func(name string) eschema.CoreAttribute, what string) {
		urn, name, ok := splitAttrPath(path)
		if !ok {
			return
		}
		if urn == coreURN || urn == "" {
			if _, found := core.Attributes.ContainsAttribute(name); !found {
				core.Attributes = append(core.Attributes, attr(name))
			}
			return
		}
		for i := range *exts {
			if e := &(*exts)[i].Schema; e.ID == urn {
				if _, found := e.Attributes.ContainsAttribute(name); !found {
					e.Attributes = append(e.Attributes, attr(name))
				}
				return
			}
		}
		*exts = append(*exts, escim.SchemaExtension{Schema: eschema.Schema{ID: urn,
			Description: optional.NewString("extension holding " + what),
			Attributes:  []eschema.CoreAttribute{attr(name)}}})
	}
	str := func(multi bool, desc string) func(string) eschema.CoreAttribute {
		return func(name string) eschema.CoreAttribute {
			return eschema.SimpleCoreAttribute(eschema.SimpleStringParams(eschema.StringParams{
				Name: name, MultiValued: multi, CaseExact: multi, Description: optional.NewString(desc)}))
		}
	}
	addAttr(CoreUserURN, &core, &userExts, s.opts.SSHKeysAttribute, str(true, "OpenSSH public keys"), "SSH keys (receiver.ssh_keys_attribute)")
	addAttr(CoreUserURN, &core, &userExts, s.opts.QuotaAttribute, str(false, "storage limit of the home, e.g. 50G"), "the home quota (receiver.home_quota_attribute)")
	addAttr(CoreGroupURN, &group, &groupExts, s.opts.ProjectQuotaAttribute, str(false, "storage limit of the team's project directory, e.g. 5T"), "the project quota (receiver.project_quota_attribute)")
	us := docSchemas{core: CoreUserURN, all: map[string]eschema.Schema{CoreUserURN: core}}
	for _, e := range userExts {
		us.all[e.Schema.ID] = e.Schema
	}
	gs := docSchemas{core: CoreGroupURN, all: map[string]eschema.Schema{CoreGroupURN: group}}
	for _, e := range groupExts {
		gs.all[e.Schema.ID] = e.Schema
	}
	args := &escim.ServerArgs{
		ServiceProviderConfig: &escim.ServiceProviderConfig{
			DocumentationURI: optional.NewString("https://github.com/scimbridge/scimbridge#push-from-an-identity-provider"),
			SupportFiltering: true, SupportPatch: true, MaxResults: 200,
			AuthenticationSchemes: []escim.AuthenticationScheme{{Type: escim.AuthenticationTypeOauthBearerToken,
				Name: "Bearer token", Description: "one token per identity provider (receiver.clients)", Primary: true}},
		},
		ResourceTypes: []escim.ResourceType{
			{ID: optional.NewString("User"), Name: "User", Endpoint: "/Users", Description: optional.NewString("User Account"),
				Schema: core, SchemaExtensions: userExts, Handler: &Users{s: s, sch: us}},
			{ID: optional.NewString("Group"), Name: "Group", Endpoint: "/Groups", Description: optional.NewString("Group"),
				Schema: group, SchemaExtensions: groupExts, Handler: &Groups{s: s, sch: gs}},
		},
	}
	var opts []escim.ServerOption
	if o.BaseURL != "" {
		opts = append(opts, escim.WithBaseURL(o.BaseURL))
	}
	srv, err := escim.NewServer(args, opts...)
	if err != nil {
		return nil, err
	}
	if o.Log == nil {
		l := logrus.New()
		l.SetOutput(io.Discard)
		o.Log = l
	}
	g := &Gate{next: srv, s: s, o: o, buckets: map[string]*bucket{}}
	for _, rt := range args.ResourceTypes {
		g.fast = append(g.fast, newFastType(rt))
	}
	g.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "scimbridge_receiver_requests_total", Help: "SCIM requests to the receiver by client, method and status code.",
	}, []string{"client", "method", "code"})
	g.latency = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "scimbridge_receiver_request_duration_seconds", Help: "Time to answer one SCIM request (writes include their fsync).",
		Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5},
	})
	if o.Registerer != nil {
		if err := o.Registerer.Register(g.requests); err != nil {
			return nil, err
		}
		if err := o.Registerer.Register(g.latency); err != nil {
			return nil, err
		}
	}
	g.audit = newAuditor(s, o.Log)
	return g, nil
}

// Gate authenticates, limits and audits every request.
type Gate struct {
	next    http.Handler
	s       *Store
	o       ServerOptions
	mu      sync.Mutex
	buckets map[string]*bucket
	audit   *auditor
	// fast: the resource types whose POST and PUT the gate answers
	// itself (post.go).
	fast []fastType

	requests *prometheus.CounterVec
	latency  prometheus.Histogram
}

type bucket struct {
	tokens float64
	last   time.Time
}

// allow takes one token from the client's bucket; when empty it says how
// long until one is back.
func (g *Gate) allow(client string) (bool, time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	b := g.buckets[client]
	t := time.Now()
	if b == nil {
		b = &bucket{tokens: float64(g.o.RateBurst), last: t}
		g.buckets[client] = b
	}
	b.tokens = math.Min(float64(g.o.RateBurst), b.tokens+t.Sub(b.last).Seconds()*g.o.RateLimit)
	b.last = t
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) / g.o.RateLimit * float64(time.Second))
}

// SetClients replaces the accepted tokens (SIGHUP: a rotation needs no
// restart).
func (g *Gate) SetClients(c []Client) {
	g.mu.Lock()
	g.o.Clients = c
	g.mu.Unlock()
}

// SetSharedScope turns receiver.shared_scope on or off (SIGHUP). A
// request reads it once, when it starts: a request in flight finishes
// under the setting it began with, the next one uses the new one. Nothing
// stored depends on it (rows always record their creator), so either
// direction is safe at any moment.
func (g *Gate) SetSharedScope(shared bool) {
	g.mu.Lock()
	g.o.SharedScope = shared
	g.mu.Unlock()
}

func (g *Gate) sharedScope() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.o.SharedScope
}

// client is the client whose token the request carries (Name "" when
// none), with its Scope defaulted to its name.
func (g *Gate) client(r *http.Request) Client {
	auth := r.Header.Get("Authorization")
	const p = "bearer "
	if len(auth) <= len(p) || !strings.EqualFold(auth[:len(p)], p) {
		return Client{}
	}
	h := sha256.Sum256([]byte(strings.TrimSpace(auth[len(p):])))
	var found Client
	g.mu.Lock()
	clients := g.o.Clients
	g.mu.Unlock()
	for _, c := range clients {
		if subtle.ConstantTimeCompare(h[:], c.SHA256[:]) == 1 {
			found = c
		}
	}
	if found.Scope == "" {
		found.Scope = found.Name
	}
	return found
}

type noteKey struct{}

// note records what a request acted on, for the audit log.
func note(r *http.Request, target string) { noteCtx(r.Context(), target) }

// noteCtx is note for code that has the request's context only.
func noteCtx(ctx context.Context, target string) {
	if p, ok := ctx.Value(noteKey{}).(*string); ok {
		*p = target
	}
}

type recorder struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (w *recorder) WriteHeader(s int) {
	if w.status == 0 {
		w.status = s
	}
	w.ResponseWriter.WriteHeader(s)
}

func (w *recorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if w.status >= 400 && w.body.Len() < 2048 {
		w.body.Write(b)
	}
	return w.ResponseWriter.Write(b)
}

func scimError(w http.ResponseWriter, status int, scimType, detail string) {
	w.Header().Set("Content-Type", "application/scim+json")
	w.WriteHeader(status)
	m := map[string]any{"schemas": []string{"urn:ietf:params:scim:api:messages:2.0:Error"}, "status": fmt.Sprint(status), "detail": detail}
	if scimType != "" {
		m["scimType"] = scimType
	}
	json.NewEncoder(w).Encode(m)
}

func (g *Gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	t0 := time.Now()
	rec := &recorder{ResponseWriter: w}
	cl := g.client(r)
	client := cl.Name
	var target string
	skipAudit := false
	defer func() {
		if skipAudit {
			g.requests.WithLabelValues("-", r.Method, strconv.Itoa(rec.status)).Inc()
			return
		}
		detail := ""
		if rec.status >= 400 {
			var e struct {
				Detail   string `json:"detail"`
				ScimType string `json:"scimType"`
			}
			if json.Unmarshal(rec.body.Bytes(), &e) == nil {
				detail = strings.TrimSpace(e.ScimType + " " + e.Detail)
			}
		}
		who := client
		if who == "" {
			who = "-"
		}
		g.requests.WithLabelValues(who, r.Method, strconv.Itoa(rec.status)).Inc()
		g.latency.Observe(time.Since(t0).Seconds())
		g.audit.add(auditRow{At: t0.UTC(), Client: who, Remote: r.RemoteAddr, Method: r.Method,
			Path: auditPath(r.URL), Status: rec.status, Target: target, Detail: detail})
		// The fields are built only when debug lines are written (a map
		// and a few strings per request otherwise thrown away).
		if debugEnabled(g.o.Log) {
			g.o.Log.WithFields(logrus.Fields{"client": who, "method": r.Method, "path": r.URL.Path, "status": rec.status,
				"took": time.Since(t0).String(), "target": target}).Debug("receiver: request")
		}
	}()
	if client == "" {
		// Unauthenticated requests share one bucket; beyond it they are
		// refused without an audit row, so a flood of bad tokens cannot
		// fill the disk with the audit log.
		if ok, wait := g.allow(""); !ok {
			skipAudit = true
			rec.Header().Set("Retry-After", fmt.Sprint(int(math.Ceil(wait.Seconds()))))
			scimError(rec, http.StatusTooManyRequests, "", "too many unauthenticated requests")
			return
		}
		rec.Header().Set("WWW-Authenticate", `Bearer realm="scimbridge"`)
		scimError(rec, http.StatusUnauthorized, "", "missing or unknown bearer token (receiver.clients holds the SHA-256 of each accepted token)")
		return
	}
	if ok, wait := g.allow(client); !ok {
		rec.Header().Set("Retry-After", fmt.Sprint(int(math.Ceil(wait.Seconds()))))
		scimError(rec, http.StatusTooManyRequests, "", fmt.Sprintf("client %s is over receiver.rate_limit (%g/s, burst %d)", client, g.o.RateLimit, g.o.RateBurst))
		return
	}
	var body []byte
	if r.Body != nil {
		var err error
		body, err = io.ReadAll(io.LimitReader(r.Body, g.o.MaxBody+1))
		r.Body.Close()
		if err != nil {
			scimError(rec, http.StatusBadRequest, "invalidSyntax", "reading the body: "+err.Error())
			return
		}
		if int64(len(body)) > g.o.MaxBody {
			scimError(rec, http.StatusRequestEntityTooLarge, "", fmt.Sprintf("body larger than receiver.max_body (%d bytes)", g.o.MaxBody))
			return
		}
		body = g.normalizeBody(r, body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
	}
	r = normalizeQuery(r)
	ctx := withScope(context.WithValue(r.Context(), noteKey{}, &target), cl.Scope, !g.sharedScope())
	r = r.WithContext(ctx)
	if !g.serveAmended(rec, r, body, client) && !g.serveWrite(rec, r, body) {
		g.next.ServeHTTP(rec, r)
	}
}

// debugEnabled says whether log writes debug lines (a logger that
// cannot say is asked to).
func debugEnabled(log logrus.FieldLogger) bool {
	if l, ok := log.(interface{ IsLevelEnabled(logrus.Level) bool }); ok {
		return l.IsLevelEnabled(logrus.DebugLevel)
	}
	return true
}

// auditRow is one request in the audit log. The token is never in it:
// only the client name it matched.
type auditRow struct {
	At                           time.Time
	Client, Remote, Method, Path string
	Status                       int
	Target, Detail               string
}

// auditor writes audit rows in batches (one transaction every 100 ms at
// most) so that reads do not each cost an fsync. A write's own change is
// durable before its response; its audit row follows within 100 ms.
type auditor struct {
	s    *Store
	log  logrus.FieldLogger
	mu   sync.Mutex
	rows []auditRow
	kick chan struct{}
	done chan struct{}
}

var (
	auditorsMu sync.Mutex
	auditors   []*auditor
)

func newAuditor(s *Store, log logrus.FieldLogger) *auditor {
	a := &auditor{s: s, log: log, kick: make(chan struct{}, 1), done: make(chan struct{})}
	go a.loop()
	auditorsMu.Lock()
	auditors = append(auditors, a)
	auditorsMu.Unlock()
	return a
}

// flushAll writes every pending audit row (at shutdown).
func flushAll() {
	auditorsMu.Lock()
	defer auditorsMu.Unlock()
	for _, a := range auditors {
		a.flush()
	}
}

func (a *auditor) add(r auditRow) {
	a.mu.Lock()
	a.rows = append(a.rows, r)
	a.mu.Unlock()
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

func (a *auditor) loop() {
	for range a.kick {
		time.Sleep(100 * time.Millisecond)
		a.flush()
	}
}

func (a *auditor) flush() {
	a.mu.Lock()
	rows := a.rows
	a.rows = nil
	a.mu.Unlock()
	if len(rows) == 0 {
		return
	}
	// A background write: the group commit waits for no one after it.
	err := a.s.write(context.WithValue(context.Background(), backgroundWrite{}, true), func(tx *sql.Tx) (bool, error) {
		for _, r := range rows {
			if _, err := tx.Exec(`INSERT INTO audit(at, client, remote, method, path, status, target, detail) VALUES(?,?,?,?,?,?,?,?)`,
				r.At.Format(time.RFC3339Nano), r.Client, r.Remote, r.Method, r.Path, r.Status, r.Target, r.Detail); err != nil {
				return false, err
			}
		}
		return false, nil
	})
	if err != nil {
		a.log.WithError(err).Error("receiver: cannot write the audit log")
	}
}

// Serve runs the handler on l until ctx ends, then drains and flushes
// the audit log. TLS when cert and key are set.
func Serve(ctx context.Context, l net.Listener, h http.Handler, certFile, keyFile string) error {
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 60 * time.Second,
		WriteTimeout: 120 * time.Second, IdleTimeout: 120 * time.Second, MaxHeaderBytes: 64 << 10}
	errc := make(chan error, 1)
	go func() {
		if certFile != "" {
			errc <- hs.ServeTLS(l, certFile, keyFile)
		} else {
			errc <- hs.Serve(l)
		}
	}()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := hs.Shutdown(sctx)
	flushAll()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// splitAttrPath splits "urn:...:Name:attr" into the URN and the attribute;
// a bare "attr" is a core attribute. Sub-attribute paths are not
// supported for keys.
func splitAttrPath(p string) (urn, name string, ok bool) {
	i := strings.LastIndexByte(p, ':')
	urn, name = p[:max(i, 0)], p[i+1:]
	return urn, name, name != "" && !strings.Contains(name, ".") && (i < 0 || i > 0)
}
