package slurm

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/schedule"
)

// What `syncd run` runs of this package: the pass after each commit
// (AfterCommit) and on its own schedule (Loop). Package main only
// registers them.

// lastPass is when the last reconcile of this process began (unix
// nanoseconds), whoever ran it.
var lastPass atomic.Int64

// Loop runs the Slurm pass on its own schedule ([slurm] interval,
// default poll_interval), so that a slow or down identity source never
// stalls it: blocked removals finish once jobs end, held jobs of disabled
// users are held, a reconcile that failed is retried. A pass is skipped
// when one ran (after a commit) less than an interval ago. It reads the
// config file each time (a broken one is logged and skipped).
func Loop(ctx context.Context, cfgPath string, cfg *config.Config, log *logrus.Logger) {
	schedule.Every(ctx, "slurm", cfgPath, cfg, log, &lastPass,
		func(cfg *config.Config) (bool, string) {
			var sc Config
			on := cfg.HasSlurm() && cfg.DecodeSlurm(&sc) == nil && sc.Enabled
			return on, sc.Interval
		},
		func(cfg *config.Config) {
			if err := pass(ctx, cfg, cfg.CachePath, false); err != nil && ctx.Err() == nil {
				log.WithError(err).Error("slurm: pass on its own schedule failed; retrying on the next turn")
			}
		})
}

// LoadConfig loads the config file at path and its [slurm] table, checked;
// an error without the table.
func LoadConfig(path string) (*config.Config, Config, error) {
	return config.LoadTable[Config](path, "slurm", (*config.Config).DecodeSlurm)
}

// AfterCommit is the step `syncd run` runs after each committed
// snapshot, when [slurm] enabled = true. A failed reconcile is logged and
// retried after the next commit; it never blocks the snapshot itself.
// A commit that changed nothing Slurm sees (what the config and the
// snapshot ask of it is what the last clean pass of this process had)
// runs no sacctmgr: the pass on the own schedule (Loop) still reads
// slurmdbd every interval and finds drift.
func AfterCommit(ctx context.Context, cfg *config.Config, cachePath string) error {
	return pass(ctx, cfg, cachePath, true)
}

// pass is one reconcile of `syncd run`; skipUnchanged as in
// Options.SkipUnchanged.
func pass(ctx context.Context, cfg *config.Config, cachePath string, skipUnchanged bool) error {
	if !cfg.HasSlurm() {
		return nil
	}
	var sc Config
	if err := cfg.DecodeSlurm(&sc); err != nil {
		return err
	}
	if !sc.Enabled {
		return nil
	}
	began := time.Now().UnixNano()
	res, err := Reconcile(ctx, sc, cachePath, Options{Log: logrus.StandardLogger(), SkipUnchanged: skipUnchanged})
	if res == nil || !res.Skipped {
		lastPass.Store(began)
	}
	if errors.Is(err, ErrTooManyRemovals) {
		logrus.WithError(err).Error("slurm: reconcile refused; nothing changed")
	}
	if res != nil && res.Plan != nil && !res.Plan.Empty() {
		logrus.WithField("commands", len(res.Plan.Steps)).Info("slurm: reconciled")
	}
	return err
}
