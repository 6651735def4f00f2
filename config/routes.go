package config

import (
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"
)

// The routes: block of the schema: which team hears of what. Routes are
// evaluated in order for every new incident; the first that matches
// decides where its notifications go (continue: true goes on to the next
// one too, as in Alertmanager's routing tree). An incident no route
// matches goes to its rule's sinks. A route only ever chooses among the
// sinks and destinations this file configures: an object's labels and
// annotations can select a route, never name a destination.
type Route struct {
	// Name says which route matched, in logs and in herald test --route.
	Name  string     `yaml:"name"`
	Match RouteMatch `yaml:"match"`
	// To lists the sinks the incident goes to, each with its overrides.
	To []RouteTarget `yaml:"to"`
	// Continue goes on to the next routes after this one matched: the
	// incident then also goes where they send it.
	Continue bool `yaml:"continue"`
	// Links are put on the messages of the incidents this route takes,
	// after the rule's own.
	Links []Link `yaml:"links"`
}

// RouteMatch is what an incident must have for a route to take it: every
// field set must match (an empty match takes everything); within a list,
// any entry may.
type RouteMatch struct {
	// Namespaces are globs on the namespace's name (path.Match syntax).
	Namespaces []string `yaml:"namespaces"`
	// NamespaceLabels is a label selector on the namespace (kubectl -l).
	NamespaceLabels string `yaml:"namespaceLabels"`
	// Labels is a label selector on the object (a pod carries its
	// workload's template labels).
	Labels string `yaml:"labels"`
	// Teams match the ownership annotation (herald.io/team) of the
	// object, of its workload, or else of its namespace.
	Teams      []string `yaml:"teams"`
	Rules      []string `yaml:"rules"`
	Severities []string `yaml:"severities"`
	Reasons    []string `yaml:"reasons"`
}

// RouteTarget is one sink a route sends to, and what it changes there.
type RouteTarget struct {
	// Sink is a configured sink's name.
	Sink string `yaml:"sink"`
	// Channel (Slack) replaces the sink's default channel and the rule's.
	Channel string `yaml:"channel"`
	// Destination (PagerDuty, Teams, webhook) names one of the sink's
	// destinations: a routing key or URL the sink's configuration holds.
	Destination string `yaml:"destination"`
	// Mention (Slack) names who is notified in the message: user group
	// IDs (S…) or user IDs (U… or W…), as Slack shows them in a
	// profile's "Copy member ID".
	Mention []string `yaml:"mention"`
}

// AnnotationTeam is the ownership annotation routes match with teams:.
const AnnotationTeam = "herald.io/team"

// slackChannelRE is a channel name (#name, lower case, at most 80) or a
// channel ID (C…, G…).
var slackChannelRE = regexp.MustCompile(`^(#[a-z0-9][a-z0-9._-]{0,79}|[CG][A-Z0-9]{8,})$`)

// slackMentionRE is a user group (S…) or user (U…, W…) ID.
var slackMentionRE = regexp.MustCompile(`^[SUW][A-Z0-9]{8,}$`)

// HasCatchAll reports whether a route takes every incident (an empty
// match that does not continue), so that a rule needs no sinks of its own.
func (c *Config) HasCatchAll() bool {
	for _, r := range c.Routes {
		if r.Match.empty() && !r.Continue {
			return true
		}
	}
	return false
}

func (m RouteMatch) empty() bool {
	return len(m.Namespaces)+len(m.Teams)+len(m.Rules)+len(m.Severities)+len(m.Reasons) == 0 &&
		m.NamespaceLabels == "" && m.Labels == ""
}

// validateRoutes checks what the types cannot; label selectors are
// compiled (and their errors placed) by internal/route.
func (c *Config) validateRoutes(add func(string, string, ...any)) {
	sinks := map[string]*Sink{}
	for i := range c.Sinks {
		sinks[c.Sinks[i].Name] = &c.Sinks[i]
	}
	rules := map[string]bool{}
	for _, r := range c.Rules {
		rules[r.Name] = true
	}
	if c.Intake.Alertmanager != nil {
		rules[AlertRule] = true // the alerts taken in
	}
	names := map[string]bool{}
	for i, r := range c.Routes {
		p := fmt.Sprintf("routes[%d]", i)
		checkName(p, "route", " (it is shown by herald test --route and in logs)", r.Name, names, add)
		validateLinks(p+".links", r.Links, add)
		names[r.Name] = true
		for j, ns := range r.Match.Namespaces {
			if _, err := path.Match(ns, ""); err != nil || ns == "" {
				add(fmt.Sprintf("%s.match.namespaces[%d]", p, j), "bad namespace pattern %q: use a name or a glob such as shop-*", ns)
			}
		}
		for j, name := range r.Match.Rules {
			if !rules[name] {
				add(fmt.Sprintf("%s.match.rules[%d]", p, j), "unknown rule %q; rules: %s", name, strings.Join(slices.Sorted(maps.Keys(rules)), ", "))
			}
		}
		for j, sev := range r.Match.Severities {
			if !severities[sev] {
				add(fmt.Sprintf("%s.match.severities[%d]", p, j), "must be one of info, warning, critical; got %q", sev)
			}
		}
		for j, team := range r.Match.Teams {
			if team == "" {
				add(fmt.Sprintf("%s.match.teams[%d]", p, j), "a team name must not be empty")
			}
		}
		if len(r.To) == 0 {
			add(p, "a route needs to: at least one sink, e.g. to: [{sink: slack, channel: \"#payments\"}]")
		}
		seen := map[string]bool{}
		for j, t := range r.To {
			c.validateTarget(fmt.Sprintf("%s.to[%d]", p, j), t, sinks, add)
			if seen[t.Sink] {
				add(fmt.Sprintf("%s.to[%d].sink", p, j), "sink %q is named twice in this route", t.Sink)
			}
			seen[t.Sink] = true
		}
	}
}

