package handlers

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the reconcile loop's Prometheus metrics.
type Metrics struct {
	Events           *prometheus.CounterVec
	RuleErrors       *prometheus.CounterVec
	Notifications    *prometheus.CounterVec
	ReconcileSeconds prometheus.Histogram
}

// NewMetrics makes the metrics and registers them with reg (nil: not
// registered, for tests).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_events_total", Help: "Informer events received, by kind.",
		}, []string{"kind"}),
		RuleErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_rule_evaluation_errors_total", Help: "Rule evaluations that failed (CEL runtime errors, template errors), by rule.",
		}, []string{"rule"}),
		Notifications: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_notifications_total", Help: "Incident notifications produced, by rule and transition.",
		}, []string{"rule", "transition"}),
		ReconcileSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "herald_reconcile_duration_seconds", Help: "Time to reconcile one object.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 8),
		}),
	}
	if reg != nil {
		reg.MustRegister(m.Events, m.RuleErrors, m.Notifications, m.ReconcileSeconds)
	}
	return m
}

// errorLog lets one log line per key through per interval, and counts
// what it held back.
type errorLog struct {
	interval time.Duration
	now      func() time.Time

	mu   sync.Mutex
	last map[string]time.Time
	held map[string]int
}

func newErrorLog(interval time.Duration, now func() time.Time) *errorLog {
	return &errorLog{interval: interval, now: now, last: map[string]time.Time{}, held: map[string]int{}}
}

// allow reports whether to log for key now, and how many were held back
// since the last line.
func (l *errorLog) allow(key string) (held int, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if last, seen := l.last[key]; seen && now.Sub(last) < l.interval {
		l.held[key]++
		return 0, false
	}
	held = l.held[key]
	l.last[key], l.held[key] = now, 0
	return held, true
}
