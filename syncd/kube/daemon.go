package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/schedule"
	"github.com/scimbridge/scimbridge/syncd/snapshot"
)

// What `syncd run`, `syncd status`, `check-config` and `explain` use of
// this package, from the syncd config: package main only registers and
// calls them (doc.go, "Package main wires").

var (
	lastPass atomic.Int64
	// daemonMetrics are the passes' metrics in every registry syncd
	// makes (DaemonCollectors).
	daemonMetrics = NewMetrics()
	// running keeps passes from overlapping: the after-commit step
	// starts one in the background and the own schedule may too.
	running atomic.Bool
	// inDaemon: `syncd run` (Loop started). The after-commit step then
	// runs the pass in the background; a one-shot `sync --once` waits
	// for it (bounded by timeout per request).
	inDaemon atomic.Bool
)

// DaemonCollectors are the metrics of the passes AfterCommit and Loop run.
func DaemonCollectors() []prometheus.Collector { return daemonMetrics.Collectors() }

// LoadConfig loads the config file at path and its [kubernetes] table,
// checked; an error without the table.
func LoadConfig(path string) (*config.Config, Config, error) {
	return config.LoadTable[Config](path, "kubernetes", (*config.Config).DecodeKubernetes)
}

// CheckConfig is check-config's look at [kubernetes]: the table, and
// the kubeconfig's ownership and mode (it holds the pass's credentials).
func CheckConfig(cfgPath string) error {
	_, kc, err := LoadConfig(cfgPath)
	if err != nil {
		return err
	}
	if kc.Kubeconfig != "" {
		if err := config.CheckSecretFile(kc.Kubeconfig); err != nil {
			return fmt.Errorf("kubeconfig: %w (chown root and chmod 0600 it)", err)
		}
	}
	return nil
}

// AfterCommit starts a pass after each committed snapshot, in the
// background: the commit, the Slurm step and the publisher never wait for
// the API server (doc.go).
func AfterCommit(ctx context.Context, cfg *config.Config, cachePath string) error {
	kc, on := enabled(cfg)
	if !on {
		return nil
	}
	if !inDaemon.Load() {
		pass(ctx, kc, cachePath, logrus.StandardLogger())
		return nil
	}
	go pass(ctx, kc, cachePath, logrus.StandardLogger())
	return nil
}

// pass runs one pass unless one is running; errors are logged, and
// recorded for `syncd status` and the metrics.
func pass(ctx context.Context, kc Config, cachePath string, log logrus.FieldLogger) {
	if !running.CompareAndSwap(false, true) {
		return
	}
	defer running.Store(false)
	lastPass.Store(time.Now().UnixNano())
	res, err := Reconcile(ctx, kc, cachePath, Options{Log: log, Metrics: daemonMetrics})
	switch {
	case errors.Is(err, ErrTooManyRemovals):
		log.WithError(err).Error("kubernetes: pass refused; nothing changed")
	case err != nil && ctx.Err() == nil:
		log.WithError(err).Error("kubernetes: pass failed; retried on the next commit or interval")
	case err == nil && res != nil && res.Plan != nil && !res.Plan.Empty():
		log.WithFields(logrus.Fields{"applied": res.Applied, "drift": res.Plan.DriftCount()}).Info("kubernetes: reconciled")
	}
}

// Loop runs the pass on its own schedule ([kubernetes] interval,
// default poll_interval): drift is undone and a pass that failed (API
// server down) is retried even when the source does not change.
func Loop(ctx context.Context, cfgPath string, cfg *config.Config, log *logrus.Logger) {
	inDaemon.Store(true)
	schedule.Every(ctx, "kubernetes", cfgPath, cfg, log, &lastPass,
		func(cfg *config.Config) (bool, string) {
			kc, on := enabled(cfg)
			return on, kc.Interval
		},
		func(cfg *config.Config) {
			if kc, on := enabled(cfg); on {
				pass(ctx, kc, cfg.CachePath, log)
			}
		})
}

// enabled decodes [kubernetes]: its config and whether the pass is on.
func enabled(cfg *config.Config) (Config, bool) {
	var kc Config
	on := cfg.HasKubernetes() && cfg.DecodeKubernetes(&kc) == nil && kc.Enabled
	return kc, on
}

// ExplainNamespaces is what `syncd explain USER` shows: the namespaces the
// user's groups give, per the config and the snapshot at path, each
// checked against the cluster when it answers within 5 s. Nil when there
// is no [kubernetes] table.
func ExplainNamespaces(ctx context.Context, cfgPath, path, user string) ([]string, error) {
	cfg, err := config.Load(cfgPath)
	if err != nil || !cfg.HasKubernetes() {
		return nil, nil
	}
	var kc Config
	if err := cfg.DecodeKubernetes(&kc); err != nil {
		return nil, err
	}
	kc = kc.WithDefaults()
	if err := kc.Check(); err != nil {
		return nil, err
	}
	contents, _, err := snapshot.Load(path)
	if err != nil {
		return nil, err
	}
	var o *Observed
	kc.Timeout = "5s"
	if cl, err := NewClient(kc); err == nil {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		o, _ = cl.Observe(cctx)
		cancel()
	}
	out := []string{}
	for _, r := range NamespacesOf(kc, contents, o, user) {
		out = append(out, fmt.Sprintf("namespace %s (ClusterRole %s through group %q): %s", r.Namespace, r.Role, r.Group, r.State))
	}
	return out, nil
}

// PrintStatus adds the last Kubernetes pass to `syncd status`.
func PrintStatus(w io.Writer, cfg *config.Config, now time.Time) {
	if cfg == nil || !cfg.HasKubernetes() {
		return
	}
	var kc Config
	if cfg.DecodeKubernetes(&kc) != nil {
		return
	}
	path := StatePath(kc, cfg.CachePath)
	st, err := ReadState(path)
	if err != nil {
		fmt.Fprintf(w, "kubernetes:     no pass recorded (%s)\n", path)
		return
	}
	fmt.Fprintf(w, "kubernetes:     last pass %s (%s ago): %s; %d namespace(s) managed, %d change(s) applied, %d failed, %d drift undone, %d left\n",
		st.Time.Format(time.RFC3339), now.Sub(st.Time).Round(time.Second), st.Result, st.Managed, st.Applied, st.Failed, st.Drift, st.Unfinished)
	if st.Error != "" {
		fmt.Fprintf(w, "kubernetes:     error: %s\n", st.Error)
	}
	if !st.LastSuccess.IsZero() && st.Result != "ok" {
		fmt.Fprintf(w, "kubernetes:     last success %s\n", st.LastSuccess.Format(time.RFC3339))
	}
}
