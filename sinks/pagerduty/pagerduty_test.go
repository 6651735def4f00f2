package pagerduty

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/links"
	"github.com/herald-k8s/herald/internal/oncalltest"
	"github.com/herald-k8s/herald/sinks"
)

const routingKey = "R0UT1NGK3Y0123456789abcdefABCDEF" // 32 characters

func notification(tr incident.Transition, seq int) incident.Notification {
	inc := incident.Incident{
		ID: "a1b2c3d4e5f60718-3", Fingerprint: "a1b2c3d4e5f60718", Rule: "pod-crashloop", Severity: "critical",
		Reason: "CrashLoopBackOff", Container: "api", Title: "shop/api-1: container api is crash-looping",
		Text: "Restarted 5 times.", Sinks: []string{"pd"}, FirstSeen: time.Now().Add(-time.Minute),
		Facts: map[string]string{"restartCount": "5"}, RunbookURL: "https://runbooks.example.com/CrashLoopBackOff",
		Links: []links.Link{{Name: "Logs", URL: "https://grafana.example.com/explore?ns=shop"}},
	}
	inc.Object.Kind, inc.Object.Namespace, inc.Object.Name = "Pod", "shop", "api-1"
	return incident.Notification{Incident: inc, Transition: tr, Seq: seq, Time: time.Now()}
}

