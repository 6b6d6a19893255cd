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
	"github.com/scimbridge/scimbridge/syncd/source"
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
	// Last is the last attempt's outcome (trimmed), LastRead and ReadCPU
	// how long the last incremental read took (benchmarks, tests).
	Last              *Outcome
	LastRead, ReadCPU time.Duration
	// last is the source's directory as the last read left it (full or
	// incremental): the base the next change is applied to; nil: none.
	last *source.Directory
	// incremental: the live snapshot was kept by applying changes (the
	// reconcile then reports what it finds different).
	incremental bool
	// wasPinned: the last poll found the snapshot pinned by a rollback;
	// pinnedSaid: the digest of the last "would change" logged.
	wasPinned  bool
	pinnedSaid string
	// live: the live snapshot's contents as the last poll wrote or read
	// them (live.go), so a poll does not load them from disk again.
	live LiveKeep
	// records: the explain record written after a poll (record.go).
	records Background
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
			d.Wait()
			d.Log.Info("syncd: stopping")
			return nil
		case <-hup:
			t.Stop()
			d.reload()
		case <-t.C:
		}
	}
}

// Poll is one tick: a full read when one is due (the first, after a
// failure, after `syncd resume`, and every full_reconcile_interval as the
// reconcile), else the change check, whose changed records are applied
// to the directory the daemon holds (scim.Client.Update) and go through
// the same pipeline as a full read.
func (d *Daemon) Poll(ctx context.Context) {
	if ctx.Err() != nil {
		return
	}
	// The next poll's memory limit fits what this one leaves held
	// (memlimit.go): a few microseconds.
	defer FitMemoryLimit()
	// The last poll's explain record is on disk before this poll
	// compares its rejections with it.
	d.records.Wait()
	s := NewSyncer(d.Cfg, d.Client, d.Log, d.Metrics)
	pinned := d.pinned()
	resumed := d.wasPinned && !pinned
	d.wasPinned = pinned
	if resumed {
		// The rolled-back snapshot must not stay live until the source
		// happens to change (issue 19).
		d.Log.Info("syncd: resumed after a rollback: reading everything now")
	}
	scheduled := !d.LastFull.IsZero() && time.Since(d.LastFull) >= d.Cfg.FullReconcileInterval
	full := resumed || d.failed || d.LastFull.IsZero() || scheduled
	reconcile := false
	if !full || (scheduled && d.last != nil) {
		// Before a scheduled full read too: the reconcile then compares
		// the full read with an up-to-date incremental state.
		handled := d.changes(ctx, s, pinned)
		if handled && !scheduled {
			return
		}
		// Only after the incremental state is up to date: a change it
		// could not apply is not a difference to report.
		reconcile = handled && scheduled && d.incremental && !d.failed
	}
	if !d.LastFull.IsZero() {
		// A scheduled full read also re-reads what the server says about
		// itself (paging, sorting, schemas), which can change under us.
		if _, err := d.Client.Discover(ctx); err != nil {
			d.Log.WithError(err).Warn("syncd: re-reading ServiceProviderConfig failed; keeping the last one")
		}
	}
	t0 := time.Now()
	out, err := s.Once(ctx, Opts{Reconcile: reconcile, PinnedSaid: &d.pinnedSaid, Live: &d.live, Records: &d.records})
	if ctx.Err() != nil {
		return
	}
	d.Last, d.LastRead = trimmed(out), 0
	d.failed = err != nil
	d.last = nil
	if err != nil {
		// Error level: a poll that fails is what an admin must see.
		d.Log.WithError(err).WithField("next_try", d.Cfg.PollInterval.String()).Error("syncd: poll failed (sync failed); the live snapshot stays in use")
	}
	if err == nil {
		// The read is the new base of the change and removal checks.
		d.LastFull, d.LastRemovalCheck = t0, t0
		d.last = out.Dir
	}
	if err != nil || out == nil || out.Result != commit.Committed {
		d.idleSteps(ctx)
	}
}