func (c *Config) validateTarget(p string, t RouteTarget, sinks map[string]*Sink, add func(string, string, ...any)) {
	s, ok := sinks[t.Sink]
	if !ok {
		add(p+".sink", "unknown sink %q; defined sinks: %s", t.Sink, strings.Join(slices.Sorted(maps.Keys(sinks)), ", "))
		return
	}
	typ := s.Type()
	if t.Channel != "" {
		switch {
		case typ != "slack":
			add(p+".channel", "channel applies to a slack sink; %q is %s", t.Sink, typ)
		case s.Slack.Token == nil:
			add(p+".channel", "an incoming webhook posts to its own channel; a channel needs a bot token (slack.token)")
		case !slackChannelRE.MatchString(t.Channel):
			add(p+".channel", "%q is not a Slack channel: use #name (lower case) or the channel's ID (C…)", t.Channel)
		}
	}
	for k, m := range t.Mention {
		switch {
		case typ != "slack":
			add(fmt.Sprintf("%s.mention[%d]", p, k), "mention applies to a slack sink; %q is %s", t.Sink, typ)
		case !slackMentionRE.MatchString(m):
			add(fmt.Sprintf("%s.mention[%d]", p, k), "%q is not a Slack ID: use a user group ID (S…) or a member ID (U… or W…), from Slack's \"Copy member ID\"; names and @handles change", m)
		}
	}
	if t.Destination != "" {
		dests := s.destinationNames()
		switch {
		case dests == nil:
			add(p+".destination", "sink %q (%s) has no destinations: to choose one, list them under the sink's destinations:", t.Sink, typ)
		case !slices.Contains(dests, t.Destination):
			add(p+".destination", "sink %q has no destination %q; its destinations: %s", t.Sink, t.Destination, strings.Join(dests, ", "))
		}
	}
}

// Destination is one more place a PagerDuty, Teams or webhook sink can
// deliver to, under a name routes choose by (to: [{sink: pd,
// destination: payments}]). It shares the sink's other settings (TLS,
// timeouts, headers, signing secrets).
type Destination struct {
	// RoutingKey (PagerDuty) is another service's integration key.
	RoutingKey *SecretRef `yaml:"routingKey"`
	// URL or URLFrom (Teams, webhook) is another address.
	URL     string     `yaml:"url"`
	URLFrom *SecretRef `yaml:"urlFrom"`
	// To (email) are other recipients.
	To []string `yaml:"to"`
}

// destinationNames lists the sink's destinations, sorted; nil when its
// type has none configured.
func (s *Sink) destinationNames() []string {
	var d map[string]*Destination
	switch {
	case s.PagerDuty != nil:
		d = s.PagerDuty.Destinations
	case s.Teams != nil:
		d = s.Teams.Destinations
	case s.Webhook != nil:
		d = s.Webhook.Destinations
	case s.Email != nil:
		d = s.Email.Destinations
	}
	if len(d) == 0 {
		return nil
	}
	return slices.Sorted(maps.Keys(d))
}

// validateSinkDestinations checks the destinations: of the sink at p.
func (c *Config) validateSinkDestinations(p string, s *Sink, add func(string, string, ...any)) {
	typ := s.Type()
	var dests map[string]*Destination
	switch typ {
	case "pagerduty":
		dests = s.PagerDuty.Destinations
	case "teams":
		dests = s.Teams.Destinations
	case "webhook":
		dests = s.Webhook.Destinations
	case "email":
		dests = s.Email.Destinations
	}
	p = p + "." + typ + ".destinations"
	for _, name := range slices.Sorted(maps.Keys(dests)) {
		d, dp := dests[name], p+"."+name
		if !nameRE.MatchString(name) {
			add(dp, "%q is not a valid destination name: use lower-case letters, digits and '-'", name)
		}
		if d == nil {
			add(dp, "an empty destination: give it a %s", map[bool]string{true: "routingKey", false: "url or urlFrom"}[typ == "pagerduty"])
			continue
		}
		if typ == "email" {
			if d.URL != "" || d.URLFrom != nil || d.RoutingKey != nil {
				add(dp, "an email destination is a list of recipients: to: [payments-oncall@example.com]")
			}
			if len(d.To) == 0 {
				add(dp+".to", "an email destination needs recipients")
			}
			validateRecipients(dp+".to", d.To, add)
			continue
		}
		if len(d.To) > 0 {
			add(dp+".to", "to applies to email destinations; a %s destination is %s", typ, map[bool]string{true: "a routingKey", false: "a url or urlFrom"}[typ == "pagerduty"])
		}
		if typ == "pagerduty" {
			if d.URL != "" || d.URLFrom != nil {
				add(dp, "a PagerDuty destination is a routingKey (the sink's url is shared)")
			}
			if d.RoutingKey == nil {
				add(dp, "a PagerDuty destination needs a routingKey: {file: /var/run/secrets/herald/pagerduty/payments}")
				continue
			}
			c.resolveSecret(dp+".routingKey", d.RoutingKey, add)
			if k := d.RoutingKey.resolved; k != "" && len(k.Reveal()) != 32 {
				add(dp+".routingKey", "a PagerDuty integration key is 32 characters; the one read has %d", len(k.Reveal()))
			}
			continue
		}
		if d.RoutingKey != nil {
			add(dp+".routingKey", "routingKey applies to PagerDuty destinations; a %s destination is a url or urlFrom", typ)
		}
		if d.URL == "" && d.URLFrom == nil {
			add(dp, "a %s destination needs url or urlFrom", typ)
			continue
		}
		c.validateURLOrSecret(dp, d.URL, d.URLFrom, add)
	}
}