func newSink(t *testing.T, url, key string) *Sink {
	s, err := New(Options{Name: "pd", URL: url, RoutingKey: key, ClusterName: "prod-eu", Timeout: 5 * time.Second, UserAgent: "herald/test"})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// dispatch sends ns through a real dispatcher, in order, and waits until
// the dispatcher is done with them.
func dispatch(t *testing.T, sink sinks.Sink, ns ...incident.Notification) {
	d := sinks.NewDispatcher(slog.New(slog.DiscardHandler), nil, sinks.LaneOptions{Sink: sink})
	var wg sync.WaitGroup
	wg.Go(func() { d.Run(context.Background()) })
	for _, n := range ns {
		if err := d.Dispatch(context.Background(), n); err != nil {
			t.Fatal(err)
		}
	}
	d.Close()
	wg.Wait()
}

// TestTriggerUpdateAcknowledgeResolve: one incident's notifications are
// one PagerDuty alert: triggered, triggered again with what changed,
// acknowledged by someone (Slack's button), acknowledged by a silence,
// resolved — every event valid by the Events
// API's schema and carrying the incident's ID as dedup key.
func TestTriggerUpdateAcknowledgeResolve(t *testing.T) {
	pd := oncalltest.NewPagerDuty(t)
	firing := notification(incident.Firing, 1)
	firing.Context = &incident.Context{Hint: "Exit code 1 is the program's own error.", Logs: &incident.Logs{Container: "api", Lines: []string{"panic: boom"}}}
	updated := notification(incident.Updated, 2)
	updated.Change = "restarts 5 → 10"
	acked := notification(incident.Acknowledged, 3)
	acked.Incident.Ack = &incident.Ack{By: "slack:U0ANA", Name: "ana", At: acked.Time}
	dispatch(t, newSink(t, pd.URL, routingKey), firing, updated, acked, notification(incident.Silenced, 4), notification(incident.Resolved, 5))

	if inv := pd.Invalid(); len(inv) > 0 {
		t.Fatalf("PagerDuty would reject: %v", inv)
	}
	events := pd.Events()
	var actions []string
	for _, e := range events {
		actions = append(actions, e.EventAction)
		if e.DedupKey != firing.Incident.ID {
			t.Errorf("%s has dedup_key %q, want the incident ID %q", e.EventAction, e.DedupKey, firing.Incident.ID)
		}
		if e.RoutingKey != routingKey {
			t.Errorf("%s has the wrong routing key", e.EventAction)
		}
	}
	if got := strings.Join(actions, ","); got != "trigger,trigger,acknowledge,acknowledge,resolve" {
		t.Fatalf("event actions = %s, want trigger,trigger,acknowledge,acknowledge,resolve", got)
	}
	p := events[0].Payload
	if !strings.HasPrefix(p.Summary, "prod-eu · shop/api-1: CrashLoopBackOff") || p.CustomDetails["cluster"] != "prod-eu" || p.Source != "prod-eu shop/pod/api-1" || p.Severity != "critical" || p.Class != "CrashLoopBackOff" {
		t.Errorf("trigger payload = %+v", p)
	}
	if p.CustomDetails["logs"] != "panic: boom" || p.CustomDetails["hint"] == "" || p.CustomDetails["fact.restartCount"] != "5" {
		t.Errorf("custom details = %v, want the crash context and facts", p.CustomDetails)
	}
	if ls := events[0].Links; len(ls) != 2 || ls[0].Href != firing.Incident.RunbookURL || ls[1] != (Link{Href: "https://grafana.example.com/explore?ns=shop", Text: "Logs"}) {
		t.Errorf("links = %+v, want the runbook, then the rule's Logs link", events[0].Links)
	}
	if got := events[1].Payload.CustomDetails["change"]; got != "restarts 5 → 10" {
		t.Errorf("the update's change = %q", got)
	}
}

// TestThrottledIsRetriedAfterRetryAfter: a 429 with Retry-After: 1 is
// retried by the dispatcher no sooner than a second later, and the event
// is delivered once.
func TestThrottledIsRetriedAfterRetryAfter(t *testing.T) {
	pd := oncalltest.NewPagerDuty(t)
	pd.Throttle(1, "1")
	dispatch(t, newSink(t, pd.URL, routingKey), notification(incident.Firing, 1))
	attempts := pd.Attempts()
	if len(attempts) != 2 || len(pd.Events()) != 1 {
		t.Fatalf("%d attempts, %d events; want 2 attempts (429, then accepted) and 1 event", len(attempts), len(pd.Events()))
	}
	if gap := attempts[1].Sub(attempts[0]); gap < time.Second {
		t.Errorf("retried after %s; PagerDuty asked for 1s", gap)
	}
}

// TestRejectedEventIsFinal: a 400 is not retried, and the error says what
// PagerDuty found invalid without repeating the routing key.
func TestRejectedEventIsFinal(t *testing.T) {
	pd := oncalltest.NewPagerDuty(t)
	key := "too-short-routing-key"
	err := newSink(t, pd.URL, key).Send(context.Background(), notification(incident.Firing, 1))
	if err == nil {
		t.Fatal("a bad routing key was accepted")
	}
	if retry, _ := sinks.IsRetryable(err); retry {
		t.Errorf("a 400 would be retried: %v", err)
	}
	if !strings.Contains(err.Error(), "HTTP 400") || !strings.Contains(err.Error(), "invalid") || strings.Contains(err.Error(), key) {
		t.Errorf("error = %v; want HTTP 400 and PagerDuty's reason, without the key", err)
	}
}

// TestHostileFactsStayWithinLimits: a huge, non-UTF-8 title, facts, log
// lines and "What changed" section still make a valid event within the
// documented limits.
func TestHostileFactsStayWithinLimits(t *testing.T) {
	pd := oncalltest.NewPagerDuty(t)
	n := notification(incident.Firing, 1)
	n.Incident.Title = strings.Repeat("ü\xff\"\\", 2000)
	n.Incident.ID = strings.Repeat("f", 300)
	n.Incident.Facts = map[string]string{"lastLogLine": strings.Repeat("x", 100<<10)}
	n.Context = &incident.Context{Logs: &incident.Logs{Lines: []string{strings.Repeat("€", 50<<10)}}}
	n.Changes = oncalltest.HostileChanges(n.Time)
	n.Changes.Lines = append(n.Changes.Lines, strings.Repeat("\xff\"", 50<<10))
	if err := newSink(t, pd.URL, routingKey).Send(context.Background(), n); err != nil {
		t.Fatalf("%v (%v)", err, pd.Invalid())
	}
}

// TestRefusalEchoingTheKeyHidesIt: a proxy in front of the Events API
// that echoes the event it refused never gets the routing key into
// herald's errors (and so its log).
func TestRefusalEchoingTheKeyHidesIt(t *testing.T) {
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.WriteHeader(http.StatusBadRequest)
		w.Write(append([]byte("refused: "), body...))
	}))
	t.Cleanup(echo.Close)
	err := newSink(t, echo.URL, routingKey).Send(context.Background(), notification(incident.Firing, 1))
	if err == nil || strings.Contains(err.Error(), routingKey) || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("error = %v; want the refusal without the routing key", err)
	}
}
