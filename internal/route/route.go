// Package route decides which sinks, and where in each, an incident's
// notifications go: the configuration's routes: in order, first match
// wins unless it continues, else the rule's own sinks. Everything an
// object contributes (its namespace, labels, team annotation) only selects
// among the routes and destinations the configuration names; no value
// taken from an object ever becomes a destination.
package route

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/herald-k8s/herald/config"
	"github.com/herald-k8s/herald/internal/links"
	"github.com/herald-k8s/herald/internal/rules"
)

// Subject is what routes match on: an incident's object and the rule that
// found its problem.
type Subject struct {
	Namespace string
	// NamespaceLabels are the namespace's labels (nil: unknown).
	NamespaceLabels map[string]string
	// Labels are the object's own.
	Labels map[string]string
	// Team is the herald.io/team of the object, its workload or its
	// namespace ("" when none says).
	Team                   string
	Rule, Severity, Reason string
	// RuleSinks and RuleChannel are where the rule sends when no route
	// takes the incident.
	RuleSinks   []string
	RuleChannel string
	// AnnotatedChannel is the namespace's herald.io/slack-channel: used
	// when no route matched and the rule names no channel, and only if
	// the configuration names that channel somewhere.
	AnnotatedChannel string
}

// WithFinding is s for one finding: its rule, severity and reason, and
// where the rule sends it when no route takes it.
func (s Subject) WithFinding(f rules.Finding) Subject {
	s.Rule, s.Severity, s.Reason, s.RuleSinks, s.RuleChannel = f.Rule, f.Severity, f.Reason, f.Sinks, f.Channel
	return s
}

// KnownLabels are the labels of a namespace herald knows, as routes match
// them: never nil, so that a namespace without labels is told apart from
// one whose labels are unknown (nil: no namespace selector matches).
func KnownLabels(labels map[string]string) map[string]string {
	if labels == nil {
		return map[string]string{}
	}
	return labels
}

// Decision is where an incident's notifications go.
type Decision struct {
	// Routes that matched, in order ("" when none did: the rule's sinks).
	Routes []string
	Sinks  []string
	// Dest is, by sink, the Slack channel or named destination a route
	// chose; Channel the rule's Slack channel (or, when no route matched,
	// one an allowed annotation chose), for a Slack sink a route gave no
	// channel.
	Dest     map[string]string
	Channel  string
	Mentions []string
	// Links are the matching routes' links, in order.
	Links []links.Set
	// Refused says why an annotation's channel was not used ("" if it
	// was, or there was none).
	Refused string
}

// Table is the compiled routes: of one configuration.
type Table struct {
	routes []compiled
	// channels are the Slack channels the configuration names: the only
	// ones a namespace annotation may choose.
	channels map[string]bool
}

type compiled struct {
	config.Route
	nsSelector, selector labels.Selector
	links                links.Set
}

