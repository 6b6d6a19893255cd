package pipeline

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/scimbridge/scimbridge/syncd/commit"
	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/metrics"
	"github.com/scimbridge/scimbridge/syncd/source/scim"
)

// Daemon is the polling loop's state (syncd run on a head that polls).
type Daemon struct {
	CfgPath string
	Cfg     *config.Config
	Client  *scim.Client
	Log     *logrus.Logger
	Metrics *metrics.Metrics
	// AfterPoll runs after every poll (a head with [publish] publishes).
	AfterPoll func(ctx context.Context, cfg *config.Config, log logrus.FieldLogger, m *metrics.Metrics)

	LastFull time.Time
	// statsBase holds the counters of clients replaced by a reload, so
	// the exported totals never go down.
	statsMu   sync.Mutex
	statsBase metrics.SourceStats
	// LastRemovalCheck is when the record totals were last compared
	// (or read by a full fetch).
	LastRemovalCheck time.Time
	failed           bool // the last attempt failed: the next one is a full fetch
}

// Run polls until ctx ends: a poll, AfterPoll, a jittered wait; a value
// on hup reloads the configuration.
func (d *Daemon) Run(ctx context.Context, hup <-chan os.Signal) error {
	for {
		d.Poll(ctx)
		if d.AfterPoll != nil {
			d.AfterPoll(ctx, d.Cfg, d.Log, d.Metrics)
		}
		wait := Jitter(d.Cfg.PollInterval, d.Cfg.PollJitter)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			d.Log.Info("syncd: stopping")
			return nil
		case <-hup:
			t.Stop()
			d.reload()
		case <-t.C:
		}
	}
}

// Poll is one tick: a full fetch when one is due, else the cheap change
// check first.
func (d *Daemon) Poll(ctx context.Context) {
	if ctx.Err() != nil {
		return
	}
	s := NewSyncer(d.Cfg, d.Client, d.Log, d.Metrics)
	full := d.failed || d.LastFull.IsZero() || time.Since(d.LastFull) >= d.Cfg.FullReconcileInterval
	if !full {
		t0 := time.Now()
		removals := time.Since(d.LastRemovalCheck) >= d.Cfg.RemovalCheckInterval
		ch, err := d.Client.Check(ctx, removals)
		d.countCheck(ch, err)
		switch {
		case errors.Is(err, scim.ErrNoChangeCheck):
			full = true
		case err != nil:
			d.Log.WithError(err).Warn("syncd: change check failed; doing a full fetch")
			full = true
		case ch.Changed:
			d.Log.WithField("change", ch.Reason).Info("syncd: change at the source; reading everything")
			full = true
		default:
			if ch.RemovalsChecked {
				d.LastRemovalCheck = t0
			}
			d.Log.WithFields(logrus.Fields{"took": time.Since(t0).String(), "requests": ch.Requests, "removals_checked": ch.RemovalsChecked}).Debug("syncd: no change at the source")
			d.noChange(t0)
			d.idleSteps(ctx)
			return
		}
	}
	if !d.LastFull.IsZero() {
		// A scheduled full read also re-reads what the server says about
		// itself (paging, sorting, schemas), which can change under us.
		if _, err := d.Client.Discover(ctx); err != nil {
			d.Log.WithError(err).Warn("syncd: re-reading ServiceProviderConfig failed; keeping the last one")
		}
	}
	t0 := time.Now()
	out, err := s.Once(ctx, Opts{})
	if ctx.Err() != nil {
		return
	}
	d.failed = err != nil
	if err != nil {
		// Error level: a poll that fails is what an admin must see.
		d.Log.WithError(err).WithField("next_try", d.Cfg.PollInterval.String()).Error("syncd: poll failed (sync failed); the live snapshot stays in use")
	}
	if err == nil {
		// The read is the new base of the change and removal checks.
		d.LastFull, d.LastRemovalCheck = t0, t0
	}
	if err != nil || out == nil || out.Result != commit.Committed {
		d.idleSteps(ctx)
	}
}

