package sinks

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the dispatcher's per-sink Prometheus metrics.
type Metrics struct {
	Sent        *prometheus.CounterVec
	Failed      *prometheus.CounterVec
	Retries     *prometheus.CounterVec
	Dropped     *prometheus.CounterVec
	GaveUp      *prometheus.CounterVec
	Digests     *prometheus.CounterVec
	Refreshes   *prometheus.CounterVec
	SendSeconds *prometheus.HistogramVec
	// Misrouted counts notifications a destination refused that went to
	// the sink's default instead (a Slack channel gone or not joined).
	Misrouted *prometheus.CounterVec
	// Fenced counts notifications not sent because this replica's hold
	// on the leader lease had ended by its own clock (the next leader
	// sends them: the ledger keeps them undelivered).
	Fenced *prometheus.CounterVec

	reg  prometheus.Registerer
	mu   sync.Mutex
	seen map[string]bool
}

// NewMetrics makes the metrics and registers them with reg (nil: not
// registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Sent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_sink_sent_total", Help: "Notifications a sink accepted.",
		}, []string{"sink"}),
		Failed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_sink_failed_total", Help: "Failed sends, by kind: transient (retried) or permanent (not retried).",
		}, []string{"sink", "kind"}),
		Retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_sink_retries_total", Help: "Sends retried after a transient failure.",
		}, []string{"sink"}),
		Dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_sink_dropped_total", Help: "Update/repeat notifications dropped because the sink's queue was full.",
		}, []string{"sink"}),
		Fenced: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_sink_fenced_total", Help: "Notifications not sent because this replica's hold on the leader lease had ended by its own clock.",
		}, []string{"sink"}),
		GaveUp: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_sink_gave_up_total", Help: "Notifications abandoned after the sink's maximum age.",
		}, []string{"sink"}),
		Digests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_sink_digests_total", Help: "Digest messages sent to ride out a storm under the rate limit.",
		}, []string{"sink"}),
		Refreshes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_sink_refreshes_total", Help: "Open incidents re-sent to keep them open at a receiver that forgets (Alertmanager).",
		}, []string{"sink"}),
		SendSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "herald_sink_send_duration_seconds", Help: "Time of one send attempt.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 8),
		}, []string{"sink"}),
		Misrouted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_sink_misrouted_total", Help: "Notifications sent to the sink's default destination because the routed one refused them, by Slack's reason (channel_not_found, not_in_channel, is_archived).",
		}, []string{"sink", "reason"}),
		reg: reg, seen: map[string]bool{},
	}
	if reg != nil {
		reg.MustRegister(m.Sent, m.Failed, m.Retries, m.Dropped, m.GaveUp, m.Digests, m.Refreshes, m.SendSeconds, m.Misrouted, m.Fenced)
	}
	return m
}

// watchQueue exports a sink's queue depth and bound.
func (m *Metrics) watchQueue(sink string, depth, capacity func() float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.reg == nil || m.seen[sink] {
		return
	}
	m.seen[sink] = true
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "herald_sink_queue_depth", Help: "Notifications waiting for the sink.",
		ConstLabels: prometheus.Labels{"sink": sink},
	}, depth), prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "herald_sink_queue_capacity", Help: "How many notifications the sink's queue holds (queueSize); past it, updates are dropped.",
		ConstLabels: prometheus.Labels{"sink": sink},
	}, capacity))
}
