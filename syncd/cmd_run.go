package main

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/scimbridge/scimbridge/syncd/commit"
	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/metrics"
	"github.com/scimbridge/scimbridge/syncd/source/scim"
)

func init() {
	commands["run"] = command{
		Summary: "the daemon: sync now, then poll with jitter; SIGHUP reloads, SIGTERM stops",
		Run:     runDaemon,
	}
}

// daemonTasks run beside the polling loop for the daemon's life (the
// Slurm pass on its own schedule: cmd_slurm.go).
var daemonTasks []func(ctx context.Context, cfgPath string, cfg *config.Config, log *logrus.Logger)

// daemon is the polling loop's state.
type daemon struct {
	cfgPath string
	cfg     *config.Config
	client  *scim.Client
	log     *logrus.Logger
	metrics *metrics.Metrics

	lastFull time.Time
	// statsBase holds the counters of clients replaced by a reload, so
	// the exported totals never go down.
	statsMu   sync.Mutex
	statsBase metrics.SourceStats
	// lastRemovalCheck is when the record totals were last compared
	// (or read by a full fetch).
	lastRemovalCheck time.Time
	failed           bool // the last attempt failed: the next one is a full fetch
}

func runDaemon(ctx context.Context, cfgPath string, args []string) error {
	fs := flags("run", &cfgPath)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		return err
	}
	if cfg.IsMirror() {
		return runMirrorDaemon(ctx, cfgPath, cfg) // a node follows a head (cmd_cluster.go)
	}
	if cfg.HasReceiver() {
		// Identity providers push to this head: serve them instead of polling.
		rcfg, rc, st, err := openReceiverStore(cfgPath)
		if err != nil {
			return err
		}
		defer st.Close()
		return serveReceiver(ctx, rcfg, rc, st, "")
	}
	d := &daemon{cfgPath: cfgPath, cfg: cfg, log: newLogger(cfg, os.Stderr), metrics: metrics.New()}
	if d.client, err = newClient(cfg, d.log); err != nil {
		return err
	}
	d.metrics.WatchSource(version, d.sourceStats)
	if cfg.MetricsListen != "" {
		mctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() {
			if err := d.metrics.Serve(mctx, cfg.MetricsListen); err != nil {
				d.log.WithError(err).Error("syncd: metrics server stopped")
			}
		}()
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)

	d.log.WithFields(logrus.Fields{"version": version, "source": d.client.Name(), "cache": cfg.CachePath,
		"poll": cfg.PollInterval.String(), "removal_check": cfg.RemovalCheckInterval.String(),
		"full_reconcile": cfg.FullReconcileInterval.String()}).Info("syncd: started")
	d.probe(ctx)
	startHead(ctx, cfg, d.log)
	for _, task := range daemonTasks {
		go task(ctx, cfgPath, cfg, d.log)
	}
	for {
		d.poll(ctx)
		publishAfterPoll(ctx, d.cfg, d.log, d.metrics)
		wait := jitter(d.cfg.PollInterval, d.cfg.PollJitter)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			d.log.Info("syncd: stopping")
			return nil
		case <-hup:
			t.Stop()
			d.reload()
		case <-t.C:
		}
	}
}

// poll is one tick: a full fetch when one is due, else the cheap change
// check first.
func (d *daemon) poll(ctx context.Context) {
	if ctx.Err() != nil {
		return
	}
	s := &syncer{cfg: d.cfg, src: d.client, log: d.log, metrics: d.metrics}
	full := d.failed || d.lastFull.IsZero() || time.Since(d.lastFull) >= d.cfg.FullReconcileInterval
	if !full {
		t0 := time.Now()
		removals := time.Since(d.lastRemovalCheck) >= d.cfg.RemovalCheckInterval
		ch, err := d.client.Check(ctx, removals)
		d.countCheck(ch, err)
		switch {
		case errors.Is(err, scim.ErrNoChangeCheck):
			full = true
		case err != nil:
			d.log.WithError(err).Warn("syncd: change check failed; doing a full fetch")
			full = true
		case ch.Changed:
			d.log.WithField("change", ch.Reason).Info("syncd: change at the source; reading everything")
			full = true
		default:
			if ch.RemovalsChecked {
				d.lastRemovalCheck = t0
			}
			d.log.WithFields(logrus.Fields{"took": time.Since(t0).String(), "requests": ch.Requests, "removals_checked": ch.RemovalsChecked}).Debug("syncd: no change at the source")
			d.noChange(t0)
			d.idleSteps(ctx)
			return
		}
	}
	if !d.lastFull.IsZero() {
		// A scheduled full read also re-reads what the server says about
		// itself (paging, sorting, schemas), which can change under us.
		if _, err := d.client.Discover(ctx); err != nil {
			d.log.WithError(err).Warn("syncd: re-reading ServiceProviderConfig failed; keeping the last one")
		}
	}
	t0 := time.Now()
	out, err := s.once(ctx, syncOpts{})
	if ctx.Err() != nil {
		return
	}
	d.failed = err != nil
	if err != nil {
		// Error level: a poll that fails is what an admin must see.
		d.log.WithError(err).WithField("next_try", d.cfg.PollInterval.String()).Error("syncd: poll failed (sync failed); the live snapshot stays in use")
	}
	if err == nil {
		// The read is the new base of the change and removal checks.
		d.lastFull, d.lastRemovalCheck = t0, t0
	}
	if err != nil || out == nil || out.Result != commit.Committed {
		d.idleSteps(ctx)
	}
}

