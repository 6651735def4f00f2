package main

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/herald-k8s/herald/config"
	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/silence"
)

// newTracker makes the incident tracker the configuration asks for, with
// its metrics registered with reg; muter holds notifications back
// (silences, annotations).
func newTracker(cfg config.Incidents, reg prometheus.Registerer, muter *silence.Muter, logger *slog.Logger) *incident.Tracker {
	coalesced := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "herald_notifications_coalesced_total",
		Help: "Incident changes merged into a held update instead of sent on their own (update pacing), by rule.",
	}, []string{"rule"})
	silenced := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "herald_notifications_silenced_total",
		Help: "Notifications held back by a silence, an annotation, a maintenance window or an inhibition, by rule.",
	}, []string{"rule"})
	tracker := incident.NewTracker(incident.Options{
		Now:         time.Now,
		HoldDown:    *cfg.ResolveHoldDown,
		Retention:   cfg.Retention,
		Flapping:    incident.FlapOptions{Starts: *cfg.Flapping.Starts, Window: cfg.Flapping.Window, Quiet: cfg.Flapping.Quiet},
		Coalesced:   func(rule string) { coalesced.WithLabelValues(rule).Inc() },
		Muter:       muter,
		MuteVersion: muter.Version,
		// Problems beyond it are counted in one overflow incident.
		MaxOpenPerNamespace: *cfg.MaxOpenPerNamespace,
		Muted: func(inc *incident.Incident, tr incident.Transition, m incident.Mute) {
			silenced.WithLabelValues(inc.Rule).Inc()
			logger.Debug("notification muted", "rule", inc.Rule, "incident", inc.ID, "transition", tr, "by", m.By, "until", m.Until)
		},
	})
	reg.MustRegister(coalesced, silenced,
		newByRuleGauge("herald_incidents_muted", "Open incidents whose notifications are held back now (silence, annotation, window, inhibition), by rule.", tracker.MutedByRule),
		newByRuleGauge("herald_open_incidents", "Open incidents, by rule.", tracker.OpenByRule),
		newByRuleGauge("herald_incidents_flapping", "Open incidents marked flapping (their problem keeps coming back), by rule.", tracker.FlappingByRule),
	)
	return tracker
}

// byRuleGauge exports a count by rule, read from the tracker at scrape
// time.
type byRuleGauge struct {
	byRule func() map[string]int
	desc   *prometheus.Desc
}

func newByRuleGauge(name, help string, byRule func() map[string]int) *byRuleGauge {
	return &byRuleGauge{byRule: byRule, desc: prometheus.NewDesc(name, help, []string{"rule"}, nil)}
}

func (g *byRuleGauge) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

func (g *byRuleGauge) Collect(ch chan<- prometheus.Metric) {
	for rule, n := range g.byRule() {
		ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, float64(n), rule)
	}
}
