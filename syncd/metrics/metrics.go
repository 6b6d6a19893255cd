// Package metrics holds syncd's Prometheus metrics and serves them on a
// loopback address. Nothing in them identifies a person: rejections are
// counted by reason only.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are syncd's collectors, registered on their own registry.
type Metrics struct {
	// Checks counts cheap polls by outcome (WatchSource); nil until then.
	Checks   *prometheus.CounterVec
	Registry *prometheus.Registry

	Syncs          *prometheus.CounterVec // by result: committed, unchanged, refused, failed
	Failures       prometheus.Counter
	Rejections     *prometheus.GaugeVec // by reason, from the last validated fetch
	Users          prometheus.Gauge
	Groups         prometheus.Gauge
	FetchDuration  prometheus.Histogram
	LastSuccess    prometheus.Gauge // unix seconds
	SnapshotTime   prometheus.Gauge // unix seconds of the live snapshot
	SnapshotSerial prometheus.Gauge
	// ReconcileDifferences counts users and groups a full read (the
	// reconcile) found different from the incrementally kept snapshot;
	// the reconcile's commit fixes them.
	ReconcileDifferences prometheus.Counter
	// Incremental counts polls by how the change reached the snapshot:
	// applied (only the changed records read) or full (everything read).
	Incremental *prometheus.CounterVec
}

// Extra are collectors other packages add to every registry New makes
// (the homes and Kubernetes passes: homes.Collectors,
// kube.DaemonCollectors), added from package main's init().
var Extra []prometheus.Collector

// New makes and registers the collectors.
func New() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		Syncs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "scimbridge_syncs_total", Help: "Sync attempts by result (committed, unchanged, refused, failed).",
		}, []string{"result"}),
		Failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "scimbridge_sync_failures_total", Help: "Sync attempts that failed to fetch, validate or write.",
		}),
		Rejections: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "scimbridge_rejections", Help: "Records or values left out by the last validation, by reason.",
		}, []string{"reason"}),
		Users: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "scimbridge_users", Help: "Users in the live snapshot.",
		}),
		Groups: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "scimbridge_groups", Help: "Groups in the live snapshot.",
		}),
		FetchDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "scimbridge_fetch_duration_seconds", Help: "Time to read the whole directory from the source.",
			Buckets: []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300},
		}),
		LastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "scimbridge_last_success_timestamp_seconds", Help: "When a sync last completed (committed or unchanged).",
		}),
		SnapshotTime: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "scimbridge_snapshot_created_timestamp_seconds", Help: "When the live snapshot was written; now minus this is its age.",
		}),
		SnapshotSerial: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "scimbridge_snapshot_serial", Help: "Serial number of the live snapshot.",
		}),
		ReconcileDifferences: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "scimbridge_reconcile_differences_total",
			Help: "Users and groups a full read found different from the incrementally kept snapshot (fixed by that read's commit); anything but 0 is a bug or a change the incremental read missed.",
		}),
		Incremental: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "scimbridge_changed_polls_total", Help: "Polls that found a change, by how it was read: applied (the changed records only) or full.",
		}, []string{"read"}),
	}
	m.Registry.MustRegister(m.Syncs, m.Failures, m.Rejections, m.Users, m.Groups, m.FetchDuration,
		m.LastSuccess, m.SnapshotTime, m.SnapshotSerial, m.ReconcileDifferences, m.Incremental,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.Registry.MustRegister(Extra...)
	return m
}

// SetRejections replaces the per-reason gauge with counts.
func (m *Metrics) SetRejections(counts map[string]int) {
	m.Rejections.Reset()
	for r, n := range counts {
		m.Rejections.WithLabelValues(r).Set(float64(n))
	}
}

// Serve serves /metrics on addr until ctx ends. addr must be loopback:
// the metrics are for the node's own agent.
func (m *Metrics) Serve(ctx context.Context, addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("metrics: %s is not a loopback address", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("metrics: %w", err)
	}
	return nil
}
