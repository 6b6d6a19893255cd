package publish

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/metrics"
	"github.com/scimbridge/scimbridge/syncd/snapshot"
)

// The publishing head, from the syncd config: what `syncd run` (poll or
// push), `sync --once`, `publish --once`, `keygen` and `status` do with
// [publish]. Package main only calls these (issue 18, item 6).
//
// Decisions (kept in this file rather than doc.go, which other work on
// the publisher's internals edits):
//
//   - One Publisher per process, rebuilt only when [publish] or the poll
//     interval changes (ForConfig), under one lock with its metrics, so a
//     poll's publish and a push's never interleave.
//   - AfterPoll never fails the poll: a failed publish is logged and
//     counted (scimbridge_publish_failures_total); the last manifest
//     stays, and so do the nodes.
//   - StartHead makes a missing publish directory before serving it (as
//     the publisher would, 0755): a fresh head's web server used to stop
//     for good on the missing directory while the publisher filled it.
//   - WriteKeyPair opens the private key O_EXCL: never over a key the
//     nodes already trust.

// head is the publishing state of this process.
var head struct {
	mu        sync.Mutex
	pub       *Publisher
	key       string // config values the publisher was built from
	collector *headMetrics
}

type headMetrics struct {
	serial   prometheus.Gauge
	contact  prometheus.Gauge
	failures prometheus.Counter
	bytes    prometheus.Counter
}

func newHeadMetrics(m *metrics.Metrics) *headMetrics {
	p := &headMetrics{
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

// ForConfig returns this process's publisher for cfg (rebuilt when
// [publish] changed), or nil without a [publish] table.
func ForConfig(cfg *config.Config) (*Publisher, error) {
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
	pb := &Publisher{Dir: p.Dir, Key: sk, Compress: p.Compress, Keep: p.Keep, Deltas: p.Deltas, Interval: cfg.PollInterval}
	if p.Bucket != "" {
		up, err := NewS3Uploader(p.S3)
		if err != nil {
			return nil, err
		}
		pb.Upload = up
	}
	head.pub, head.key = pb, key
	return pb, nil
}

// SourceContact is the head's last successful contact with the source:
// the live snapshot's mtime (the freshness contract, snapshot.Touch).
func SourceContact(cfg *config.Config) time.Time {
	t, err := snapshot.Freshness(cfg.CachePath)
	if err != nil {
		return time.Time{}
	}
	return t
}

// AfterPoll publishes the live snapshot after a poll of the head, with
// the live file's mtime (the last successful contact) as source_contact:
// a new snapshot gets a new file and manifest, a quiet poll a re-signed
// manifest. A failure is logged and counted (in m, when not nil); the
// last manifest stays, and so do the nodes.
func AfterPoll(ctx context.Context, cfg *config.Config, log logrus.FieldLogger, m *metrics.Metrics) {
	if !cfg.HasPublish() || ctx.Err() != nil {
		return
	}
	head.mu.Lock()
	defer head.mu.Unlock()
	if m != nil && head.collector == nil {
		head.collector = newHeadMetrics(m)
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
	pb, err := ForConfig(cfg)
	if err != nil {
		fail(err)
		return
	}
	res, err := pb.Publish(ctx, cfg.CachePath, SourceContact(cfg))
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

// StartHead starts what a publishing head runs beside its polls: the
// built-in web server when [publish] listen is set, until ctx ends.
func StartHead(ctx context.Context, cfg *config.Config, log logrus.FieldLogger) {
	if !cfg.HasPublish() || cfg.Publish.Listen == "" {
		return
	}
	p := cfg.Publish
	s := &Server{Dir: p.Dir, MaxConnections: p.MaxConnections}
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

// Published is the manifest a head with [publish] serves now, as it
// wrote it (its own file: not re-verified here); nil elsewhere.
func Published(cfg *config.Config) *Manifest {
	if cfg == nil || !cfg.HasPublish() {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(cfg.Publish.Dir, ManifestName))
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
	var m Manifest
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return &m
}

// PrintPublished adds the head's published snapshot to `syncd status`.
func PrintPublished(w io.Writer, cfg *config.Config, now time.Time) {
	if cfg == nil || !cfg.HasPublish() {
		return
	}
	m := Published(cfg)
	if m == nil {
		fmt.Fprintf(w, "published:      nothing in %s yet\n", cfg.Publish.Dir)
		return
	}
	fmt.Fprintf(w, "published:      serial %d in %s (%d bytes, %s, %d delta(s)); source_contact %s (%s ago)\n",
		m.Serial, cfg.Publish.Dir, m.ObjectSize, m.Compression, len(m.Deltas),
		m.SourceContact.Local().Format(time.RFC3339), now.Sub(m.SourceContact).Round(time.Second))
}

// WriteKeyPair makes an ed25519 key pair for [publish]: the private key
// in out (PKCS#8 PEM, 0600, never over an existing file: the nodes may
// already trust it) and the public key in out.pub (PKIX PEM, 0644). It
// returns the public key's path and its key id.
func WriteKeyPair(out string) (pubPath, id string, err error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", "", err
	}
	pk, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return "", "", err
	}
	pp, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", "", err
	}
	// O_EXCL: never overwrite a key the nodes already trust.
	f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", "", err
	}
	if err := pem.Encode(f, &pem.Block{Type: "PRIVATE KEY", Bytes: pk}); err != nil {
		f.Close()
		return "", "", err
	}
	if err := f.Close(); err != nil {
		return "", "", err
	}
	pubPath = out + ".pub"
	if err := os.WriteFile(pubPath, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pp}), 0o644); err != nil {
		return "", "", err
	}
	return pubPath, KeyID(pub), nil
}
