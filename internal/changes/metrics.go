package changes

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the change record's Prometheus metrics.
type Metrics struct {
	// Sections counts the "What changed" sections added to notifications,
	// by what they found: rollout, config (a ConfigMap or Secret only),
	// none (no change in the window), unknown (herald started watching
	// within the window, or keeps no record of the workload).
	Sections *prometheus.CounterVec
}

// NewMetrics makes the metrics and registers them with reg (nil: not
// registered, for tests), with gauges of record's size when it is not nil.
func NewMetrics(reg prometheus.Registerer, record *Changes) *Metrics {
	m := &Metrics{
		Sections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_changes_sections_total", Help: "\"What changed\" sections added to notifications, by what they found (rollout, config, none, unknown).",
		}, []string{"found"}),
	}
	if reg == nil {
		return m
	}
	reg.MustRegister(m.Sections)
	if record != nil {
		reg.MustRegister(
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "herald_changes_workloads", Help: "Workloads whose rollouts the change record keeps."},
				func() float64 { w, _, _ := record.Size(); return float64(w) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "herald_changes_config_objects", Help: "ConfigMaps and Secrets whose change times the change record keeps (metadata only)."},
				func() float64 { _, o, _ := record.Size(); return float64(o) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "herald_changes_refused", Help: "Workloads, ConfigMaps and Secrets not recorded because the record is full (maxWorkloads, maxObjects)."},
				func() float64 { _, _, r := record.Size(); return float64(r) }),
		)
	}
	return m
}

// Size says how many workloads and objects the record keeps, and how many
// it refused.
func (c *Changes) Size() (workloads, objects, refused int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.workloads), len(c.objects), c.refused + c.refusedObjects
}
