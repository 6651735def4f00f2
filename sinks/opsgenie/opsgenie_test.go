package opsgenie

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/oncalltest"
	"github.com/herald-k8s/herald/sinks"
)

const key = "0c8f3a1e-7b2d-4c5e-9f60-a1b2c3d4e5f6"

func newSink(t *testing.T, url string) *Sink {
	t.Helper()
	s, err := New(Options{Name: "og", URL: url, APIKey: key, ClusterName: "prod-eu", Timeout: 5 * time.Second, UserAgent: "herald-test",
		Responders: []Responder{{Type: "team", Name: "payments"}, {Type: "user", Username: "ana@example.com"}}, Tags: []string{"k8s"}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var sample = oncalltest.Named

// TestLifecycle: one incident's notifications, as the stand-in checks
// them against the documented API: firing creates the alert (alias: the
// incident's ID, P1 for critical, the responders and tags, the crash
// context and links in its description), an update creates again (folded
// into the open alert) and notes the change, Slack's Acknowledge
// acknowledges it as the person who pressed, the resolution closes it;
// every call names the same alias.
func TestLifecycle(t *testing.T) {
	og := oncalltest.NewOpsgenie(t, key)
	s := newSink(t, og.URL)
	ctx := context.Background()
	firing := sample(t, "firing")
	for _, n := range []incident.Notification{firing, sample(t, "updated"), sample(t, "acknowledged"), sample(t, "resolved")} {
		if err := s.Send(ctx, n); err != nil {
			t.Fatalf("%s: %v (refused: %v)", n.Transition, err, og.Invalid())
		}
	}
	var actions []string
	for _, c := range og.Calls() {
		actions = append(actions, c.Action)
		if c.Alias != firing.Incident.ID {
			t.Errorf("%s names alias %q, want the incident's ID %q", c.Action, c.Alias, firing.Incident.ID)
		}
	}
	if got := strings.Join(actions, ","); got != "create,create,note,acknowledge,close" {
		t.Fatalf("calls %s", got)
	}
	create := og.Calls()[0].Create
	if create.Priority != "P1" || len(create.Responders) != 2 || !strings.HasPrefix(create.Message, "prod-eu · shop/checkout-7d9f8b6c5-x2x9q") ||
		!strings.Contains(create.Description, "panic: connect to db: i/o timeout") || !strings.Contains(create.Description, "Dashboard: https://grafana.example.com/") ||
		create.Details["link: Logs"] == "" || create.Details["restartCount"] != "5" || create.Source != "herald prod-eu" {
		t.Errorf("create: %+v", create)
	}
	for _, tag := range []string{"k8s", "pod-crashloop", "CrashLoopBackOff", "critical", "prod-eu", "shop"} {
		if !strings.Contains(strings.Join(create.Tags, ","), tag) {
			t.Errorf("tags %v lack %s", create.Tags, tag)
		}
	}
	a := og.Alert(firing.Incident.ID)
	if a == nil || a.Count != 2 || !a.Acknowledged || !a.Closed || a.AcknowledgedBy == "" || len(a.Notes) != 3 {
		t.Fatalf("the alert: %+v, want created, folded once, acknowledged by someone, closed, with 3 notes", a)
	}
	if !strings.Contains(a.Notes[0], "updated: ") || !strings.Contains(a.Notes[1], "Acknowledged by") || !strings.Contains(a.Notes[2], "Resolved after") {
		t.Errorf("notes %q", a.Notes)
	}
	if f := og.Failed(); len(f) != 0 {
		t.Errorf("requests about no alert: %v", f)
	}
}

// TestEverySampleIsAccepted: every kind of notification herald sends,
// hostile text included, is within the API's limits; a digest sends
// each of its incidents.
func TestEverySampleIsAccepted(t *testing.T) {
	og := oncalltest.NewOpsgenie(t, key)
	s := newSink(t, og.URL)
	ns := []incident.Notification{oncalltest.Hostile(), oncalltest.HostileAcked(oncalltest.Hostile()), oncalltest.HostileSilenced(oncalltest.Hostile())}
	for _, sm := range oncalltest.Samples() {
		ns = append(ns, sm.Note)
	}
	for _, n := range ns {
		if err := s.Send(context.Background(), n); err != nil {
			t.Errorf("%s %s: %v", n.Transition, n.Incident.ID, err)
		}
	}
	if bad := og.Invalid(); len(bad) > 0 {
		t.Errorf("refused: %v", bad)
	}
}

// TestRefusals: a refused key is a final error that never repeats the
// key; Opsgenie's 429 is retried.
func TestRefusals(t *testing.T) {
	og := oncalltest.NewOpsgenie(t, "another-key")
	s := newSink(t, og.URL)
	err := s.Send(context.Background(), sample(t, "firing"))
	if err == nil || strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "HTTP 401") || !strings.Contains(err.Error(), "Could not authenticate") {
		t.Fatalf("a refused key: %v", err)
	}
	if retry, _ := sinks.IsRetryable(err); retry {
		t.Error("a refused key is retried")
	}
	og = oncalltest.NewOpsgenie(t, key)
	og.Throttle(1)
	err = newSink(t, og.URL).Send(context.Background(), sample(t, "firing"))
	if retry, _ := sinks.IsRetryable(err); !retry {
		t.Errorf("a 429: %v, want it retried", err)
	}
}

// TestSilenceEndsPagesAgain: a silence acknowledges the alert; when it
// ends with the problem still there, the alert is unacknowledged (a
// create alone folds into the acknowledged alert and pages nobody) —
// unless someone took it on meanwhile.
func TestSilenceEndsPagesAgain(t *testing.T) {
	og := oncalltest.NewOpsgenie(t, key)
	s := newSink(t, og.URL)
	ctx := context.Background()
	firing := sample(t, "firing")
	unmuted := sample(t, "unmuted")
	if unmuted.Unmuted == "" || unmuted.Incident.ID != firing.Incident.ID {
		t.Fatalf("the unmuted sample: %+v", unmuted)
	}
	unmuted.Incident.Ack = nil
	for _, n := range []incident.Notification{firing, sample(t, "silenced"), unmuted} {
		if err := s.Send(ctx, n); err != nil {
			t.Fatalf("%s: %v (refused %v)", n.Transition, err, og.Invalid())
		}
	}
	if a := og.Alert(firing.Incident.ID); a == nil || a.Acknowledged {
		t.Fatalf("after the silence ended: %+v, want it unacknowledged", a)
	}
	acked := unmuted
	acked.Incident.Ack = &incident.Ack{By: "slack:U0ANA", Name: "ana"}
	if err := s.Send(ctx, sample(t, "silenced")); err != nil {
		t.Fatal(err)
	}
	if err := s.Send(ctx, acked); err != nil {
		t.Fatal(err)
	}
	if a := og.Alert(firing.Incident.ID); !a.Acknowledged {
		t.Error("an alert someone took on was unacknowledged when a silence ended")
	}
}