// Probe asks the server at start what check-config --online asks, and
// logs each finding with the option to change. It changes nothing: the
// first read then fails or succeeds on its own.
func (d *Daemon) Probe(ctx context.Context) {
	pctx, cancel := context.WithTimeout(ctx, 4*d.Cfg.RequestTimeout)
	defer cancel()
	rep, err := d.Client.Probe(pctx)
	if err != nil {
		d.Log.WithError(err).Warn("syncd: probing the server at start failed")
	}
	if rep == nil {
		return
	}
	for _, f := range rep.Findings {
		e := d.Log.WithField("option", f.Option)
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
func (d *Daemon) idleSteps(ctx context.Context) {
	if _, err := os.Stat(d.Cfg.CachePath); err != nil {
		return // no snapshot yet: nothing to reconcile against
	}
	for i, hook := range AfterCommit {
		if ctx.Err() != nil {
			return
		}
		if err := hook(ctx, d.Cfg, d.Cfg.CachePath); err != nil {
			d.Log.WithError(err).WithField("step", i).Error("syncd: step after an unchanged poll failed")
		}
	}
}

// noChange records a successful cheap poll, begun at contact: the live
// snapshot's mtime (its freshness) and the status file.
func (d *Daemon) noChange(contact time.Time) {
	NewSyncer(d.Cfg, nil, d.Log, nil).touch(contact)
	st, err := commit.ReadStatus(d.Cfg.StatusPath)
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
	if err := commit.WriteStatus(d.Cfg.StatusPath, st); err != nil {
		d.Log.WithError(err).Error("syncd: cannot write the status file")
	}
	d.Metrics.Syncs.WithLabelValues(commit.Unchanged).Inc()
	d.Metrics.LastSuccess.Set(float64(now.Unix()))
}

// SourceStats is the source's counters since syncd started.
func (d *Daemon) SourceStats() metrics.SourceStats {
	d.statsMu.Lock()
	defer d.statsMu.Unlock()
	s := d.Client.Stats()
	b := d.statsBase
	return metrics.SourceStats{Requests: b.Requests + s.Requests, Retries: b.Retries + s.Retries, Bytes: b.Bytes + s.Bytes}
}

func (d *Daemon) countCheck(ch scim.Change, err error) {
	if d.Metrics.Checks == nil {
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
	d.Metrics.Checks.WithLabelValues(r).Inc()
}

// reload re-reads the config and credentials; a broken new config is
// logged and the old one kept.
func (d *Daemon) reload() {
	cfg, err := config.Load(d.CfgPath)
	if err != nil {
		d.Log.WithError(err).Error("syncd: SIGHUP: new configuration rejected; keeping the old one")
		return
	}
	c, err := NewClient(cfg, d.Log)
	if err != nil {
		d.Log.WithError(err).Error("syncd: SIGHUP: cannot build the SCIM client; keeping the old configuration")
		return
	}
	if cfg.MetricsListen != d.Cfg.MetricsListen {
		d.Log.Warn("syncd: SIGHUP: metrics_listen changes take effect on restart")
	}
	lvl, _ := logrus.ParseLevel(cfg.LogLevel)
	d.Log.SetLevel(lvl)
	d.statsMu.Lock()
	old := d.Client.Stats()
	d.statsBase.Requests += old.Requests
	d.statsBase.Retries += old.Retries
	d.statsBase.Bytes += old.Bytes
	d.Cfg, d.Client = cfg, c
	d.statsMu.Unlock()
	d.LastFull = time.Time{} // the next poll is a full fetch under the new config
	d.Log.Info("syncd: configuration reloaded")
}

// Jitter is d shifted uniformly by up to ±j.
func Jitter(d, j time.Duration) time.Duration {
	if j <= 0 {
		return d
	}
	return d - j + time.Duration(rand.Int64N(int64(2*j)+1))
}
