package main

// Head and nodes: the head publishes ([publish], syncd/publish), nodes
// mirror ([mirror], syncd/mirror). This file only wires commands.

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/homes"
	"github.com/scimbridge/scimbridge/syncd/metrics"
	"github.com/scimbridge/scimbridge/syncd/mirror"
	"github.com/scimbridge/scimbridge/syncd/pipeline"
	"github.com/scimbridge/scimbridge/syncd/publish"
	"github.com/scimbridge/scimbridge/syncd/snapshot"
)

func init() {
	commands["keygen"] = command{
		Summary: "keygen --out FILE: an ed25519 key pair for [publish] (FILE, root-only) and nodes (FILE.pub)",
		Run:     runKeygen,
	}
	commands["publish"] = command{
		Summary: "publish --once: publish the live snapshot into [publish] dir now (the daemon does it after every poll)",
		Run:     runPublish,
	}
	commands["mirror"] = command{
		Summary: "mirror --once: one poll of the head on a node ([mirror]); exit 3 if refused",
		Run:     runMirrorOnce,
	}
	commands["serve"] = command{
		Summary: "serve [--dir D] [--listen ADDR]: serve the publish directory over HTTP (ETag, bounded concurrency)",
		Run:     runServe,
	}
}

func runKeygen(ctx context.Context, cfgPath string, args []string) error {
	fs := flags("keygen", &cfgPath)
	out := fs.String("out", "", "private key file to create (the public key goes to FILE.pub)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *out == "" {
		return usageError{"--out FILE is required"}
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	pk, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return err
	}
	pp, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return err
	}
	// O_EXCL: never overwrite a key the nodes already trust.
	f, err := os.OpenFile(*out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if err := pem.Encode(f, &pem.Block{Type: "PRIVATE KEY", Bytes: pk}); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	pubPath := *out + ".pub"
	if err := os.WriteFile(pubPath, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pp}), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stdout, "private key %s (keep it on the head, root-only)\npublic key  %s (copy to every node: [mirror] public_key_file)\nkey id      %s\n",
		*out, pubPath, publish.KeyID(pub))
	return nil
}

// head is the publishing state of `syncd run` on a head.
var head struct {
	mu        sync.Mutex
	pub       *publish.Publisher
	key       string // config values the publisher was built from
	collector *publishMetrics
}

type publishMetrics struct {
	serial   prometheus.Gauge
	contact  prometheus.Gauge
	failures prometheus.Counter
	bytes    prometheus.Counter
}

func newPublishMetrics(m *metrics.Metrics) *publishMetrics {
	p := &publishMetrics{
		serial: prometheus.NewGauge(prometheus.GaugeOpts{Name: "scimbridge_published_serial",
			Help: "Serial of the snapshot the head's manifest names."}),
		contact: prometheus.NewGauge(prometheus.GaugeOpts{Name: "scimbridge_published_source_contact_timestamp_seconds",
			Help: "source_contact in the head's last signed manifest."}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{Name: "scimbridge_publish_failures_total",
			Help: "Publishes that failed (the previous manifest stays)."}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{Name: "scimbridge_published_bytes_total",
			Help: "Bytes written into the publish directory."}),
	}
	m.Registry.MustRegister(p.serial, p.contact, p.failures, p.bytes)
	return p
}

// publisher returns the head's publisher for cfg (rebuilt when [publish]
// changed), or nil without a [publish] table.
func publisher(cfg *config.Config) (*publish.Publisher, error) {
	if !cfg.HasPublish() {
		return nil, nil
	}
	p := cfg.Publish
	key := fmt.Sprint(p.Dir, p.KeyFile, p.Compress, p.Keep, p.Deltas, p.S3, cfg.PollInterval)
	if head.pub != nil && head.key == key {
		return head.pub, nil
	}
	sk, err := config.LoadPrivateKey(p.KeyFile)
	if err != nil {
		return nil, err
	}
	pb := &publish.Publisher{Dir: p.Dir, Key: sk, Compress: p.Compress, Keep: p.Keep, Deltas: p.Deltas, Interval: cfg.PollInterval}
	if p.Bucket != "" {
		up, err := publish.NewS3Uploader(p.S3)
		if err != nil {
			return nil, err
		}
		pb.Upload = up
	}
	head.pub, head.key = pb, key
	return pb, nil
}

