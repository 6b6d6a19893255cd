package homes

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/schedule"
	"github.com/scimbridge/scimbridge/syncd/snapshot"
)

// The daemon's side of the pass, from the syncd config: Loop (its own
// goroutine in `syncd run`, on the head or a storage node), AfterCommit
// (`sync --once`), Run (one recorded pass, `syncd homes apply` too).
// Package main only registers and calls them (doc.go, "Package main
// wires").

var (
	passes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "scimbridge_homes_passes_total", Help: "Homes passes by result (ok, errors: the storage failed somewhere; see the log)."}, []string{"result"})
	gauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "scimbridge_homes", Help: "The last homes pass: homes and projects in place, refused paths, errors, changes made."}, []string{"what"})
	lastPass = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "scimbridge_homes_last_pass_timestamp_seconds", Help: "When the last homes pass ended."})
)

// Collectors are the metrics of the passes Run records, for every
// registry syncd makes.
func Collectors() []prometheus.Collector { return []prometheus.Collector{passes, gauge, lastPass} }

// running: the daemon's loop runs the pass on this host (it sees every
// new live file by itself; the after-commit step then does nothing, so
// the unchanged polls' after-commit round never starts a pass).
var running atomic.Bool

// retryAfter: a pass that met errors (storage down, glusterd busy) runs
// again after this, not only at the next snapshot or interval; the wait
// doubles while the errors go on (each pass logs them), up to the
// interval.
const retryAfter = time.Minute

// sharedErr is the last failure to leave the storage use for the nodes
// (WriteShared), logged once until it changes or clears.
var sharedErr atomic.Pointer[string]

// Load decodes and checks [homes] of cfg; on is false without the table.
func Load(cfg *config.Config) (hc Config, on bool, err error) {
	if !cfg.HasHomes() {
		return hc, false, nil
	}
	if err := cfg.DecodeHomes(&hc); err != nil {
		return hc, true, err
	}
	hc = hc.WithDefaults(cfg.HomeRoots, cfg.CachePath)
	if err := hc.Check(cfg.ProtectedPaths()); err != nil {
		return hc, true, fmt.Errorf("%s: %w", cfg.Path, err)
	}
	return hc, true, nil
}

// Here says whether this host's role runs the pass.
func Here(cfg *config.Config, hc Config) bool {
	return hc.Enabled && (hc.Role == "storage") == cfg.IsMirror()
}

// RoleWarning says when [homes] names a role this host does not have:
// the pass then never runs here (by design, said so).
func RoleWarning(cfg *config.Config, hc Config) string {
	switch {
	case !hc.Enabled:
		return "[homes] enabled = false: no homes pass runs (syncd homes plan|apply still work by hand)"
	case hc.Role == "head" && cfg.IsMirror():
		return "[homes] role = \"head\", but this host mirrors a head ([mirror]): the pass will not run here; set role = \"storage\" on the one node that owns the storage, and remove [homes] from the others"
	case hc.Role == "storage" && !cfg.IsMirror():
		return "[homes] role = \"storage\", but this host is a head (no [mirror]): the pass will not run here; set role = \"head\", or put [homes] on the storage node that mirrors this head"
	}
	return ""
}

// Run runs one pass over the live snapshot, bounded by homes.timeout,
// and records it (status file, metrics) unless dry.
func Run(ctx context.Context, cfg *config.Config, hc Config, dry, sample bool) (*Result, error) {
	contents, _, err := snapshot.Load(cfg.CachePath)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, hc.TimeoutDuration())
	defer cancel()
	res, err := Pass(ctx, hc, contents, Options{DryRun: dry, Log: logrus.StandardLogger(), Sample: sample})
	if dry || res == nil {
		return res, err
	}
	if werr := WriteStatus(hc, res); werr != nil && err == nil {
		err = werr
	}
	if werr := WriteShared(hc, res); werr != nil {
		if msg := werr.Error(); func() bool { old := sharedErr.Swap(&msg); return old == nil || *old != msg }() {
			logrus.WithError(werr).Warn("homes: the nodes that mount the storage keep the last figures (mylimits shows their age)")
		}
	} else {
		sharedErr.Store(nil)
	}
	result := "ok"
	if res.Errors > 0 || err != nil {
		result = "errors"
	}
	passes.WithLabelValues(result).Inc()
	for k, v := range map[string]int{"homes": res.Homes, "projects": res.Teams, "refused": res.Refused, "errors": res.Errors, "changed": res.Changed()} {
		gauge.WithLabelValues(k).Set(float64(v))
	}
	lastPass.SetToCurrentTime()
	return res, err
}

