package main

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	eventsv1 "k8s.io/api/events/v1"

	"github.com/herald-k8s/herald/internal/ratelog"
	"github.com/herald-k8s/herald/internal/rules"
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
			Help: "Evaluations of Warning Events the warning-events detector ignored, by reason: foreign-namespace (the regarding object is in another namespace than the Event, or is cluster-scoped and the Event outside default/kube-system), unknown-kind.",
		}, []string{"reason"}),
		limit:  ratelog.New(10*time.Minute, time.Now),
		logger: logger,
	}
	for _, why := range []string{rules.IgnoredForeignNamespace, rules.IgnoredUnknownKind} {
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
	g.logger.Warn("ignoring a Warning Event: it may not speak for the object it names",
		"reason", why, "event", ev.Namespace+"/"+ev.Name, "eventReason", ev.Reason,
		"regarding", r.Kind+" "+r.Namespace+"/"+r.Name, "regardingAPIVersion", r.APIVersion,
		"reportingController", ev.ReportingController, "heldBack", held)
}