// Compile checks and compiles cfg's routes; errors carry the file's
// positions.
func Compile(cfg *config.Config) (*Table, config.Errors) {
	t := &Table{channels: configuredChannels(cfg)}
	var errs config.Errors
	for i, r := range cfg.Routes {
		p := fmt.Sprintf("routes[%d].match", i)
		c := compiled{Route: r}
		var err error
		if c.nsSelector, err = parseSelector(r.Match.NamespaceLabels); err != nil {
			errs = append(errs, cfg.ErrorAt(p+".namespaceLabels", "bad label selector: %v", err))
		}
		if c.selector, err = parseSelector(r.Match.Labels); err != nil {
			errs = append(errs, cfg.ErrorAt(p+".labels", "bad label selector: %v", err))
		}
		var linkErrs config.Errors
		c.links, linkErrs = links.Compile(cfg, fmt.Sprintf("routes[%d].links", i), r.Links)
		errs = append(errs, linkErrs...)
		t.routes = append(t.routes, c)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return t, nil
}

func parseSelector(s string) (labels.Selector, error) {
	if s == "" {
		return nil, nil
	}
	return labels.Parse(s)
}

// NeedsNamespaces reports whether a route matches on namespace labels or
// could match a namespace's team, so the Namespace cache is needed.
func (t *Table) NeedsNamespaces() bool {
	return t != nil && slices.ContainsFunc(t.routes, func(c compiled) bool { return c.nsSelector != nil || len(c.Match.Teams) > 0 })
}

// Empty reports whether there are no routes: every incident goes to its
// rule's sinks.
func (t *Table) Empty() bool { return t == nil || len(t.routes) == 0 }

// Decide returns where s's notifications go.
func (t *Table) Decide(s Subject) Decision {
	var d Decision
	if t != nil {
		for _, r := range t.routes {
			if r.why(s) != "" {
				continue
			}
			d.take(r.Route)
			if len(r.links) > 0 {
				d.Links = append(d.Links, r.links)
			}
			if !r.Continue {
				break
			}
		}
	}
	// The rule's own channel stands wherever a route names none for a
	// Slack sink: the operator chose it for this rule.
	d.Channel = s.RuleChannel
	if len(d.Routes) == 0 {
		d.Sinks = slices.Clone(s.RuleSinks)
		switch a := s.AnnotatedChannel; {
		case a == "" || d.Channel != "":
		case t != nil && t.channels[a]:
			d.Channel = a
		default:
			d.Refused = fmt.Sprintf("the namespace's %s %q is not a channel the configuration names (a sink's, a rule's or a route's channel)", AnnotationChannel, a)
		}
	}
	return d
}

// AnnotationChannel on a namespace chooses, among the Slack channels the
// configuration names, where its incidents go when no route takes them.
const AnnotationChannel = "herald.io/slack-channel"

func configuredChannels(cfg *config.Config) map[string]bool {
	ch := map[string]bool{}
	for _, s := range cfg.Sinks {
		if s.Slack != nil && s.Slack.Channel != "" {
			ch[s.Slack.Channel] = true
		}
	}
	for _, r := range cfg.Rules {
		if r.Channel != "" {
			ch[r.Channel] = true
		}
	}
	for _, r := range cfg.Routes {
		for _, to := range r.To {
			if to.Channel != "" {
				ch[to.Channel] = true
			}
		}
	}
	return ch
}

// take adds a matching route's targets; an earlier route's choice for a
// sink stands, and a target not taken brings no mentions (they would
// ping another team's people in this one's channel).
func (d *Decision) take(r config.Route) {
	d.Routes = append(d.Routes, r.Name)
	for _, to := range r.To {
		if slices.Contains(d.Sinks, to.Sink) {
			continue
		}
		d.Sinks = append(d.Sinks, to.Sink)
		if dest := cmpOr(to.Channel, to.Destination); dest != "" {
			if d.Dest == nil {
				d.Dest = map[string]string{}
			}
			d.Dest[to.Sink] = dest
		}
		for _, m := range to.Mention {
			if !slices.Contains(d.Mentions, m) {
				d.Mentions = append(d.Mentions, m)
			}
		}
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Explain says, route by route, whether s matches and why not: what
// herald test --route prints.
func (t *Table) Explain(s Subject) []string {
	var out []string
	taken := false
	for _, r := range t.routes {
		switch why := r.why(s); {
		case taken:
			out = append(out, fmt.Sprintf("route %s: not reached (an earlier route matched without continue)", r.Name))
		case why != "":
			out = append(out, fmt.Sprintf("route %s: no match: %s", r.Name, why))
		default:
			out = append(out, fmt.Sprintf("route %s: matches%s", r.Name, map[bool]string{true: " (continue)", false: ""}[r.Continue]))
			taken = !r.Continue
		}
	}
	return out
}

// why returns "" when s matches the route, else the first reason it does
// not.
func (c compiled) why(s Subject) string {
	m := c.Match
	switch {
	case len(m.Namespaces) > 0 && !slices.ContainsFunc(m.Namespaces, func(p string) bool { ok, _ := path.Match(p, s.Namespace); return ok }):
		return fmt.Sprintf("namespace %q is not one of %s", s.Namespace, strings.Join(m.Namespaces, ", "))
	case c.nsSelector != nil && s.NamespaceLabels == nil:
		return fmt.Sprintf("namespace %q's labels are not known", s.Namespace)
	case c.nsSelector != nil && !c.nsSelector.Matches(labels.Set(s.NamespaceLabels)):
		return fmt.Sprintf("namespace labels do not match %q", m.NamespaceLabels)
	case c.selector != nil && !c.selector.Matches(labels.Set(s.Labels)):
		return fmt.Sprintf("object labels do not match %q", m.Labels)
	case len(m.Teams) > 0 && !slices.Contains(m.Teams, s.Team):
		if s.Team == "" {
			return fmt.Sprintf("no %s annotation on the object, its workload or its namespace", config.AnnotationTeam)
		}
		return fmt.Sprintf("team %q is not one of %s", s.Team, strings.Join(m.Teams, ", "))
	case len(m.Rules) > 0 && !slices.Contains(m.Rules, s.Rule):
		return fmt.Sprintf("rule %s is not one of %s", s.Rule, strings.Join(m.Rules, ", "))
	case len(m.Severities) > 0 && !slices.Contains(m.Severities, s.Severity):
		return fmt.Sprintf("severity %s is not one of %s", s.Severity, strings.Join(m.Severities, ", "))
	case len(m.Reasons) > 0 && !slices.Contains(m.Reasons, s.Reason):
		return fmt.Sprintf("reason %s is not one of %s", s.Reason, strings.Join(m.Reasons, ", "))
	}
	return ""
}