// AfterCommit runs the pass after `sync --once` commits, inline and
// bounded by homes.timeout. In the daemon the loop does it (it sees the
// new file within 5 s) and this returns at once: a commit never waits for
// the storage.
func AfterCommit(ctx context.Context, cfg *config.Config, cachePath string) error {
	if running.Load() {
		return nil
	}
	hc, on, err := Load(cfg)
	if err != nil || !on || !Here(cfg, hc) {
		return err
	}
	c := *cfg
	c.CachePath = cachePath
	res, err := Run(ctx, &c, hc, false, false)
	if err == nil && res.Errors > 0 {
		err = fmt.Errorf("homes: %d error(s) in the pass (see the log and `syncd homes plan`)", res.Errors)
	}
	return err
}

// Loop is the pass's own schedule on the host its role names
// (schedule.Watching): after every new live snapshot (a new file: a
// commit on the head, an install on a mirror; asked every 5 s) and every
// homes.interval (these passes record the hourly usage samples). The
// configuration is read again for each pass: a broken one is logged
// (once per error) and the last kept; [homes] added, enabled or given
// this host's role takes effect without a restart.
func Loop(ctx context.Context, cfgPath string, cfg *config.Config, log *logrus.Logger) {
	running.Store(true)
	defer running.Store(false)
	var lastSample atomic.Int64 // the last sampling pass (unix nanoseconds)
	var lastIno uint64          // the live file the last pass read
	var retryAt time.Time       // a pass with errors is tried again then
	retryWait := retryAfter     // doubling while errors go on, up to the interval
	var hc Config
	loggedErr, loggedOn := "", false
	ino := func(cfg *config.Config) uint64 {
		if fi, err := os.Stat(cfg.CachePath); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				return st.Ino
			}
		}
		return 0
	}
	pending := func(c *config.Config) bool {
		i := ino(c)
		return i != 0 && (i != lastIno || (!retryAt.IsZero() && time.Now().After(retryAt)))
	}
	schedule.Watching(ctx, "homes", cfgPath, cfg, log, &lastSample,
		func(c *config.Config) (bool, string) {
			h, on, err := Load(c)
			if err != nil {
				if err.Error() != loggedErr {
					loggedErr = err.Error()
					log.WithError(err).Error("homes: [homes] is invalid; no homes pass runs until it is fixed")
				}
				return false, ""
			}
			loggedErr = ""
			if !on || !Here(c, h) {
				loggedOn = false
				return false, ""
			}
			if !loggedOn {
				loggedOn = true
				log.WithFields(logrus.Fields{"role": h.Role, "roots": strings.Join(h.Roots, ","), "driver": orNone(h.Quota.Driver)}).Info("homes: pass runs on this host")
			}
			hc = h
			return true, h.IntervalDuration().String()
		},
		func(c *config.Config) {
			i := ino(c)
			if i == 0 {
				return // no snapshot yet
			}
			sample := time.Since(time.Unix(0, lastSample.Load())) >= hc.IntervalDuration()
			if !sample && !pending(c) {
				return
			}
			lastIno, retryAt = i, time.Time{}
			if sample {
				lastSample.Store(time.Now().UnixNano())
			}
			res, err := Run(ctx, c, hc, false, sample)
			if err != nil && ctx.Err() == nil {
				log.WithError(err).Error("homes: pass failed; retrying in " + retryWait.String())
			}
			if err != nil || (res != nil && (res.Errors > 0 || res.UsagePending > 0)) {
				// storage down, or its use not reported yet for a limit
				// just set: sooner than the interval
				retryAt = time.Now().Add(retryWait)
				retryWait = min(2*retryWait, hc.IntervalDuration())
			} else {
				retryWait = retryAfter
			}
			if res != nil && res.Changed() > 0 {
				log.WithField("changes", res.Changed()).Info("homes: pass done")
			}
		},
		pending)
}
