package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/sirupsen/logrus"

	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/metrics"
	"github.com/scimbridge/scimbridge/syncd/pipeline"
	"github.com/scimbridge/scimbridge/syncd/publish"
	"github.com/scimbridge/scimbridge/syncd/schedule"
)

func init() {
	commands["run"] = command{
		Summary: "the daemon: sync now, then poll with jitter; SIGHUP reloads, SIGTERM stops",
		Run:     runDaemon,
	}
}

// daemonTasks run beside the polling loop for the daemon's life (the
// Slurm, Kubernetes and homes passes on their own schedules:
// syncd/schedule).
var daemonTasks []schedule.Task

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
		return runMirrorDaemon(ctx, cfgPath, cfg) // a node follows a head (syncd/mirror)
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
	d := &pipeline.Daemon{CfgPath: cfgPath, Cfg: cfg, Log: newLogger(cfg, os.Stderr), Metrics: metrics.New(), AfterPoll: publish.AfterPoll}
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
	publish.StartHead(ctx, cfg, d.Log)
	for _, task := range daemonTasks {
		go task(ctx, cfgPath, cfg, d.Log)
	}
	return d.Run(ctx, hup)
}
