// Package pagerduty pages through PagerDuty's Events API v2: an incident
// triggers an alert whose dedup key is the incident's ID, so every later
// notification of it (an update, a herald restart, a new leader) lands on
// the same PagerDuty alert, and its resolution resolves it.
package pagerduty

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/sinks"
)

// The Events API's documented limits.
const (
	MaxSummary  = 1024
	MaxDedupKey = 255
	MaxEvent    = 512 << 10
	// maxDetail bounds one custom detail (a log tail): an alert is read
	// on a phone.
	maxDetail = 8 << 10
)

// Options configure a PagerDuty sink.
type Options struct {
	Name       string
	URL        string // the Events API v2 enqueue address
	RoutingKey string
	// Destinations are other services' routing keys, by the name routes
	// choose them by.
	Destinations map[string]string
	// ClusterName prefixes the alert's source and is its group.
	ClusterName string
	Timeout     time.Duration
	UserAgent   string
	TLS         sinks.TLSOptions
}

// Sink is a PagerDuty sink.
type Sink struct {
	opts   Options
	client *http.Client
	what   string
}

// New makes a PagerDuty sink with its own HTTP client.
func New(opts Options) (*Sink, error) {
	client, u, err := sinks.NewHTTPEndpoint("pagerduty", opts.Name, opts.URL, opts.Timeout, opts.TLS)
	if err != nil {
		return nil, err
	}
	return &Sink{opts: opts, client: client, what: fmt.Sprintf("pagerduty %s (%s://%s)", opts.Name, u.Scheme, u.Host)}, nil
}

// Name implements sinks.Sink.
func (s *Sink) Name() string { return s.opts.Name }

// Event is an Events API v2 event.
type Event struct {
	RoutingKey  string   `json:"routing_key"`
	EventAction string   `json:"event_action"` // trigger, acknowledge or resolve
	DedupKey    string   `json:"dedup_key"`
	Payload     *Payload `json:"payload,omitempty"` // trigger only
	Client      string   `json:"client,omitempty"`
	Links       []Link   `json:"links,omitempty"`
}

// Payload describes a triggered alert.
type Payload struct {
	Summary       string            `json:"summary"`
	Source        string            `json:"source"`
	Severity      string            `json:"severity"` // critical, error, warning or info
	Timestamp     string            `json:"timestamp,omitempty"`
	Component     string            `json:"component,omitempty"`
	Group         string            `json:"group,omitempty"`
	Class         string            `json:"class,omitempty"`
	CustomDetails map[string]string `json:"custom_details,omitempty"`
}

// Link is a link shown on the alert.
type Link struct {
	Href string `json:"href"`
	Text string `json:"text"`
}

// Send implements sinks.Sink. firing, updated and repeat trigger (the
// same dedup key updates the open alert); silenced and acknowledged
// acknowledge (someone said they know, or took it on: PagerDuty stops
// escalating); resolved resolves. A digest sends each of its
// incidents: on a failure the whole digest is retried, which PagerDuty's
// dedup keys make harmless.
func (s *Sink) Send(ctx context.Context, n incident.Notification) error {
	if n.Transition == incident.Digest {
		for _, d := range n.Digest {
			if err := s.Send(ctx, d); err != nil {
				return err
			}
		}
		return nil
	}
	body, err := json.Marshal(s.Event(n))
	if err != nil {
		return fmt.Errorf("%s: encoding the event: %w", s.what, err)
	}
	header := http.Header{}
	header.Set("Content-Type", "application/json")
	header.Set("User-Agent", s.opts.UserAgent)
	answer, err := sinks.Post(ctx, s.client, s.opts.URL, header, body, s.what)
	if ok, _ := sinks.IsRetryable(err); err != nil && !ok {
		// PagerDuty says what it found invalid; a proxy may echo the
		// event, routing key included: never that.
		keys := []string{s.opts.RoutingKey}
		for _, k := range s.opts.Destinations {
			keys = append(keys, k)
		}
		return fmt.Errorf("%w: %s", err, sinks.ReasonHiding(answer, s.opts.URL, keys...))
	}
	return err
}

// Event is the Events API event for n.
func (s *Sink) Event(n incident.Notification) Event {
	inc := n.Incident
	key, _ := sinks.Pick(n, s.opts.Name, s.opts.Destinations, s.opts.RoutingKey)
	e := Event{RoutingKey: key, DedupKey: sinks.Head(inc.ID, MaxDedupKey), Client: "herald"}
	switch n.Transition {
	case incident.Resolved:
		e.EventAction = "resolve"
		return e
	case incident.Silenced, incident.Acknowledged:
		e.EventAction = "acknowledge"
		return e
	}
	e.EventAction = "trigger"
	where := sinks.Locator(inc)
	source := where
	if s.opts.ClusterName != "" {
		source = s.opts.ClusterName + " " + where
	}
	details := map[string]string{"text": inc.Text, "rule": inc.Rule, "incident": inc.ID, "transition": string(n.Transition)}
	if s.opts.ClusterName != "" {
		details["cluster"] = s.opts.ClusterName
	}
	for k, v := range inc.Facts {
		details["fact."+k] = sinks.Head(v, maxDetail)
	}
	add := func(k, v string) {
		if v != "" {
			details[k] = sinks.Head(v, maxDetail)
		}
	}
	add("change", n.Change)
	add("container", inc.Container)
	if c := n.Context; c != nil {
		add("hint", c.Hint)
		if c.Logs != nil && len(c.Logs.Lines) > 0 {
			details["logs"] = sinks.Tail(strings.Join(c.Logs.Lines, "\n"), maxDetail)
		}
		var events []string
		for _, ev := range c.Events {
			events = append(events, sinks.EventLine(ev))
		}
		add("events", strings.Join(events, "\n"))
		add("contextUnavailable", c.Unavailable)
	}
	if c := n.Changes; c != nil {
		// What changed just before it began, one change a line, and
		// the command that undoes the rollouts: the first question on
		// the call.
		add("whatChanged", strings.Join(c.Lines, "\n"))
		if !sinks.NothingChanged(c) {
			add("undo", c.Undo)
		}
	}
	e.Payload = &Payload{
		Summary: sinks.Head(summary(n, s.opts.ClusterName), MaxSummary), Source: sinks.Head(source, MaxSummary), Severity: severity(inc.Severity),
		Timestamp: n.Time.UTC().Format(time.RFC3339), Component: inc.Object.Name, Group: cmp.Or(s.opts.ClusterName, inc.Object.Namespace),
		Class: inc.Reason, CustomDetails: details,
	}
	if inc.RunbookURL != "" {
		e.Links = []Link{{Href: inc.RunbookURL, Text: "Runbook"}}
	}
	for _, l := range inc.Links {
		e.Links = append(e.Links, Link{Href: l.URL, Text: l.Name})
	}
	return e
}

// summary is what the page says (the phone's push): the cluster and the
// object first, then what happened, as every chat sink's headline.
func summary(n incident.Notification, cluster string) string {
	s := sinks.Headline(n, cluster, n.Time)
	if d := sinks.Detail(n.Incident); d != "" {
		s += " — " + d
	}
	return s
}

// severity maps herald's severities onto PagerDuty's four.
func severity(s string) string {
	switch s {
	case "critical", "warning", "info":
		return s
	}
	return "error"
}