// changes is the poll between full reads. It reports whether it handled
// the poll; false means read everything.
func (d *Daemon) changes(ctx context.Context, s *Syncer, pinned bool) bool {
	t0, cpu0 := time.Now(), ProcessCPU()
	removals := time.Since(d.LastRemovalCheck) >= d.Cfg.RemovalCheckInterval
	dir, ch, err := d.Client.Update(ctx, d.last, removals)
	if errors.Is(err, scim.ErrNotIncremental) {
		// Memberships come from elsewhere: the cheap check, and a full
		// read on a change.
		dir = nil
		ch, err = d.Client.Check(ctx, removals)
	}
	d.countCheck(ch, err)
	switch {
	case errors.Is(err, scim.ErrNoChangeCheck):
		return false
	case errors.Is(err, scim.ErrFullRead):
		d.Log.WithError(err).Warn("syncd: change at the source that cannot be applied on its own; reading everything")
		return false
	case err != nil:
		d.Log.WithError(err).Warn("syncd: change check failed; doing a full fetch")
		return false
	}
	if ch.RemovalsChecked {
		d.LastRemovalCheck = t0
	}
	if !ch.Changed && !pinned {
		d.Log.WithFields(logrus.Fields{"took": time.Since(t0).String(), "requests": ch.Requests, "removals_checked": ch.RemovalsChecked}).Debug("syncd: no change at the source")
		d.noChange(t0)
		d.idleSteps(ctx)
		return true
	}
	if dir == nil {
		if !ch.Changed {
			d.noChange(t0)
			d.idleSteps(ctx)
			return true
		}
		d.Log.WithField("change", ch.Reason).Info("syncd: change at the source; reading everything")
		d.countRead("full")
		return false
	}
	if ch.Changed {
		d.Log.WithFields(logrus.Fields{"change": ch.Reason, "records": ch.Records, "removed": ch.Removed,
			"requests": ch.Requests, "took": time.Since(t0).String()}).Info("syncd: change at the source; applying the changed records")
		d.countRead("applied")
	}
	// Pinned and unchanged too: the pipeline says what would change.
	read, readCPU := time.Since(t0), ProcessCPU()-cpu0
	out, err := s.Once(ctx, Opts{Dir: dir, Contact: t0, PinnedSaid: &d.pinnedSaid, Live: &d.live, Records: &d.records})
	if ctx.Err() != nil {
		return true
	}
	d.Last, d.LastRead, d.ReadCPU = trimmed(out), read, readCPU
	d.last, d.incremental = dir, true
	d.failed = err != nil
	if err != nil {
		d.Log.WithError(err).WithField("next_try", d.Cfg.PollInterval.String()).Error("syncd: poll failed (sync failed); the live snapshot stays in use, the next poll reads everything")
	}
	if err != nil || out == nil || out.Result != commit.Committed {
		d.idleSteps(ctx)
	}
	return true
}

// trimmed is what the daemon keeps of an outcome between polls: not the
// validation result nor the diff (at 100,000 users they are as large as
// the directory it holds).
func trimmed(out *Outcome) *Outcome {
	if out == nil {
		return nil
	}
	o := *out
	o.Valid, o.Diff = nil, nil
	return &o
}

// Wait returns when what the last poll left running in the background
// (its explain record) has ended: Run calls it before it returns, and
// callers of Poll before they remove the snapshot's directory.
func (d *Daemon) Wait() { d.records.Wait() }

// pinned reports whether a rollback pins the live snapshot.
func (d *Daemon) pinned() bool {
	p, err := ReadPin(d.Cfg.CachePath)
	return err == nil && p != nil
}

func (d *Daemon) countRead(how string) {
	if d.Metrics != nil && d.Metrics.Incremental != nil {
		d.Metrics.Incremental.WithLabelValues(how).Inc()
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
	case errors.Is(err, scim.ErrFullRead):
		r = "changed" // a change to read in full
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
	d.last = nil
	d.live.forget()
	d.Log.Info("syncd: configuration reloaded")
}

// Jitter is d shifted uniformly by up to ±j.
func Jitter(d, j time.Duration) time.Duration {
	if j <= 0 {
		return d
	}
	return d - j + time.Duration(rand.Int64N(int64(2*j)+1))
}
