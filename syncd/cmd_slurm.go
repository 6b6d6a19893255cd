package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/pipeline"
	"github.com/scimbridge/scimbridge/syncd/slurm"
	"github.com/sirupsen/logrus"
)

func init() {
	commands["slurm"] = command{
		Summary: "plan|apply: reconcile Slurm accounts with the snapshot (sacctmgr)",
		Run:     runSlurm,
	}
	pipeline.AfterCommit = append(pipeline.AfterCommit, slurmAfterCommit)
	daemonTasks = append(daemonTasks, slurmLoop)
}

// lastSlurmPass is when the last reconcile of this process began (unix
// nanoseconds), whoever ran it.
var lastSlurmPass atomic.Int64

// slurmLoop runs the Slurm pass on its own schedule ([slurm] interval,
// default poll_interval), so that a slow or down identity source never
// stalls it: blocked removals finish once jobs end, held jobs of disabled
// users are held, a reconcile that failed is retried. A pass is skipped
// when one ran (after a commit) less than an interval ago. It reads the
// config file each time (a broken one is logged and skipped).
func slurmLoop(ctx context.Context, cfgPath string, cfg *config.Config, log *logrus.Logger) {
	ownSchedule(ctx, "slurm", cfgPath, cfg, log, &lastSlurmPass,
		func(cfg *config.Config) (bool, string) {
			var sc slurm.Config
			on := cfg.HasSlurm() && cfg.DecodeSlurm(&sc) == nil && sc.Enabled
			return on, sc.Interval
		},
		func(cfg *config.Config) {
			if err := slurmPass(ctx, cfg, cfg.CachePath, false); err != nil && ctx.Err() == nil {
				log.WithError(err).Error("slurm: pass on its own schedule failed; retrying on the next turn")
			}
		})
}

const slurmUsage = `usage: syncd slurm plan  [--cache PATH]
       syncd slurm apply [--cache PATH] [--force]

plan prints the exact sacctmgr commands apply would run, and changes nothing.
apply runs them (one reconcile at a time, lock_file), then records every SCIM
user's associations in the snapshot for spank_scim.so.`

func runSlurm(ctx context.Context, cfgPath string, args []string) error {
	if len(args) == 0 || (args[0] != "plan" && args[0] != "apply") {
		return usageError{slurmUsage}
	}
	sub := args[0]
	fs := flags("slurm "+sub, &cfgPath)
	cache := fs.String("cache", "", "snapshot path (default: cache_path of the config)")
	force := fs.Bool("force", false, "apply even when the plan removes more than half of the managed associations")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	cfg, sc, err := loadSlurmConfig(cfgPath)
	if err != nil {
		return err
	}
	path := cfg.CachePath
	if *cache != "" {
		path = *cache
	}
	show := func(p *slurm.Plan) { fmt.Fprint(os.Stdout, p.String()) }
	res, err := slurm.Reconcile(ctx, sc, path, slurm.Options{DryRun: sub == "plan", Force: *force, OnPlan: show})
	if err != nil {
		return err
	}
	if sub == "apply" {
		fmt.Fprintf(os.Stdout, "# applied %d command(s), %d changed something; %d sacctmgr run(s) in %.1fs; %d association(s) recorded (snapshot written: %v)\n",
			res.Applied, res.Changed, res.Calls, res.Duration.Seconds(), res.Associations, res.SnapshotWritten)
		if res.Unfinished > 0 {
			// Not an error: a limit sacctmgr prints differently from the
			// config would make every pass "fail". The log has the diff.
			fmt.Fprintf(os.Stdout, "# warning: slurmdbd still differs after apply (%d command(s)); see `syncd slurm plan`\n", res.Unfinished)
		}
	}
	return nil
}

func loadSlurmConfig(path string) (*config.Config, slurm.Config, error) {
	var sc slurm.Config
	cfg, err := config.Load(path)
	if err != nil {
		return nil, sc, err
	}
	if !cfg.HasSlurm() {
		return nil, sc, fmt.Errorf("%s has no [slurm] table", path)
	}
	if err := cfg.DecodeSlurm(&sc); err != nil {
		return nil, sc, err
	}
	sc = sc.WithDefaults()
	if err := sc.Check(); err != nil {
		return nil, sc, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, sc, nil
}

// slurmAfterCommit is the step `syncd run` runs after each committed
// snapshot, when [slurm] enabled = true. A failed reconcile is logged and
// retried after the next commit; it never blocks the snapshot itself.
// A commit that changed nothing Slurm sees (what the config and the
// snapshot ask of it is what the last clean pass of this process had)
// runs no sacctmgr: the pass on the own schedule (slurmLoop) still reads
// slurmdbd every interval and finds drift.
func slurmAfterCommit(ctx context.Context, cfg *config.Config, cachePath string) error {
	return slurmPass(ctx, cfg, cachePath, true)
}

// slurmPass is one reconcile of `syncd run`; skipUnchanged as in
// slurm.Options.SkipUnchanged.
func slurmPass(ctx context.Context, cfg *config.Config, cachePath string, skipUnchanged bool) error {
	if !cfg.HasSlurm() {
		return nil
	}
	var sc slurm.Config
	if err := cfg.DecodeSlurm(&sc); err != nil {
		return err
	}
	if !sc.Enabled {
		return nil
	}
	began := time.Now().UnixNano()
	res, err := slurm.Reconcile(ctx, sc, cachePath, slurm.Options{Log: logrus.StandardLogger(), SkipUnchanged: skipUnchanged})
	if res == nil || !res.Skipped {
		lastSlurmPass.Store(began)
	}
	if errors.Is(err, slurm.ErrTooManyRemovals) {
		logrus.WithError(err).Error("slurm: reconcile refused; nothing changed")
	}
	if res != nil && res.Plan != nil && !res.Plan.Empty() {
		logrus.WithField("commands", len(res.Plan.Steps)).Info("slurm: reconciled")
	}
	return err
}
