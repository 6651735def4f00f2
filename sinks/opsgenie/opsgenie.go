// Package opsgenie raises alerts through the Alert API v2 of Opsgenie and
// of Jira Service Management's operations (the same API under another
// address): an incident creates an alert whose alias is the incident's
// ID, so every later notification of it (an update, a herald restart, a
// new leader) finds the same alert — an acknowledgement from Slack
// acknowledges it, the resolution closes it.
package opsgenie

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/sinks"
)

// The Alert API's documented limits (characters).
const (
	MaxMessage     = 130
	MaxAlias       = 512
	MaxDescription = 15000
	MaxEntity      = 512
	MaxSource      = 100
	MaxNote        = 25000
	MaxUser        = 100
	MaxTag         = 50
	MaxTags        = 20
	// maxDetail bounds one detail (Opsgenie keeps 8,000 characters of
	// all details' keys and values together).
	maxDetail  = 1000
	maxDetails = 8000
)

// Options configure an Opsgenie sink.
type Options struct {
	Name string
	// URL is the API's base address (https://api.opsgenie.com, its EU
	// twin, or Jira Service Management's); /v2/alerts is added.
	URL        string
	APIKey     string
	Responders []Responder
	Tags       []string
	// ClusterName leads the message and is a tag and a detail.
	ClusterName string
	Timeout     time.Duration
	UserAgent   string
	TLS         sinks.TLSOptions
}

// Responder is who an alert is for.
type Responder struct {
	Type     string `json:"type"`
	Name     string `json:"name,omitempty"`
	Username string `json:"username,omitempty"`
}

// Sink is an Opsgenie sink.
type Sink struct {
	opts   Options
	client *http.Client
	what   string
}

// New makes an Opsgenie sink with its own HTTP client.
func New(opts Options) (*Sink, error) {
	client, u, err := sinks.NewHTTPEndpoint("opsgenie", opts.Name, opts.URL, opts.Timeout, opts.TLS)
	if err != nil {
		return nil, err
	}
	opts.URL = strings.TrimSuffix(opts.URL, "/")
	return &Sink{opts: opts, client: client, what: fmt.Sprintf("opsgenie %s (%s://%s)", opts.Name, u.Scheme, u.Host)}, nil
}

// Name implements sinks.Sink.
func (s *Sink) Name() string { return s.opts.Name }

// Create is the body of a create-alert request.
type Create struct {
	Message     string            `json:"message"`
	Alias       string            `json:"alias"`
	Description string            `json:"description,omitempty"`
	Responders  []Responder       `json:"responders,omitempty"`
	Tags        []string          `json:"tags,omitempty"`
	Details     map[string]string `json:"details,omitempty"`
	Entity      string            `json:"entity,omitempty"`
	Source      string            `json:"source"`
	Priority    string            `json:"priority"`
	Note        string            `json:"note,omitempty"`
}

// Action is the body of an acknowledge, close or add-note request.
type Action struct {
	User   string `json:"user,omitempty"`
	Source string `json:"source"`
	Note   string `json:"note,omitempty"`
}

// Request is one call of the Alert API: a path under /v2/alerts and a
// body.
type Request struct {
	Path string // "" (create), or /<alias>/acknowledge, /close, /notes
	Body any
}

// Send implements sinks.Sink. firing creates the alert; updated and
// repeat create it again (Opsgenie folds a create with an open alert's
// alias into it, so a lost alert comes back) and add the change as a
// note; acknowledged and silenced acknowledge it (someone took it on, or
// said they know), and the first notification after a silence ends
// unacknowledges it again unless someone took it on; resolved closes it. A digest sends each of its
// incidents: on a failure the whole digest is retried, which the aliases
// make harmless.
func (s *Sink) Send(ctx context.Context, n incident.Notification) error {
	if n.Transition == incident.Digest {
		for _, d := range n.Digest {
			if err := s.Send(ctx, d); err != nil {
				return err
			}
		}
		return nil
	}
	for _, r := range s.Requests(n) {
		if err := s.post(ctx, r); err != nil {
			return err
		}
	}
	return nil
}

func (s *Sink) post(ctx context.Context, r Request) error {
	body, err := json.Marshal(r.Body)
	if err != nil {
		return fmt.Errorf("%s: encoding the request: %w", s.what, err)
	}
	target := s.opts.URL + "/v2/alerts" + r.Path
	if r.Path != "" {
		target += "?identifierType=alias"
	}
	header := http.Header{}
	header.Set("Content-Type", "application/json")
	header.Set("Authorization", "GenieKey "+s.opts.APIKey)
	header.Set("User-Agent", s.opts.UserAgent)
	answer, err := sinks.Post(ctx, s.client, target, header, body, s.what)
	if ok, _ := sinks.IsRetryable(err); err != nil && !ok {
		// Opsgenie says what it refused ("Key format is not valid",
		// a field too long); never the key, should it echo it.
		return fmt.Errorf("%w: %s", err, sinks.ReasonHiding(answer, s.opts.URL, s.opts.APIKey))
	}
	return err
}

