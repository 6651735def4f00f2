package enrich

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the context stage's Prometheus metrics.
type Metrics struct {
	Requests *prometheus.CounterVec
	Seconds  *prometheus.HistogramVec
	Skipped  *prometheus.CounterVec
}

// NewMetrics makes the metrics and registers them with reg (nil: not
// registered, for tests).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_context_requests_total", Help: "API requests for crash context, by kind (logs, events) and result (ok, timeout, error, forbidden).",
		}, []string{"kind", "result"}),
		Seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "herald_context_seconds", Help: "Time of one API request for crash context, by kind.",
			Buckets: prometheus.ExponentialBuckets(0.002, 3, 8),
		}, []string{"kind"}),
		Skipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_context_skipped_total", Help: "Notifications sent without gathering context because of the budget, by cause.",
		}, []string{"cause"}),
	}
	if reg != nil {
		reg.MustRegister(m.Requests, m.Seconds, m.Skipped)
	}
	return m
}
