package main

// Head and nodes: the head publishes ([publish], syncd/publish), nodes
// mirror ([mirror], syncd/mirror). This file only wires commands.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
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
	pubPath, id, err := publish.WriteKeyPair(*out)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stdout, "private key %s (keep it on the head, root-only)\npublic key  %s (copy to every node: [mirror] public_key_file)\nkey id      %s\n",
		*out, pubPath, id)
	return nil
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
	pb, err := publish.ForConfig(cfg)
	if err != nil {
		return err
	}
	res, err := pb.Publish(ctx, cfg.CachePath, publish.SourceContact(cfg))
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
