package alertmanager

import (
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/links"
	"github.com/herald-k8s/herald/sinks"
)

// Alert is Alertmanager's postableAlert (its API v2 OpenAPI schema):
// labels identify the alert, annotations describe it.
type Alert struct {
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations,omitempty"`
	StartsAt     time.Time         `json:"startsAt,omitzero"`
	EndsAt       time.Time         `json:"endsAt,omitzero"`
	GeneratorURL string            `json:"generatorURL,omitempty"`
}

// maxAnnotation bounds one annotation: Alertmanager keeps every alert in
// memory and its receivers (e-mail, chat) show them whole.
const maxAnnotation = 4 << 10

// alert is n as Alertmanager sees it. The labels name the problem and
// never change while the incident is open (Alertmanager identifies an
// alert by them): the reason as alertname, severity, where, the rule,
// the cluster, then the sink's and the rule's own labels, which cannot
// replace herald's, and last the object's, which replaces nothing: its
// name comes from the object (an Event's regarding kind is whatever its
// author wrote), so a kind of "Severity" or "Team" must not re-route the
// alert. An open incident has no end: Alertmanager resolves it
// resolve_timeout after the last post, which the refresh keeps away; a
// resolved one ends when herald saw it resolve.
func (s *Sink) alert(n incident.Notification) Alert {
	inc := n.Incident
	labels := map[string]string{}
	maps.Copy(labels, s.opts.Labels)
	maps.Copy(labels, s.opts.RuleLabels[inc.Rule])
	set := func(k, v string) {
		if v != "" {
			labels[k] = v
		}
	}
	set("alertname", inc.Reason)
	if labels["alertname"] == "" {
		labels["alertname"] = inc.Rule
	}
	set("severity", inc.Severity)
	set("namespace", inc.Object.Namespace)
	set("container", inc.Container)
	set("rule", inc.Rule)
	set("cluster", s.opts.ClusterName)
	if k, v := objectLabel(inc.Object.Kind, inc.Object.Name); v != "" {
		if _, taken := labels[k]; !taken {
			labels[k] = v
		}
	}

	annotations := map[string]string{}
	note := func(k, v string) {
		if v != "" {
			annotations[k] = sinks.Head(v, maxAnnotation)
		}
	}
	note("summary", inc.Title)
	note("description", inc.Text)
	note("runbook_url", inc.RunbookURL)
	note("links", linksText(inc.Links))
	note("change", n.Change)
	note("herald_incident", inc.ID)
	if a := inc.Ack; a != nil {
		// Who took it on, on every post while it is open (the alert is
		// replaced whole, and the refresh restates the last one): an
		// acknowledged incident is still firing, and stays so here.
		note("acknowledged_by", ackedBy(*a))
	}
	if c := n.Context; c != nil {
		note("hint", c.Hint)
		if text := contextText(c); text != "" {
			annotations["context"] = sinks.Tail(text, maxAnnotation) // the last log lines matter most
		}
	}
	if c := n.Changes; c != nil {
		// What changed just before it began, one change a line (the
		// first lines matter most: the rollouts), and the command that
		// undoes the rollouts. On every post, as the summary: the alert
		// is replaced whole, and a resolved one's receivers quote it.
		note("what_changed", strings.Join(c.Lines, "\n"))
		if !sinks.NothingChanged(c) {
			note("undo", c.Undo)
		}
	}
	a := Alert{Labels: labels, Annotations: annotations, StartsAt: inc.FirstSeen.UTC(), GeneratorURL: s.opts.GeneratorURL}
	if n.Transition == incident.Resolved {
		a.EndsAt = n.Time.UTC()
		if !a.EndsAt.After(a.StartsAt) { // Alertmanager rejects an end before the start
			a.EndsAt = a.StartsAt.Add(time.Millisecond)
		}
	}
	return a
}

// ackedBy is who acknowledged, for people and for tools: "ana
// (slack:U0ANA)", or the actor alone when it has no name.
func ackedBy(a incident.Ack) string {
	name, by := sinks.AckName(a), strings.TrimSpace(a.By)
	if by == "" || name == by {
		return name
	}
	return name + " (" + by + ")"
}

// objectLabel is the label that names the incident's object: the kind,
// lower-case, for the kinds herald knows (pod="api-1"), and "object" with
// kind and name for any other (a custom resource of a CEL rule).
func objectLabel(kind, name string) (label, value string) {
	switch kind {
	case "Pod", "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob",
		"Node", "Namespace", "PersistentVolume", "PersistentVolumeClaim", "Service",
		"HorizontalPodAutoscaler", "Ingress":
		return strings.ToLower(kind), name
	}
	if kind == "" || name == "" {
		return "object", name
	}
	return "object", kind + "/" + name
}

// contextText is the crash context as plain text: the log tail, then the
// pod's warning events.
func contextText(c *incident.Context) string {
	var b strings.Builder
	if l := c.Logs; l != nil && len(l.Lines) > 0 {
		fmt.Fprintf(&b, "Last log lines of %s:\n%s\n", l.Container, strings.Join(l.Lines, "\n"))
	}
	for _, e := range c.Events {
		fmt.Fprintln(&b, sinks.EventLine(e))
	}
	if c.Unavailable != "" {
		fmt.Fprintf(&b, "Context incomplete: %s\n", c.Unavailable)
	}
	return strings.TrimSpace(b.String())
}

// linksText is the incident's links, one "name: url" a line (an
// annotation's key must be a label name, which a link's name need not be).
func linksText(ls []links.Link) string {
	lines := make([]string, len(ls))
	for i, l := range ls {
		lines[i] = l.Name + ": " + l.URL
	}
	return strings.Join(lines, "\n")
}