// sourceContact is the head's last successful contact with the source:
// the live snapshot's mtime (the freshness contract, snapshot.Touch).
func sourceContact(cfg *config.Config) time.Time {
	t, err := snapshot.Freshness(cfg.CachePath)
	if err != nil {
		return time.Time{}
	}
	return t
}

// publishAfterPoll publishes the live snapshot after a poll of the head,
// with the live file's mtime (the last successful contact) as source_contact: a new snapshot
// gets a new file and manifest, a quiet poll a re-signed manifest. A
// failure is logged and counted; the last manifest stays, and so do the
// nodes.
func publishAfterPoll(ctx context.Context, cfg *config.Config, log logrus.FieldLogger, m *metrics.Metrics) {
	if !cfg.HasPublish() || ctx.Err() != nil {
		return
	}
	head.mu.Lock()
	defer head.mu.Unlock()
	if m != nil && head.collector == nil {
		head.collector = newPublishMetrics(m)
	}
	pm := head.collector
	fail := func(err error) {
		log.WithError(err).Error("publish: the published snapshot stays as it was")
		if pm != nil {
			pm.failures.Inc()
		}
	}
	if _, err := os.Stat(cfg.CachePath); err != nil {
		return // nothing committed yet
	}
	pb, err := publisher(cfg)
	if err != nil {
		fail(err)
		return
	}
	res, err := pb.Publish(ctx, cfg.CachePath, sourceContact(cfg))
	if err != nil {
		fail(err)
		return
	}
	if pm != nil {
		pm.serial.Set(float64(res.Manifest.Serial))
		pm.contact.Set(float64(res.Manifest.SourceContact.Unix()))
		pm.bytes.Add(float64(res.Bytes))
	}
	switch {
	case res.NewObject:
		log.WithFields(logrus.Fields{"serial": res.Manifest.Serial, "object": res.Manifest.Object,
			"bytes": res.Manifest.ObjectSize, "compression": res.Manifest.Compression}).Info("publish: published snapshot")
	case res.Resigned:
		log.WithField("source_contact", res.Manifest.SourceContact.Format(time.RFC3339)).Debug("publish: manifest re-signed")
	}
}

// startHead starts what a publishing head runs beside its polls: the
// built-in web server when [publish] listen is set.
func startHead(ctx context.Context, cfg *config.Config, log logrus.FieldLogger) {
	if !cfg.HasPublish() || cfg.Publish.Listen == "" {
		return
	}
	p := cfg.Publish
	s := &publish.Server{Dir: p.Dir, MaxConnections: p.MaxConnections}
	// A first start has no publish directory until the first publish
	// makes it: made here as the publisher makes it (0755), or the web
	// server would stop for good on its missing directory while the
	// publisher fills it. An existing one is left as it is (and checked).
	if err := os.MkdirAll(p.Dir, 0o755); err != nil {
		log.WithError(err).Error("publish: cannot create the publish directory; the web server is not started")
		return
	}
	go func() {
		err := s.ListenAndServe(ctx, p.Listen, p.TLSCertFile, p.TLSKeyFile, func(a net.Addr) {
			log.WithField("listen", a.String()).Info("publish: serving the publish directory")
		})
		if err != nil {
			log.WithError(err).Error("publish: web server stopped")
		}
	}()
}

func runPublish(ctx context.Context, cfgPath string, args []string) error {
	fs := flags("publish", &cfgPath)
	once := fs.Bool("once", false, "publish once and exit (required)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if !*once {
		return usageError{"--once is required (syncd run publishes after every poll)"}
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		return err
	}
	if !cfg.HasPublish() {
		return fmt.Errorf("%s has no [publish] table", cfgPath)
	}
	pb, err := publisher(cfg)
	if err != nil {
		return err
	}
	res, err := pb.Publish(ctx, cfg.CachePath, sourceContact(cfg))
	if err != nil {
		return err
	}
	m := res.Manifest
	fmt.Fprintf(os.Stdout, "serial %d: %s (%d bytes, %s), source_contact %s\n", m.Serial, m.Object, m.ObjectSize,
		m.Compression, m.SourceContact.Format(time.RFC3339))
	return nil
}