// Requests are the Alert API calls for n, in order.
func (s *Sink) Requests(n incident.Notification) []Request {
	inc := n.Incident
	alias := sinks.Head(inc.ID, MaxAlias)
	at := "/" + url.PathEscape(alias)
	switch n.Transition {
	case incident.Resolved:
		return []Request{{Path: at + "/close", Body: Action{Source: "herald", Note: sinks.Head(sinks.Resolution(n, n.Time), MaxNote)}}}
	case incident.Acknowledged:
		a := Action{Source: "herald", Note: "Acknowledged in herald"}
		if inc.Ack != nil {
			a.User = sinks.Head(sinks.AckName(*inc.Ack), MaxUser)
			a.Note = sinks.Head("Acknowledged by "+sinks.AckName(*inc.Ack)+" in herald", MaxNote)
		}
		return []Request{{Path: at + "/acknowledge", Body: a}}
	case incident.Silenced:
		return []Request{{Path: at + "/acknowledge", Body: Action{Source: "herald", Note: sinks.Head(sinks.Muted(n, n.Time), MaxNote)}}}
	}
	reqs := []Request{{Body: s.create(n)}}
	if n.Unmuted != "" && inc.Ack == nil {
		// The silence that acknowledged it is over and nobody took it
		// on: it must page again (a create folds into the acknowledged
		// alert and would not).
		reqs = append(reqs, Request{Path: at + "/unacknowledge", Body: Action{Source: "herald", Note: sinks.Head(sinks.Unmuted(n)+": still "+inc.Reason, MaxNote)}})
	}
	if n.Transition == incident.Updated || n.Transition == incident.Repeat {
		note := string(n.Transition)
		if n.Change != "" {
			note += ": " + n.Change
		}
		reqs = append(reqs, Request{Path: at + "/notes", Body: Action{Source: "herald", Note: sinks.Head(note, MaxNote)}})
	}
	return reqs
}

func (s *Sink) create(n incident.Notification) Create {
	inc := n.Incident
	where := sinks.Locator(inc)
	c := Create{
		Message:     sinks.Head(message(n, s.opts.ClusterName), MaxMessage),
		Alias:       sinks.Head(inc.ID, MaxAlias),
		Description: sinks.Head(description(n), MaxDescription),
		Responders:  s.opts.Responders,
		Entity:      sinks.Head(where, MaxEntity),
		Source:      sinks.Head(strings.TrimSpace("herald "+s.opts.ClusterName), MaxSource),
		Priority:    priority(inc.Severity),
	}
	tags := append(slices.Clone(s.opts.Tags), inc.Rule, inc.Reason, inc.Severity, s.opts.ClusterName, inc.Object.Namespace)
	for _, t := range tags {
		if t = sinks.Head(t, MaxTag); t != "" && !slices.Contains(c.Tags, t) && len(c.Tags) < MaxTags {
			c.Tags = append(c.Tags, t)
		}
	}
	c.Details = details(n, s.opts.ClusterName)
	return c
}

// message is what the alert says in one line (a phone's push): the
// cluster and the object first, then what happened.
func message(n incident.Notification, cluster string) string {
	return sinks.Headline(n, cluster, n.Time)
}

// description is the alert's body: the one sentence, the hint, the last
// log lines, what changed and the links.
func description(n incident.Notification) string {
	inc := n.Incident
	parts := []string{inc.Text}
	if c := n.Context; c != nil {
		if c.Hint != "" {
			parts = append(parts, "Hint: "+c.Hint)
		}
		if c.Logs != nil && len(c.Logs.Lines) > 0 {
			parts = append(parts, "Last log lines:\n"+sinks.Tail(strings.Join(c.Logs.Lines, "\n"), 4000))
		}
	}
	if c := n.Changes; c != nil && len(c.Lines) > 0 {
		parts = append(parts, "What changed:\n"+strings.Join(c.Lines, "\n"))
		if !sinks.NothingChanged(c) && c.Undo != "" {
			parts = append(parts, "Undo: "+c.Undo)
		}
	}
	if inc.RunbookURL != "" {
		parts = append(parts, "Runbook: "+inc.RunbookURL)
	}
	for _, l := range inc.Links {
		parts = append(parts, l.Name+": "+l.URL)
	}
	return strings.Join(parts, "\n\n")
}

// details are the alert's fields: the facts and where to look, within
// Opsgenie's 8,000 characters for all of them.
func details(n incident.Notification, cluster string) map[string]string {
	inc := n.Incident
	out := map[string]string{}
	used := 0
	add := func(k, v string) {
		if v == "" {
			return
		}
		v = sinks.Head(v, maxDetail)
		if used+len(k)+len(v) > maxDetails {
			return
		}
		out[k] = v
		used += len(k) + len(v)
	}
	add("incident", inc.ID)
	add("rule", inc.Rule)
	add("cluster", cluster)
	add("container", inc.Container)
	add("change", n.Change)
	for _, l := range inc.Links {
		add("link: "+l.Name, l.URL)
	}
	keys := make([]string, 0, len(inc.Facts))
	for k := range inc.Facts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		add(k, inc.Facts[k])
	}
	return out
}

// priority maps herald's severities onto Opsgenie's P1 (critical) to P5
// (informational).
func priority(severity string) string {
	switch severity {
	case "critical":
		return "P1"
	case "info":
		return "P5"
	}
	return "P3"
}
