package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/herald-k8s/herald/config"
	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/rules"
	"github.com/herald-k8s/herald/sinks"
)

// testSend sends one test notification through the sink called name,
// built as herald run builds it (buildSinks), and says what the
// destination answered: whether a token, URL or routing key works is
// learnt before the first real incident, not at it. A failure the sink
// would retry (NATS still connecting, a 503) is tried again for up to
// within. Exit 0 when it was accepted, 1 when refused, 2 for a sink that
// is not configured.
func (c cli) testSend(ctx context.Context, cfg *config.Config, name string, within time.Duration) int {
	var sc *config.Sink
	var names []string
	for i := range cfg.Sinks {
		names = append(names, cfg.Sinks[i].Name)
		if cfg.Sinks[i].Name == name {
			sc = &cfg.Sinks[i]
		}
	}
	if sc == nil {
		fmt.Fprintf(c.stderr, "herald test --send: no sink %q in the configuration; its sinks are: %s\n", name, strings.Join(names, ", "))
		return 2
	}
	what := fmt.Sprintf("sink %q (%s)", name, sc.Type())
	secrets := sinkSecrets(sc)
	refused := func(err error) int {
		fmt.Fprintf(c.stderr, "herald test --send: %s refused the test notification: %s\n", what, redactSecrets(err.Error(), secrets))
		return 1
	}
	// Only this sink is built: another sink's server being down is not
	// this one's answer.
	one := *cfg
	one.Sinks = []config.Sink{*sc}
	lanes, closeSinks, err := buildSinks(&one, c.stdout, noRefs{}, "herald-test", slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return refused(err)
	}
	defer closeSinks()
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	n := testNotification(name, clusterName(sc), time.Now())
	for {
		err = lanes[0].Sink.Send(ctx, n)
		var retry *sinks.Retryable
		if err == nil || !errors.As(err, &retry) {
			break
		}
		// Worth another try (as the dispatcher would), while time is left.
		wait := min(max(retry.After, 500*time.Millisecond), 5*time.Second)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return refused(fmt.Errorf("%w (still failing after %s)", err, within))
		case <-t.C:
		}
	}
	if err != nil {
		return refused(err)
	}
	fmt.Fprintf(c.stdout, "%s accepted the test notification %s\n", what, n.ID())
	if t := sc.Type(); t == "pagerduty" || t == "alertmanager" || t == "opsgenie" {
		// A page or an alert stays open (and may escalate) until it is
		// resolved: close it at once.
		resolved := n
		resolved.Transition, resolved.Seq, resolved.Time = incident.Resolved, 2, time.Now()
		resolved.Incident.Ended, resolved.Incident.ResolvedAt = incident.EndedRecovered, resolved.Time
		if err := lanes[0].Sink.Send(ctx, resolved); err != nil {
			fmt.Fprintf(c.stderr, "herald test --send: %s did not take the resolution of the test %s: %s; resolve it by hand\n", what, n.ID(), redactSecrets(err.Error(), secrets))
			return 1
		}
		fmt.Fprintf(c.stdout, "%s resolved it again\n", what)
	}
	return 0
}

// testNotification is a firing notification that says on its face that
// it is a test, so that nobody who sees it in a channel or a pager acts
// on it; its ID is new each time, so receivers that drop redeliveries by
// ID show every test.
func testNotification(sink, cluster string, now time.Time) incident.Notification {
	where := ""
	if cluster != "" {
		where = " in cluster " + cluster
	}
	id := "herald-test-" + strings.ToLower(rand.Text()[:10])
	return incident.Notification{
		Transition: incident.Firing, Seq: 1, Time: now,
		Incident: incident.Incident{
			// The reason is what messages lead with ("prod-eu · herald:
			// Test notification from herald"); no kind, so no kubectl hint.
			ID: id, Fingerprint: id, Rule: "herald-test", Severity: "info", Reason: "Test notification from herald",
			Object: rules.ObjectRef{Name: "herald"}, Sinks: []string{sink}, FirstSeen: now,
			Title: "Test notification from herald" + where + ": nothing is wrong",
			Text: "This is a test sent by `herald test --send " + sink + "`" + where + " at " + now.UTC().Format(time.RFC3339) +
				" to check that herald can reach this destination. Nothing is wrong; no action is needed.",
		},
	}
}

// noRefs is the Slack sink's message memory for a single test message:
// nothing to edit later.
type noRefs struct{}

func (noRefs) Ref(string, string) string     { return "" }
func (noRefs) SetRef(string, string, string) {}

// clusterName is the cluster name the sink is configured with, if any.
func clusterName(sc *config.Sink) string {
	switch {
	case sc.Slack != nil:
		return sc.Slack.ClusterName
	case sc.Alertmanager != nil:
		return sc.Alertmanager.ClusterName
	case sc.PagerDuty != nil:
		return sc.PagerDuty.ClusterName
	case sc.Teams != nil:
		return sc.Teams.ClusterName
	case sc.Opsgenie != nil:
		return sc.Opsgenie.ClusterName
	case sc.Email != nil:
		return sc.Email.ClusterName
	}
	return ""
}

// sinkSecrets are the secret values of a sink's configuration. The sinks
// keep them out of their errors already; the test's report removes them
// once more, as it prints a destination's own words.
func sinkSecrets(sc *config.Sink) []string {
	var out []string
	add := func(refs ...*config.SecretRef) {
		for _, r := range refs {
			if v := r.Secret().Reveal(); len(v) >= 4 {
				out = append(out, v)
			}
		}
	}
	switch {
	case sc.Webhook != nil:
		add(sc.Webhook.URLFrom)
		for _, r := range sc.Webhook.HeadersFrom {
			add(r)
		}
		for i := range sc.Webhook.Secrets {
			add(&sc.Webhook.Secrets[i])
		}
	case sc.Slack != nil:
		add(sc.Slack.Token, sc.Slack.WebhookURL)
	case sc.NATS != nil:
		if u, err := url.Parse(sc.NATS.URL); err == nil && u.User != nil {
			out = append(out, u.User.String())
			if p, ok := u.User.Password(); ok {
				out = append(out, p)
			}
			if len(u.User.Username()) >= 4 {
				out = append(out, u.User.Username()) // a token
			}
		}
	case sc.Alertmanager != nil:
		add(sc.Alertmanager.BearerToken)
		if b := sc.Alertmanager.BasicAuth; b != nil {
			add(b.Password)
		}
	case sc.PagerDuty != nil:
		add(sc.PagerDuty.RoutingKey)
	case sc.Teams != nil:
		add(sc.Teams.URLFrom)
	case sc.Opsgenie != nil:
		add(sc.Opsgenie.APIKey)
	case sc.Email != nil:
		add(sc.Email.SMTP.Password)
	}
	return out
}

// redactSecrets replaces each secret in s by <secret>.
func redactSecrets(s string, secrets []string) string {
	for _, v := range secrets {
		s = strings.ReplaceAll(s, v, "<secret>")
	}
	return s
}
