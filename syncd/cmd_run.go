package main

import (
	"context"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/metrics"
	"github.com/scimbridge/scimbridge/syncd/pipeline"
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

// ownSchedule is a pass's loop on its own schedule (the Slurm, the
// Kubernetes and the homes passes), so that a slow or down identity
// source never stalls it. Each turn it re-reads the config file (a broken
// one is logged and the last one kept); schedule says whether the pass is
// enabled and its interval (a Go duration; "" or bad: poll_interval). The
// pass runs when the snapshot exists and no pass began (after a commit)
// less than an interval ago (last, unix nanoseconds).
func ownSchedule(ctx context.Context, name, cfgPath string, cfg *config.Config, log *logrus.Logger, last *atomic.Int64,
	schedule func(*config.Config) (enabled bool, interval string), pass func(*config.Config)) {
	ownScheduleWatching(ctx, name, cfgPath, cfg, log, last, schedule, pass, nil)
}

// watchEvery is how often ownScheduleWatching asks whether its input
// changed (the homes pass: a new live snapshot).
const watchEvery = 5 * time.Second

// ownScheduleWatching is ownSchedule for a pass that also runs, between
// its intervals, as soon as changed says its input changed (asked every
// watchEvery with the config of the last turn; a pass that must follow
// every new snapshot on a node, where no commit step starts it). The
// config is re-read only on the turns that may run the pass.
func ownScheduleWatching(ctx context.Context, name, cfgPath string, cfg *config.Config, log *logrus.Logger, last *atomic.Int64,
	schedule func(*config.Config) (enabled bool, interval string), pass func(*config.Config), changed func(*config.Config) bool) {
	wait := cfg.PollInterval
	for first := true; ; first = false {
		due := time.Since(time.Unix(0, last.Load())) >= wait
		if first || due || (changed != nil && changed(cfg)) {
			wait = cfg.PollInterval
			if c, err := config.Load(cfgPath); err != nil {
				log.WithError(err).Error(name + ": own schedule: cannot read the configuration; keeping the last one")
			} else {
				cfg = c
			}
			if on, interval := schedule(cfg); on {
				if d, err := time.ParseDuration(interval); err == nil && d > 0 {
					wait = d
				}
				due = time.Since(time.Unix(0, last.Load())) >= wait
				if due || (changed != nil && changed(cfg)) {
					if _, err := os.Stat(cfg.CachePath); err == nil {
						pass(cfg)
					}
				}
			}
			if wait < time.Second {
				wait = time.Minute
			}
		}
		sleep := wait
		if changed != nil {
			sleep = min(wait, watchEvery)
		}
		t := time.NewTimer(sleep)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
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
	d := &pipeline.Daemon{CfgPath: cfgPath, Cfg: cfg, Log: newLogger(cfg, os.Stderr), Metrics: metrics.New(), AfterPoll: publishAfterPoll}
	if d.Client, err = pipeline.NewClient(cfg, d.Log); err != nil {
		return err
	}
	d.Metrics.WatchSource(version, d.SourceStats)
	if cfg.MetricsListen != "" {
		mctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() {
			if err := d.Metrics.Serve(mctx, cfg.MetricsListen); err != nil {
				d.Log.WithError(err).Error("syncd: metrics server stopped")
			}
		}()
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)

	d.Log.WithFields(logrus.Fields{"version": version, "source": d.Client.Name(), "cache": cfg.CachePath,
		"poll": cfg.PollInterval.String(), "removal_check": cfg.RemovalCheckInterval.String(),
		"full_reconcile": cfg.FullReconcileInterval.String()}).Info("syncd: started")
	d.Probe(ctx)
	startHead(ctx, cfg, d.Log)
	for _, task := range daemonTasks {
		go task(ctx, cfgPath, cfg, d.Log)
	}
	return d.Run(ctx, hup)
}