func runServe(ctx context.Context, cfgPath string, args []string) error {
	fs := flags("serve", &cfgPath)
	dir := fs.String("dir", "", "publish directory (default: [publish] dir)")
	listen := fs.String("listen", "", "address (default: [publish] listen, else "+publish.DefaultListen+")")
	maxConn := fs.Int("max-connections", 0, "requests served at once (default: [publish] max_connections, else 64)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cert, key := "", ""
	if *dir == "" || *listen == "" || *maxConn == 0 {
		cfg, err := config.Load(cfgPath)
		if err != nil {
			return err
		}
		if !cfg.HasPublish() {
			return fmt.Errorf("%s has no [publish] table; give --dir", cfgPath)
		}
		if *dir == "" {
			*dir = cfg.Publish.Dir
		}
		if *listen == "" {
			*listen = cfg.Publish.Listen
		}
		if *maxConn == 0 {
			*maxConn = cfg.Publish.MaxConnections
		}
		cert, key = cfg.Publish.TLSCertFile, cfg.Publish.TLSKeyFile
	}
	if *listen == "" {
		*listen = publish.DefaultListen
	}
	if fi, err := os.Stat(*dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("publish directory %s: not a directory (%v)", *dir, err)
	}
	s := &publish.Server{Dir: *dir, MaxConnections: *maxConn}
	return s.ListenAndServe(ctx, *listen, cert, key, func(a net.Addr) {
		// The first line on stdout is the URL, for scripts and tests.
		scheme := "http"
		if cert != "" {
			scheme = "https"
		}
		fmt.Fprintf(os.Stdout, "%s://%s/\n", scheme, a.String())
	})
}

// newNode builds a mirror node from a [mirror] config.
func newNode(cfg *config.Config, log logrus.FieldLogger) (*mirror.Node, error) {
	t, more, err := mirror.NewAll(cfg.Mirror)
	if err != nil {
		return nil, err
	}
	keys, err := config.LoadPublicKeys(cfg.Mirror.PublicKeyFile)
	if err != nil {
		return nil, err
	}
	pub := keys[0]
	return &mirror.Node{MoreKeys: keys[1:], T: t, Fallback: more, FailoverAfter: cfg.Mirror.FailoverAfter, StaleAfter: cfg.Mirror.StaleAfter, Key: pub, Live: cfg.CachePath, StatusPath: cfg.StatusPath,
		MaxSize: cfg.Mirror.MaxSize, Version: version, Log: log}, nil
}

func loadMirrorConfig(cfgPath string) (*config.Config, error) {
	cfg, err := config.Load(cfgPath)
	if err != nil {
		return nil, err
	}
	if !cfg.IsMirror() {
		return nil, fmt.Errorf("%s has no [mirror] table: this is not a mirror node's config", cfgPath)
	}
	return cfg, nil
}

func runMirrorOnce(ctx context.Context, cfgPath string, args []string) error {
	fs := flags("mirror", &cfgPath)
	once := fs.Bool("once", false, "poll once and exit (required: the loop is 'syncd run')")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if !*once {
		return usageError{"--once is required (the polling loop is `syncd run`)"}
	}
	cfg, err := loadMirrorConfig(cfgPath)
	if err != nil {
		return err
	}
	n, err := newNode(cfg, newLogger(cfg, os.Stderr))
	if err != nil {
		return err
	}
	pctx, cancel := context.WithTimeout(ctx, cfg.Mirror.Timeout)
	defer cancel()
	r := n.Poll(pctx)
	if r.Err != nil {
		var ref *mirror.Refusal
		if errors.As(r.Err, &ref) {
			return exitError{3, r.Err}
		}
		return r.Err
	}
	fmt.Fprintf(os.Stdout, "%s: serial %d, %d users, %d groups\n", r.Outcome, r.Meta.Serial, r.Meta.Users, r.Meta.Groups)
	return nil
}

// runMirrorDaemon is `syncd run` on a node: poll the head every interval
// ± jitter. SIGHUP re-reads the config (a broken one is logged and the
// old one kept).
func runMirrorDaemon(ctx context.Context, cfgPath string, cfg *config.Config) error {
	log := newLogger(cfg, os.Stderr)
	n, err := newNode(cfg, log)
	if err != nil {
		return err
	}
	m := metrics.New()
	contact := prometheus.NewGauge(prometheus.GaugeOpts{Name: "scimbridge_mirror_source_contact_timestamp_seconds",
		Help: "source_contact of the last manifest this node accepted (the head's last contact with the source)."})
	fetched := prometheus.NewCounter(prometheus.CounterOpts{Name: "scimbridge_mirror_fetched_bytes_total",
		Help: "Bytes this node fetched from the head (manifests and snapshots)."})
	// The signature age is computed at each scrape: a node whose polls
	// hang or whose loop stopped ages all the same.
	var sigMu sync.Mutex
	var sigSeen time.Time
	var sigBound time.Duration
	sigAge := func() float64 {
		sigMu.Lock()
		defer sigMu.Unlock()
		if sigSeen.IsZero() {
			return -1
		}
		return time.Since(sigSeen).Seconds()
	}
	localConflicts := prometheus.NewGauge(prometheus.GaugeOpts{Name: "scimbridge_mirror_local_conflicts",
		Help: "SCIM users of the live snapshot that this node's own /etc/passwd or /etc/group claims (syncd status names them)."})
	m.Registry.MustRegister(contact, fetched, localConflicts,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "scimbridge_mirror_signature_age_seconds",
			Help: "Seconds since this node first verified the newest signature from its head (-1: none yet). A healthy head signs every poll_interval."}, sigAge),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "scimbridge_mirror_stale_after_seconds",
			Help: "The bound past which the node is stale (stale_after, else derived from the head's poll interval)."},
			func() float64 { sigMu.Lock(); defer sigMu.Unlock(); return sigBound.Seconds() }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "scimbridge_mirror_stale",
			Help: "1 when the newest signature from the head is older than stale_after (syncd status exits 1), else 0."},
			func() float64 {
				age := sigAge()
				sigMu.Lock()
				defer sigMu.Unlock()
				if age > sigBound.Seconds() && sigBound > 0 {
					return 1
				}
				return 0
			}))
	onResult := func(r *mirror.Result) {
		m.Syncs.WithLabelValues(r.Outcome).Inc()
		fetched.Add(float64(r.Bytes))
		localConflicts.Set(float64(len(r.LocalConflicts)))
		if !r.SignatureSeen.IsZero() {
			sigMu.Lock()
			sigSeen, sigBound = r.SignatureSeen, r.StaleAfter
			sigMu.Unlock()
		}
		if r.Err != nil {
			m.Failures.Inc()
			return
		}
		m.LastSuccess.SetToCurrentTime()
		contact.Set(float64(r.Manifest.SourceContact.Unix()))
		if r.Meta.Serial > 0 {
			m.SnapshotSerial.Set(float64(r.Meta.Serial))
			m.Users.Set(float64(r.Meta.Users))
			m.Groups.Set(float64(r.Meta.Groups))
		}
		if !r.Meta.CreatedAt.IsZero() {
			m.SnapshotTime.Set(float64(r.Meta.CreatedAt.Unix()))
		}
	}
	n.OnResult = onResult
	if cfg.MetricsListen != "" {
		mctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() {
			if err := m.Serve(mctx, cfg.MetricsListen); err != nil {
				log.WithError(err).Error("syncd: metrics server stopped")
			}
		}()
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	log.WithFields(logrus.Fields{"version": version, "from": n.T.Name(), "cache": cfg.CachePath,
		"interval": cfg.Mirror.Interval.String()}).Info("syncd: mirror node started")
	go homes.Loop(ctx, cfgPath, cfg, log) // a storage node's homes pass (syncd/homes)
	for {
		pctx, cancel := context.WithTimeout(ctx, cfg.Mirror.Timeout)
		n.Poll(pctx)
		cancel()
		t := time.NewTimer(pipeline.Jitter(cfg.Mirror.Interval, cfg.Mirror.Jitter))
		select {
		case <-ctx.Done():
			t.Stop()
			log.Info("syncd: stopping")
			return nil
		case <-hup:
			t.Stop()
			c2, err := loadMirrorConfig(cfgPath)
			if err == nil {
				var n2 *mirror.Node
				if n2, err = newNode(c2, log); err == nil {
					n2.OnResult = onResult
					cfg, n = c2, n2
					log.Info("syncd: configuration reloaded")
				}
			}
			if err != nil {
				log.WithError(err).Error("syncd: SIGHUP: new configuration rejected; keeping the old one")
			}
		case <-t.C:
		}
	}
}

