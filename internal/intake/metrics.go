package intake

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the intake's Prometheus metrics.
type Metrics struct {
	received prometheus.Counter
	refused  *prometheus.CounterVec
	alerts   *prometheus.CounterVec
	firing   prometheus.Gauge
	leading  prometheus.Gauge
}

// refusalReasons and alertOutcomes are every label value, so that each
// series exists (at 0) from the start and an alert on it sees a change.
var (
	refusalReasons = []string{"method", "unauthorized", "not_leader", "too_large", "malformed", "version", "schema", "not_recorded", "full", "busy"}
	alertOutcomes  = []string{"mapped", "unmapped", "deduplicated", "resolved", "looped", "over_cap"}
)

// NewMetrics makes the metrics and registers them with reg (nil: not
// registered, for tests).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		received: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "herald_intake_alerts_received_total", Help: "Alerts in the Alertmanager webhook messages herald read (refused messages not counted).",
		}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_intake_requests_refused_total", Help: "Alertmanager webhook requests refused, by reason: method, unauthorized, not_leader (a follower; Alertmanager retries), too_large, malformed, version, schema, not_recorded (not in the ledger in time; Alertmanager retries), full (MaxFiring alerts fire already), busy (too many requests at once; Alertmanager retries).",
		}, []string{"reason"}),
		alerts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_intake_alerts_total", Help: "Alerts taken in, by outcome: mapped (to a cluster object), unmapped (routed by labels), deduplicated (already known: a repeat or retry), resolved, looped (herald's own alert come back: dropped), over_cap (not taken: too many fire already).",
		}, []string{"outcome"}),
		firing: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "herald_intake_alerts_firing", Help: "Alerts taken in that fire now.",
		}),
		leading: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "herald_intake_accepting", Help: "1 while this replica takes alerts in (it leads).",
		}),
	}
	for _, r := range refusalReasons {
		m.refused.WithLabelValues(r)
	}
	for _, o := range alertOutcomes {
		m.alerts.WithLabelValues(o)
	}
	if reg != nil {
		reg.MustRegister(m.received, m.refused, m.alerts, m.firing, m.leading)
	}
	return m
}
