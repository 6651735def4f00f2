package enrich

import (
	"sync"
	"time"

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

// warnings lets one warning per cause through per interval: a kubelet
// that is down must not fill the log.
type warnings struct {
	interval time.Duration
	now      func() time.Time
	mu       sync.Mutex
	last     map[string]time.Time
}

func newWarnings(interval time.Duration, now func() time.Time) *warnings {
	return &warnings{interval: interval, now: now, last: map[string]time.Time{}}
}

func (w *warnings) allow(cause string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.now()
	if last, ok := w.last[cause]; ok && now.Sub(last) < w.interval {
		return false
	}
	w.last[cause] = now
	return true
}
