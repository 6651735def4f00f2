package main

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	eventsv1 "k8s.io/api/events/v1"

	"github.com/herald-k8s/herald/internal/ratelog"
	"github.com/herald-k8s/herald/internal/rules"
	"github.com/herald-k8s/herald/sinks"
)

// ignoredEvents counts and logs the Warning Events whose regarding object
// the warning-events detector does not believe (an Event in one namespace
// naming an object in another, or a kind herald does not know). Such an
// Event is someone trying to page another team, or a broken controller:
// either way an operator wants to see it, but a tenant creating Events in
// a loop must not flood herald's log, so the log says it once per cause
// (reason and the Event's namespace) every ten minutes, with how many it
// held back; the counter counts them all.
type ignoredEvents struct {
	total  *prometheus.CounterVec
	limit  *ratelog.Limiter
	logger *slog.Logger
}

func newIgnoredEvents(reg prometheus.Registerer, logger *slog.Logger) *ignoredEvents {
	g := &ignoredEvents{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_events_ignored_total",
			Help: "Evaluations of Warning Events the warning-events detector ignored, by reason: foreign-namespace (the regarding object is in another namespace than the Event, or is cluster-scoped and the Event outside default/kube-system), unknown-kind, invalid-reference (a regarding name or uid no object can have).",
		}, []string{"reason"}),
		limit:  ratelog.New(10*time.Minute, time.Now),
		logger: logger,
	}
	for _, why := range []string{rules.IgnoredForeignNamespace, rules.IgnoredUnknownKind, rules.IgnoredInvalidReference} {
		g.total.WithLabelValues(why) // present at 0: an alert on its rate needs the series
	}
	reg.MustRegister(g.total)
	return g
}

// install makes set report to g (at start and for each reloaded set).
func (g *ignoredEvents) install(set *rules.Set) { set.OnIgnoredEvent(g.observe) }

func (g *ignoredEvents) observe(why string, ev *eventsv1.Event) {
	g.total.WithLabelValues(why).Inc()
	held, ok := g.limit.Allow(why + "\x00" + ev.Namespace)
	if !ok {
		return
	}
	r := ev.Regarding
	// Whoever wrote the Event chose these, at any length: a log line
	// carries the start of each.
	cut := func(s string) string { return sinks.Head(s, 256) }
	g.logger.Warn("ignoring a Warning Event: it may not speak for the object it names",
		"reason", why, "event", ev.Namespace+"/"+ev.Name, "eventReason", cut(ev.Reason),
		"regarding", cut(r.Kind+" "+r.Namespace+"/"+r.Name), "regardingAPIVersion", cut(r.APIVersion),
		"reportingController", cut(ev.ReportingController), "heldBack", held)
}
