package kube

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/scimbridge/scimbridge/syncd/atomicfile"
	"github.com/scimbridge/scimbridge/syncd/snapshot"
	"github.com/sirupsen/logrus"
)

// DefaultMaxRemovalShare is the largest share of the managed namespaces
// one pass may take access from (RoleBinding or namespace deleted)
// without Force, when at least 10 are managed: a snapshot that lost a
// group by mistake must not lock every team out of the cluster.
const DefaultMaxRemovalShare = 0.5

// Options tune one pass.
type Options struct {
	DryRun bool
	Force  bool
	Log    logrus.FieldLogger
	OnPlan func(*Plan)
	// Client overrides NewClient (tests that reuse one).
	Client  *Client
	Metrics *Metrics
}

// Result reports one pass.
type Result struct {
	Plan       *Plan
	Applied    int
	Failed     int
	Unfinished int
	Duration   time.Duration
}

// ErrTooManyRemovals is returned when the removal guard stops a plan.
var ErrTooManyRemovals = errors.New("kubernetes: plan takes access from too many namespaces")

// Reconcile runs one pass against the live snapshot at cachePath. Every
// request is bounded by cfg.Timeout; the caller runs it outside the
// commit path, so an unreachable API server costs only this pass.
func Reconcile(ctx context.Context, cfg Config, cachePath string, opt Options) (res *Result, err error) {
	t0 := time.Now()
	res = &Result{}
	cfg = cfg.WithDefaults()
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	log := opt.Log
	if log == nil {
		log = logrus.StandardLogger()
	}
	if !opt.DryRun {
		defer func() {
			res.Duration = time.Since(t0)
			recordPass(cfg, cachePath, res, err, opt.Metrics, log)
		}()
	}
	contents, _, err := snapshot.Load(cachePath)
	if err != nil {
		return res, fmt.Errorf("kubernetes: %w", err)
	}
	d := BuildDesired(cfg, contents)
	cl := opt.Client
	if cl == nil {
		if cl, err = NewClient(cfg); err != nil {
			return res, err
		}
	}
	o, err := cl.Observe(ctx)
	if err != nil {
		return res, err
	}
	p := MakePlan(cfg, d, o)
	res.Plan = p
	if opt.OnPlan != nil {
		opt.OnPlan(p)
	}
	if err := removalGuard(p, opt.Force); err != nil {
		return res, err
	}
	if opt.DryRun {
		res.Duration = time.Since(t0)
		return res, nil
	}
	var errs []error
	failedNS := map[string]bool{}
	for _, ch := range p.Changes {
		if failedNS[ch.Namespace] && ch.Kind != "Namespace" {
			continue // its namespace could not be made: the next pass retries both
		}
		if err := cl.Apply(ctx, ch); err != nil {
			res.Failed++
			errs = append(errs, err)
			log.WithError(err).Error("kubernetes: change failed")
			if ch.Kind == "Namespace" && ch.Action == "create" {
				failedNS[ch.Namespace] = true
			}
			if ctx.Err() != nil {
				break
			}
			continue
		}
		res.Applied++
		log.WithFields(logrus.Fields{"action": ch.Action, "kind": ch.Kind, "namespace": ch.Namespace, "drift": ch.Drift}).Info("kubernetes: " + ch.Reason)
	}
	if o2, err := cl.Observe(ctx); err == nil {
		res.Unfinished = len(MakePlan(cfg, d, o2).Changes)
	}
	return res, errors.Join(errs...)
}

func removalGuard(p *Plan, force bool) error {
	n := 0
	for _, c := range p.Changes {
		if c.Action == "delete" && (c.Kind == "RoleBinding" || c.Kind == "Namespace") {
			n++
		}
	}
	if force || p.Managed < 10 || float64(n) <= DefaultMaxRemovalShare*float64(p.Managed) {
		return nil
	}
	return fmt.Errorf("%w: %d of %d managed namespaces would lose their RoleBinding or be deleted (more than %.0f%%); check the snapshot and the config, then run `syncd kubernetes apply --force`",
		ErrTooManyRemovals, n, p.Managed, DefaultMaxRemovalShare*100)
}

// State is what the last pass left for `syncd status` (counts only:
// readable by any user).
type State struct {
	Time        time.Time `json:"time"`
	Result      string    `json:"result"` // ok, failed, refused
	Error       string    `json:"error,omitempty"`
	Managed     int       `json:"managed_namespaces"`
	Applied     int       `json:"applied"`
	Failed      int       `json:"failed"`
	Drift       int       `json:"drift"`
	Unfinished  int       `json:"unfinished"`
	DurationSec float64   `json:"duration_seconds"`
	LastSuccess time.Time `json:"last_success,omitzero"`
}

