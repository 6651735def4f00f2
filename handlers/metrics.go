package handlers

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
)

// Metrics are the reconcile loop's Prometheus metrics.
type Metrics struct {
	Queue            workqueue.MetricsProvider
	Events           *prometheus.CounterVec
	RuleErrors       *prometheus.CounterVec
	LinkErrors       *prometheus.CounterVec
	FindingsExcluded *prometheus.CounterVec
	Notifications    *prometheus.CounterVec
	ReconcileSeconds prometheus.Histogram
	// Routed counts notifications by the routes that chose their sinks
	// ("" : the rule's own); RoutingRefused the namespace annotations
	// naming a channel the configuration does not.
	Routed         *prometheus.CounterVec
	RoutingRefused prometheus.Counter
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
		LinkErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_link_errors_total", Help: "Links left out of notifications (a template that failed, or filled a URL that is not http or https), by rule.",
		}, []string{"rule"}),
		FindingsExcluded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_findings_excluded_total", Help: "Findings a rule's exclude block dropped, per evaluation, by rule and by what matched (names, containers, namespaces, labels, logPattern, when).",
		}, []string{"rule", "by"}),
		Notifications: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_notifications_total", Help: "Incident notifications produced, by rule and transition.",
		}, []string{"rule", "transition"}),
		ReconcileSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "herald_reconcile_duration_seconds", Help: "Time to reconcile one object.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 8),
		}),
		Routed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_notifications_routed_total", Help: "Incident notifications produced, by the routes that chose their sinks (empty: the rule's own sinks).",
		}, []string{"route"}),
		RoutingRefused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "herald_routing_annotation_refused_total", Help: "Reconciles where a namespace's herald.io/slack-channel named a channel the configuration does not name (not followed).",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.Events, m.RuleErrors, m.LinkErrors, m.FindingsExcluded, m.Notifications, m.ReconcileSeconds, m.Routed, m.RoutingRefused)
	}
	m.Queue = newQueueMetrics(reg)
	return m
}

// queueMetrics makes client-go's work queue report to Prometheus (depth,
// adds, latency, work duration, retries) without client-go's global
// provider.
type queueMetrics struct {
	depth                   *prometheus.GaugeVec
	adds, retries           *prometheus.CounterVec
	latency, workDuration   *prometheus.HistogramVec
	unfinished, longestProc *prometheus.GaugeVec
}

func newQueueMetrics(reg prometheus.Registerer) *queueMetrics {
	buckets := prometheus.ExponentialBuckets(0.00001, 4, 12)
	q := &queueMetrics{
		depth:        prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "herald_workqueue_depth", Help: "Keys waiting in the work queue."}, []string{"name"}),
		adds:         prometheus.NewCounterVec(prometheus.CounterOpts{Name: "herald_workqueue_adds_total", Help: "Keys added to the work queue."}, []string{"name"}),
		retries:      prometheus.NewCounterVec(prometheus.CounterOpts{Name: "herald_workqueue_retries_total", Help: "Keys requeued after a failed reconcile."}, []string{"name"}),
		latency:      prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "herald_workqueue_queue_duration_seconds", Help: "Time a key waits before a worker takes it.", Buckets: buckets}, []string{"name"}),
		workDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "herald_workqueue_work_duration_seconds", Help: "Time a worker spends on a key.", Buckets: buckets}, []string{"name"}),
		unfinished:   prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "herald_workqueue_unfinished_work_seconds", Help: "Work in progress not yet finished, in seconds."}, []string{"name"}),
		longestProc:  prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "herald_workqueue_longest_running_processor_seconds", Help: "How long the longest running worker has been on its key."}, []string{"name"}),
	}
	if reg != nil {
		reg.MustRegister(q.depth, q.adds, q.retries, q.latency, q.workDuration, q.unfinished, q.longestProc)
	}
	return q
}

func (q *queueMetrics) NewDepthMetric(name string) workqueue.GaugeMetric {
	return q.depth.WithLabelValues(name)
}
func (q *queueMetrics) NewAddsMetric(name string) workqueue.CounterMetric {
	return q.adds.WithLabelValues(name)
}
func (q *queueMetrics) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return q.latency.WithLabelValues(name)
}
func (q *queueMetrics) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return q.workDuration.WithLabelValues(name)
}
func (q *queueMetrics) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return q.unfinished.WithLabelValues(name)
}
func (q *queueMetrics) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return q.longestProc.WithLabelValues(name)
}
func (q *queueMetrics) NewRetriesMetric(name string) workqueue.CounterMetric {
	return q.retries.WithLabelValues(name)
}
