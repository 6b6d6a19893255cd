package metrics

import "github.com/prometheus/client_golang/prometheus"

// SourceStats are the identity source's request counters since start.
type SourceStats struct{ Requests, Retries, Bytes int64 }

// WatchSource exports the source's counters (read through stats at each
// scrape), the cheap checks' outcomes and the build.
func (m *Metrics) WatchSource(version string, stats func() SourceStats) {
	m.Registry.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "scimbridge_source_requests_total", Help: "HTTP requests made to the identity source (retries included).",
		}, func() float64 { return float64(stats().Requests) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "scimbridge_source_retries_total", Help: "Requests to the identity source that were retried (429, 503, 502, 504, network).",
		}, func() float64 { return float64(stats().Retries) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "scimbridge_source_response_bytes_total", Help: "Bytes of response bodies read from the identity source.",
		}, func() float64 { return float64(stats().Bytes) }),
	)
	m.Checks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "scimbridge_change_checks_total", Help: "Cheap polls between full reads, by outcome (unchanged, changed, unavailable, failed).",
	}, []string{"result"})
	info := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "scimbridge_build_info", Help: "Always 1; the version label is syncd's.",
	}, []string{"version"})
	info.WithLabelValues(version).Set(1)
	m.Registry.MustRegister(m.Checks, info)
}
