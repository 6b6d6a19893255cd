package mirror

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/metrics"
	"github.com/scimbridge/scimbridge/syncd/pipeline"
	"github.com/scimbridge/scimbridge/syncd/publish"
	"github.com/scimbridge/scimbridge/syncd/schedule"
)

// A node's `syncd run`, `mirror --once` and `check-config --online`, from
// the syncd config: package main only parses flags and calls these.

// FromConfig builds a mirror node from a [mirror] config; version is
// syncd's (it goes into the status file).
func FromConfig(cfg *config.Config, version string, log logrus.FieldLogger) (*Node, error) {
	t, more, err := NewAll(cfg.Mirror)
	if err != nil {
		return nil, err
	}
	keys, err := config.LoadPublicKeys(cfg.Mirror.PublicKeyFile)
	if err != nil {
		return nil, err
	}
	pub := keys[0]
	// The node's history (history_keep, history_max_mb): its installs
	// keep it (snapshot.Install); before, a node ignored both and
	// always kept 10 within 256 MB.
	pipeline.ApplyHistory(cfg)
	return &Node{MoreKeys: keys[1:], T: t, Fallback: more, FailoverAfter: cfg.Mirror.FailoverAfter, StaleAfter: cfg.Mirror.StaleAfter, Key: pub, Live: cfg.CachePath, StatusPath: cfg.StatusPath,
		MaxSize: cfg.Mirror.MaxSize, Version: version, Log: log}, nil
}

// LoadConfig loads the config file at cfgPath; an error unless it has a
// [mirror] table.
func LoadConfig(cfgPath string) (*config.Config, error) {
	cfg, err := config.Load(cfgPath)
	if err != nil {
		return nil, err
	}
	if !cfg.IsMirror() {
		return nil, fmt.Errorf("%s has no [mirror] table: this is not a mirror node's config", cfgPath)
	}
	return cfg, nil
}

// Daemon is `syncd run` on a node: poll the head every interval ±
// jitter. SIGHUP re-reads the config (a broken one is logged and the old
// one kept).
type Daemon struct {
	CfgPath string
	Cfg     *config.Config
	Version string
	Log     *logrus.Logger
	// Beside run for the daemon's life, started after the first log
	// line (a storage node's homes pass).
	Beside []schedule.Task
}

// Run polls until ctx ends; it fails only when the node cannot be built
// from the first config.
func (d *Daemon) Run(ctx context.Context) error {
	cfg, log := d.Cfg, d.Log
	n, err := FromConfig(cfg, d.Version, log)
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
	onResult := func(r *Result) {
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
	log.WithFields(logrus.Fields{"version": d.Version, "from": n.T.Name(), "cache": cfg.CachePath,
		"interval": cfg.Mirror.Interval.String()}).Info("syncd: mirror node started")
	for _, task := range d.Beside {
		go task(ctx, d.CfgPath, cfg, log)
	}
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
			c2, err := LoadConfig(d.CfgPath)
			if err == nil {
				var n2 *Node
				if n2, err = FromConfig(c2, d.Version, log); err == nil {
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

// CheckOnline is `check-config --online` on a node: the head's manifest
// is reachable from each source and signed by the configured key; one
// good source passes (the others are failovers), each failing one is
// named (a warning on w when another passed).
func CheckOnline(ctx context.Context, cfg *config.Config, w io.Writer) error {
	first, more, err := NewAll(cfg.Mirror)
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
	for _, t := range append([]Transport{first}, more...) {
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
		fmt.Fprintf(w, "head %s: serial %d, %d users, %d groups, %d associations, source_contact %s, key %s\n",
			t.Name(), m.Serial, m.Users, m.Groups, m.Associations, m.SourceContact.Format(time.RFC3339), publish.KeyID(keys[0]))
	}
	if len(errs) == 1+len(more) {
		return errors.New(strings.Join(errs, "; "))
	}
	for _, e := range errs {
		fmt.Fprintf(w, "warning: %s\n", e)
	}
	return nil
}