// publishedManifest is the manifest a head with [publish] serves now, as
// it wrote it (its own file: not re-verified here); nil elsewhere.
func publishedManifest(cfg *config.Config) *publish.Manifest {
	if cfg == nil || !cfg.HasPublish() {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(cfg.Publish.Dir, publish.ManifestName))
	if err != nil {
		return nil
	}
	var env struct {
		Payload string `json:"payload"`
	}
	if json.Unmarshal(b, &env) != nil {
		return nil
	}
	raw, err := base64.StdEncoding.DecodeString(env.Payload)
	if err != nil {
		return nil
	}
	var m publish.Manifest
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return &m
}

// printPublished adds the head's published snapshot to `syncd status`.
func printPublished(w io.Writer, cfg *config.Config, now time.Time) {
	if cfg == nil || !cfg.HasPublish() {
		return
	}
	m := publishedManifest(cfg)
	if m == nil {
		fmt.Fprintf(w, "published:      nothing in %s yet\n", cfg.Publish.Dir)
		return
	}
	fmt.Fprintf(w, "published:      serial %d in %s (%d bytes, %s, %d delta(s)); source_contact %s (%s ago)\n",
		m.Serial, cfg.Publish.Dir, m.ObjectSize, m.Compression, len(m.Deltas),
		m.SourceContact.Local().Format(time.RFC3339), now.Sub(m.SourceContact).Round(time.Second))
}

