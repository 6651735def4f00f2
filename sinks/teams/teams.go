// Package teams posts Adaptive Cards to a Microsoft Teams Workflows
// (Power Automate) webhook: the "Post to a channel when a webhook request
// is received" flow takes a message whose attachment is the card.
package teams

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/sinks"
)

// MaxMessage is Teams' limit on a message, card included (28 KB); herald
// keeps its cards under it with room to spare for what the flow adds.
const MaxMessage = 28 << 10

// budget is what a card may take: below MaxMessage by a margin for the
// envelope Workflows wraps it in.
const budget = 24 << 10

// Options configure a Teams sink.
type Options struct {
	Name string
	URL  string
	// Destinations are other Workflows URLs, by the name routes choose
	// them by.
	Destinations map[string]string
	ClusterName  string
	Timeout      time.Duration
	UserAgent    string
	TLS          sinks.TLSOptions
}

// Sink is a Teams sink.
type Sink struct {
	opts   Options
	client *http.Client
	what   string
	now    func() time.Time
}

// New makes a Teams sink with its own HTTP client.
func New(opts Options) (*Sink, error) {
	client, u, err := sinks.NewHTTPEndpoint("teams", opts.Name, opts.URL, opts.Timeout, opts.TLS)
	if err != nil {
		return nil, err
	}
	// A Workflows URL carries its signature in the query: never shown.
	return &Sink{opts: opts, client: client, what: fmt.Sprintf("teams %s (%s)", opts.Name, sinks.RedactURL(u)), now: time.Now}, nil
}

// Name implements sinks.Sink.
func (s *Sink) Name() string { return s.opts.Name }

// Send implements sinks.Sink.
func (s *Sink) Send(ctx context.Context, n incident.Notification) error {
	body, err := Render(n, s.opts.ClusterName, s.now())
	if err != nil {
		return fmt.Errorf("%s: %w", s.what, err)
	}
	header := http.Header{}
	header.Set("Content-Type", "application/json")
	header.Set("User-Agent", s.opts.UserAgent)
	url, dest := sinks.Pick(n, s.opts.Name, s.opts.Destinations, s.opts.URL)
	what := s.what
	if dest != "" {
		what = fmt.Sprintf("teams %s (destination %s)", s.opts.Name, dest) // the URL is a secret
	}
	answer, err := sinks.Post(ctx, s.client, url, header, body, what)
	if retry, _ := sinks.IsRetryable(err); err != nil && !retry {
		if why := sinks.ReasonHiding(answer, url); why != "" {
			return fmt.Errorf("%w: %s", err, why) // Workflows says what it refused
		}
	}
	return err
}

// Render is the message for n: an Adaptive Card within Teams' size limit,
// its durations counted to now. When the whole card would be too large,
// the crash context goes first, then the facts and what changed, then
// the text is shortened.
func Render(n incident.Notification, cluster string, now time.Time) ([]byte, error) {
	for _, level := range []detail{full, noContext, noFacts, minimal} {
		body, err := json.Marshal(message(card(n, cluster, level, now)))
		if err != nil {
			return nil, err
		}
		if len(body) <= budget {
			return body, nil
		}
	}
	return nil, fmt.Errorf("the card for %s stays over %d bytes", n.ID(), budget) // cannot happen: minimal is bounded
}

// message wraps a card the way Workflows' "post card" flow expects; its
// summary is the card's push text (what the notification says).
func message(c map[string]any) map[string]any {
	return map[string]any{
		"type":    "message",
		"summary": c["fallbackText"],
		"attachments": []any{map[string]any{
			"contentType": "application/vnd.microsoft.card.adaptive",
			"contentUrl":  nil,
			"content":     c,
		}},
	}
}
