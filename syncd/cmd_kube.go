package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/kube"
	"github.com/scimbridge/scimbridge/syncd/metrics"
	"github.com/scimbridge/scimbridge/syncd/pipeline"
	"github.com/scimbridge/scimbridge/syncd/schedule"
	"github.com/scimbridge/scimbridge/syncd/snapshot"
	"github.com/sirupsen/logrus"
)

func init() {
	commands["kubernetes"] = command{
		Summary: "plan|apply: namespaces, RoleBindings and quotas of mapped groups (Kubernetes API)",
		Run:     runKube,
	}
	pipeline.AfterCommit = append(pipeline.AfterCommit, kubeAfterCommit)
	daemonTasks = append(daemonTasks, kubeLoop)
	m := kube.NewMetrics()
	kubeMetrics.Store(m)
	metrics.Extra = append(metrics.Extra, m.Collectors()...)
}

var (
	lastKubePass atomic.Int64
	kubeMetrics  atomic.Pointer[kube.Metrics]
	// kubeRunning keeps passes from overlapping: the after-commit step
	// starts one in the background and the own schedule may too.
	kubeRunning atomic.Bool
	// kubeInDaemon: `syncd run` (kubeLoop started). The after-commit step
	// then runs the pass in the background; a one-shot `sync --once`
	// waits for it (bounded by timeout per request).
	kubeInDaemon atomic.Bool
)

const kubeUsage = `usage: syncd kubernetes plan  [--cache PATH]
       syncd kubernetes apply [--cache PATH] [--force]

plan prints every change apply would make (namespaces, RoleBindings,
ResourceQuotas), each with its reason, and what it leaves alone and why;
it changes nothing. apply makes them and reads the cluster back.`

func runKube(ctx context.Context, cfgPath string, args []string) error {
	if len(args) == 0 || (args[0] != "plan" && args[0] != "apply") {
		return usageError{kubeUsage}
	}
	sub := args[0]
	fs := flags("kubernetes "+sub, &cfgPath)
	cache := fs.String("cache", "", "snapshot path (default: cache_path of the config)")
	force := fs.Bool("force", false, "apply even when the plan takes access from more than half of the managed namespaces")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	cfg, kc, err := loadKubeConfig(cfgPath)
	if err != nil {
		return err
	}
	path := cfg.CachePath
	if *cache != "" {
		path = *cache
	}
	show := func(p *kube.Plan) { fmt.Fprint(os.Stdout, p.String()) }
	res, err := kube.Reconcile(ctx, kc, path, kube.Options{DryRun: sub == "plan", Force: *force, OnPlan: show})
	if sub == "apply" && res != nil {
		fmt.Fprintf(os.Stdout, "# applied %d change(s), %d failed, in %.1fs\n", res.Applied, res.Failed, res.Duration.Seconds())
		if res.Unfinished > 0 {
			fmt.Fprintf(os.Stdout, "# warning: the cluster still differs after apply (%d change(s)); see `syncd kubernetes plan`\n", res.Unfinished)
		}
	}
	return err
}