// checkMirrorOnline is `check-config --online` on a node: the head's
// manifest is reachable and signed by the configured key.
func checkMirrorOnline(ctx context.Context, cfg *config.Config) error {
	first, more, err := mirror.NewAll(cfg.Mirror)
	if err != nil {
		return err
	}
	keys, err := config.LoadPublicKeys(cfg.Mirror.PublicKeyFile)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// Every source is checked; one good source is enough to pass (the
	// others are failovers), but each failing one is named.
	var errs []string
	for _, t := range append([]mirror.Transport{first}, more...) {
		var b bytes.Buffer
		if _, err := t.Fetch(ctx, publish.ManifestName, publish.MaxManifestSize, &b); err != nil {
			errs = append(errs, fmt.Sprintf("fetch %s from %s: %v", publish.ManifestName, t.Name(), err))
			continue
		}
		m, err := publish.OpenAny(b.Bytes(), keys)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s from %s: %v", publish.ManifestName, t.Name(), err))
			continue
		}
		fmt.Fprintf(os.Stdout, "head %s: serial %d, %d users, %d groups, %d associations, source_contact %s, key %s\n",
			t.Name(), m.Serial, m.Users, m.Groups, m.Associations, m.SourceContact.Format(time.RFC3339), publish.KeyID(keys[0]))
	}
	if len(errs) == 1+len(more) {
		return errors.New(strings.Join(errs, "; "))
	}
	for _, e := range errs {
		fmt.Fprintf(os.Stdout, "warning: %s\n", e)
	}
	return nil
}
