package handlers

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/herald-k8s/herald/internal/route"
	"github.com/herald-k8s/herald/internal/rules"
)

// route decides where each finding's notifications go: the routes in
// force, matched on the object's namespace, labels and team; else the
// rule's sinks, with its channel or one the namespace's annotation chose
// among the configured ones. Only objects with findings get here, so
// the lookups cost nothing on a healthy cluster.
func (c *Controller) route(obj runtime.Object, findings []rules.Finding) {
	if len(findings) == 0 {
		return
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	c.decide(c.subject(m), findings)
}

// routeDetached routes findings that have no object in the cache (alerts
// from outside): by the namespace each names, and its team.
func (c *Controller) routeDetached(findings []rules.Finding) {
	for i := range findings {
		ns := findings[i].Object.Namespace
		c.decide(c.subject(&metav1.ObjectMeta{Namespace: ns}), findings[i:i+1])
	}
}

// subject is what routes match of the object m.
func (c *Controller) subject(m metav1.Object) route.Subject {
	table := c.routes.Load()
	var subject route.Subject
	if ns := m.GetNamespace(); ns != "" {
		subject.Namespace = ns
		if labels, ok := c.Watcher.NamespaceLabels(ns); ok {
			subject.NamespaceLabels = route.KnownLabels(labels)
		}
		if c.RouteByNamespace {
			subject.AnnotatedChannel = c.Watcher.NamespaceAnnotation(ns, route.AnnotationChannel)
		}
	}
	subject.Labels = m.GetLabels()
	if !table.Empty() {
		subject.Team = c.Watcher.Team(m)
	}
	return subject
}

// decide sets where each finding goes.
func (c *Controller) decide(subject route.Subject, findings []rules.Finding) {
	table := c.routes.Load()
	for i := range findings {
		f := &findings[i]
		s := subject.WithFinding(*f)
		d := table.Decide(s)
		f.Sinks, f.Channel, f.Dest, f.Mentions, f.Route = d.Sinks, d.Channel, d.Dest, d.Mentions, strings.Join(d.Routes, ",")
		f.RouteLinks = d.Links
		if d.Refused != "" {
			c.Metrics.RoutingRefused.Inc()
			if _, ok := c.refusals.Allow(s.Namespace); ok {
				c.Logger.Warn("annotation not followed; the rule's sinks apply", "namespace", s.Namespace, "why", d.Refused)
			}
		}
	}
}

// SetRoutes puts new routes in force (a configuration reload); incidents
// follow them from their next reconcile.
func (c *Controller) SetRoutes(t *route.Table) { c.routes.Store(t) }