func loadKubeConfig(path string) (*config.Config, kube.Config, error) {
	var kc kube.Config
	cfg, err := config.Load(path)
	if err != nil {
		return nil, kc, err
	}
	if !cfg.HasKubernetes() {
		return nil, kc, fmt.Errorf("%s has no [kubernetes] table", path)
	}
	if err := cfg.DecodeKubernetes(&kc); err != nil {
		return nil, kc, err
	}
	kc = kc.WithDefaults()
	if err := kc.Check(); err != nil {
		return nil, kc, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, kc, nil
}

// checkKubeConfig is check-config's look at [kubernetes]: the table, and
// the kubeconfig's ownership and mode (it holds the pass's credentials).
func checkKubeConfig(cfgPath string) error {
	_, kc, err := loadKubeConfig(cfgPath)
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

// kubeAfterCommit starts a pass after each committed snapshot, in the
// background: the commit, the Slurm step and the publisher never wait for
// the API server (doc.go of syncd/kube).
func kubeAfterCommit(ctx context.Context, cfg *config.Config, cachePath string) error {
	kc, on := kubeEnabled(cfg)
	if !on {
		return nil
	}
	if !kubeInDaemon.Load() {
		kubePass(ctx, kc, cachePath, logrus.StandardLogger())
		return nil
	}
	go kubePass(ctx, kc, cachePath, logrus.StandardLogger())
	return nil
}

// kubePass runs one pass unless one is running; errors are logged, and
// recorded for `syncd status` and the metrics.
func kubePass(ctx context.Context, kc kube.Config, cachePath string, log logrus.FieldLogger) {
	if !kubeRunning.CompareAndSwap(false, true) {
		return
	}
	defer kubeRunning.Store(false)
	lastKubePass.Store(time.Now().UnixNano())
	res, err := kube.Reconcile(ctx, kc, cachePath, kube.Options{Log: log, Metrics: kubeMetrics.Load()})
	switch {
	case errors.Is(err, kube.ErrTooManyRemovals):
		log.WithError(err).Error("kubernetes: pass refused; nothing changed")
	case err != nil && ctx.Err() == nil:
		log.WithError(err).Error("kubernetes: pass failed; retried on the next commit or interval")
	case err == nil && res != nil && res.Plan != nil && !res.Plan.Empty():
		log.WithFields(logrus.Fields{"applied": res.Applied, "drift": res.Plan.DriftCount()}).Info("kubernetes: reconciled")
	}
}

// kubeLoop runs the pass on its own schedule ([kubernetes] interval,
// default poll_interval): drift is undone and a pass that failed (API
// server down) is retried even when the source does not change.
func kubeLoop(ctx context.Context, cfgPath string, cfg *config.Config, log *logrus.Logger) {
	kubeInDaemon.Store(true)
	schedule.Every(ctx, "kubernetes", cfgPath, cfg, log, &lastKubePass,
		func(cfg *config.Config) (bool, string) {
			kc, on := kubeEnabled(cfg)
			return on, kc.Interval
		},
		func(cfg *config.Config) {
			if kc, on := kubeEnabled(cfg); on {
				kubePass(ctx, kc, cfg.CachePath, log)
			}
		})
}

// kubeEnabled decodes [kubernetes]: its config and whether the pass is on.
func kubeEnabled(cfg *config.Config) (kube.Config, bool) {
	var kc kube.Config
	on := cfg.HasKubernetes() && cfg.DecodeKubernetes(&kc) == nil && kc.Enabled
	return kc, on
}

// kubeNamespaces is what `syncd explain USER` shows: the namespaces the
// user's groups give, per the config and the snapshot at path, each
// checked against the cluster when it answers within 5 s. Nil when there
// is no [kubernetes] table.
func kubeNamespaces(ctx context.Context, cfgPath, path, user string) ([]string, error) {
	cfg, err := config.Load(cfgPath)
	if err != nil || !cfg.HasKubernetes() {
		return nil, nil
	}
	var kc kube.Config
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
	var o *kube.Observed
	kc.Timeout = "5s"
	if cl, err := kube.NewClient(kc); err == nil {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		o, _ = cl.Observe(cctx)
		cancel()
	}
	out := []string{}
	for _, r := range kube.NamespacesOf(kc, contents, o, user) {
		out = append(out, fmt.Sprintf("namespace %s (ClusterRole %s through group %q): %s", r.Namespace, r.Role, r.Group, r.State))
	}
	return out, nil
}

// printKubeStatus adds the last Kubernetes pass to `syncd status`.
func printKubeStatus(w io.Writer, cfg *config.Config, now time.Time) {
	if cfg == nil || !cfg.HasKubernetes() {
		return
	}
	var kc kube.Config
	if cfg.DecodeKubernetes(&kc) != nil {
		return
	}
	path := kube.StatePath(kc, cfg.CachePath)
	st, err := kube.ReadState(path)
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