// StatePath is where the pass records itself.
func StatePath(cfg Config, cachePath string) string {
	if cfg.StateFile != "" {
		return cfg.StateFile
	}
	return filepath.Join(filepath.Dir(cachePath), DefaultStateFileName)
}

// ReadState reads the last pass's record.
func ReadState(path string) (*State, error) {
	var s State
	if err := atomicfile.ReadJSON(path, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

func recordPass(cfg Config, cachePath string, res *Result, err error, m *Metrics, log logrus.FieldLogger) {
	path := StatePath(cfg, cachePath)
	st := State{Time: time.Now().UTC(), Result: "ok", Applied: res.Applied, Failed: res.Failed,
		Unfinished: res.Unfinished, DurationSec: res.Duration.Seconds()}
	if prev, perr := ReadState(path); perr == nil {
		st.LastSuccess = prev.LastSuccess
	}
	if res.Plan != nil {
		st.Managed, st.Drift = res.Plan.Managed, res.Plan.DriftCount()
	}
	switch {
	case errors.Is(err, ErrTooManyRemovals):
		st.Result, st.Error = "refused", err.Error()
	case err != nil:
		st.Result, st.Error = "failed", err.Error()
	default:
		st.LastSuccess = st.Time
	}
	if m != nil {
		m.observe(st)
	}
	if werr := atomicfile.WriteJSON(path, st, 0o644); werr != nil {
		log.WithError(werr).Warn("kubernetes: cannot record the pass for syncd status")
	}
}

// Metrics are the pass's Prometheus collectors.
type Metrics struct {
	passes      *prometheus.CounterVec
	changes     prometheus.Counter
	failures    prometheus.Counter
	drift       prometheus.Counter
	managed     prometheus.Gauge
	unfinished  prometheus.Gauge
	lastSuccess prometheus.Gauge
	duration    prometheus.Gauge
}

// NewMetrics makes the collectors (register them: Collectors).
func NewMetrics() *Metrics {
	m := &Metrics{
		passes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "scimbridge_kubernetes_passes_total",
			Help: "Kubernetes passes by result (ok, failed, refused)."}, []string{"result"}),
		changes: prometheus.NewCounter(prometheus.CounterOpts{Name: "scimbridge_kubernetes_changes_total",
			Help: "Namespaces, RoleBindings and ResourceQuotas created, changed or deleted."}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{Name: "scimbridge_kubernetes_change_failures_total",
			Help: "Changes the API server refused or that failed."}),
		drift: prometheus.NewCounter(prometheus.CounterOpts{Name: "scimbridge_kubernetes_drift_total",
			Help: "Changes that undid an edit made outside scimbridge."}),
		managed: prometheus.NewGauge(prometheus.GaugeOpts{Name: "scimbridge_kubernetes_managed_namespaces",
			Help: "Namespaces scimbridge owns (label app.kubernetes.io/managed-by=scimbridge)."}),
		unfinished: prometheus.NewGauge(prometheus.GaugeOpts{Name: "scimbridge_kubernetes_unfinished_changes",
			Help: "Changes a fresh plan still had after the last apply (0 when the cluster matches)."}),
		lastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{Name: "scimbridge_kubernetes_last_success_timestamp_seconds",
			Help: "When a Kubernetes pass last completed without error."}),
		duration: prometheus.NewGauge(prometheus.GaugeOpts{Name: "scimbridge_kubernetes_pass_duration_seconds",
			Help: "How long the last Kubernetes pass took."}),
	}
	m.passes.WithLabelValues("ok")
	m.passes.WithLabelValues("failed")
	return m
}

// Collectors are m's collectors, to register (syncd: metrics.Extra).
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.passes, m.changes, m.failures, m.drift, m.managed, m.unfinished, m.lastSuccess, m.duration}
}

func (m *Metrics) observe(st State) {
	m.passes.WithLabelValues(st.Result).Inc()
	m.changes.Add(float64(st.Applied))
	m.failures.Add(float64(st.Failed))
	m.drift.Add(float64(st.Drift))
	m.managed.Set(float64(st.Managed))
	m.unfinished.Set(float64(st.Unfinished))
	m.duration.Set(st.DurationSec)
	if st.Result == "ok" {
		m.lastSuccess.Set(float64(st.Time.Unix()))
	}
}