// probe asks the server at start what check-config --online asks, and
// logs each finding with the option to change. It changes nothing: the
// first read then fails or succeeds on its own.
func (d *daemon) probe(ctx context.Context) {
	pctx, cancel := context.WithTimeout(ctx, 4*d.cfg.RequestTimeout)
	defer cancel()
	rep, err := d.client.Probe(pctx)
	if err != nil {
		d.log.WithError(err).Warn("syncd: probing the server at start failed")
	}
	if rep == nil {
		return
	}
	for _, f := range rep.Findings {
		e := d.log.WithField("option", f.Option)
		if f.Error {
			e.Error("syncd: " + f.Message)
		} else {
			e.Warn("syncd: " + f.Message)
		}
	}
}

// idleSteps runs the after-commit steps on a tick that committed nothing,
// against the live snapshot. Work they left pending must not wait for the
// directory to change: a Slurm removal blocked until the user's jobs end
// is finished on the first tick after they have ended, and a reconcile
// that failed (slurmdbd down) is retried, even while the source is down.
func (d *daemon) idleSteps(ctx context.Context) {
	if _, err := os.Stat(d.cfg.CachePath); err != nil {
		return // no snapshot yet: nothing to reconcile against
	}
	for i, hook := range afterCommit {
		if ctx.Err() != nil {
			return
		}
		if err := hook(ctx, d.cfg, d.cfg.CachePath); err != nil {
			d.log.WithError(err).WithField("step", i).Error("syncd: step after an unchanged poll failed")
		}
	}
}

// noChange records a successful cheap poll, begun at contact: the live
// snapshot's mtime (its freshness) and the status file.
func (d *daemon) noChange(contact time.Time) {
	(&syncer{cfg: d.cfg, log: d.log}).touch(contact)
	st, err := commit.ReadStatus(d.cfg.StatusPath)
	if err != nil {
		return
	}
	now := time.Now().UTC()
	st.LastAttempt, st.LastSuccess, st.Full = now, now, false
	st.LastSourceContact = contact.UTC()
	if st.LastResult != commit.HeldBack {
		// Deletions the guard holds stay held until a full read says
		// otherwise: keep saying so.
		st.LastResult = commit.Unchanged
	}
	st.LastError, st.ConsecutiveFailures = "", 0
	st.Added, st.Changed, st.Removed = 0, 0, 0
	if err := commit.WriteStatus(d.cfg.StatusPath, st); err != nil {
		d.log.WithError(err).Error("syncd: cannot write the status file")
	}
	d.metrics.Syncs.WithLabelValues(commit.Unchanged).Inc()
	d.metrics.LastSuccess.Set(float64(now.Unix()))
}

// sourceStats is the source's counters since syncd started.
func (d *daemon) sourceStats() metrics.SourceStats {
	d.statsMu.Lock()
	defer d.statsMu.Unlock()
	s := d.client.Stats()
	b := d.statsBase
	return metrics.SourceStats{Requests: b.Requests + s.Requests, Retries: b.Retries + s.Retries, Bytes: b.Bytes + s.Bytes}
}

func (d *daemon) countCheck(ch scim.Change, err error) {
	if d.metrics.Checks == nil {
		return
	}
	r := "unchanged"
	switch {
	case errors.Is(err, scim.ErrNoChangeCheck):
		r = "unavailable"
	case err != nil:
		r = "failed"
	case ch.Changed:
		r = "changed"
	}
	d.metrics.Checks.WithLabelValues(r).Inc()
}

// reload re-reads the config and credentials; a broken new config is
// logged and the old one kept.
func (d *daemon) reload() {
	cfg, err := config.Load(d.cfgPath)
	if err != nil {
		d.log.WithError(err).Error("syncd: SIGHUP: new configuration rejected; keeping the old one")
		return
	}
	c, err := newClient(cfg, d.log)
	if err != nil {
		d.log.WithError(err).Error("syncd: SIGHUP: cannot build the SCIM client; keeping the old configuration")
		return
	}
	if cfg.MetricsListen != d.cfg.MetricsListen {
		d.log.Warn("syncd: SIGHUP: metrics_listen changes take effect on restart")
	}
	lvl, _ := logrus.ParseLevel(cfg.LogLevel)
	d.log.SetLevel(lvl)
	d.statsMu.Lock()
	old := d.client.Stats()
	d.statsBase.Requests += old.Requests
	d.statsBase.Retries += old.Retries
	d.statsBase.Bytes += old.Bytes
	d.cfg, d.client = cfg, c
	d.statsMu.Unlock()
	d.lastFull = time.Time{} // the next poll is a full fetch under the new config
	d.log.Info("syncd: configuration reloaded")
}

// jitter is d shifted uniformly by up to ±j.
func jitter(d, j time.Duration) time.Duration {
	if j <= 0 {
		return d
	}
	return d - j + time.Duration(rand.Int64N(int64(2*j)+1))
}
