package alertmanager

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/links"
	"github.com/herald-k8s/herald/internal/testenv"
	"github.com/herald-k8s/herald/sinks"
)

// gotAlert is what GET /api/v2/alerts returns of an alert.
type gotAlert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	StartsAt    time.Time         `json:"startsAt"`
	Status      struct {
		State      string   `json:"state"`
		SilencedBy []string `json:"silencedBy"`
	} `json:"status"`
}

// alerts lists what an Alertmanager holds as not resolved.
func alerts(t *testing.T, am *testenv.Alertmanager) []gotAlert {
	t.Helper()
	resp, err := http.Get(am.URL + "/api/v2/alerts")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []gotAlert
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

// eventually polls cond every 50 ms until it holds or within passes.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > within {
			t.Fatalf("not within %s: %s", within, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return time.Since(start)
}

func crashLoop(now time.Time) incident.Notification {
	inc := incident.Incident{
		ID: "a1b2c3d4e5f60718-1", Fingerprint: "a1b2c3d4e5f60718", Rule: "pod-crashloop", Severity: "critical",
		Reason: "CrashLoopBackOff", Container: "api", Title: "shop/api-1: container api is crash-looping",
		Text: "Restarted 5 times; last exit code 1.", Sinks: []string{"am"}, FirstSeen: now.Add(-time.Minute),
		RunbookURL: "https://runbooks.example.com/CrashLoopBackOff",
		Links:      []links.Link{{Name: "Dashboard", URL: "https://grafana.example.com/d/x?ns=shop"}, {Name: "Logs", URL: "https://grafana.example.com/explore?ns=shop"}},
	}
	inc.Object.Kind, inc.Object.Namespace, inc.Object.Name, inc.Object.UID = "Pod", "shop", "api-1", "uid-1"
	return incident.Notification{Incident: inc, Transition: incident.Firing, Seq: 1, Time: now,
		Context: &incident.Context{Hint: "Exit code 1 is the program's own error.", Logs: &incident.Logs{Container: "api", Lines: []string{"panic: boom"}}}}
}

// run starts a dispatcher for the sink; stop closes it and waits.
func run(t *testing.T, sink sinks.Sink, announced ...incident.Notification) (d *sinks.Dispatcher, metrics *sinks.Metrics, stop func()) {
	metrics = sinks.NewMetrics(nil)
	d = sinks.NewDispatcher(slog.New(slog.DiscardHandler), metrics, sinks.LaneOptions{Sink: sink})
	d.Resume(announced)
	var wg sync.WaitGroup
	wg.Go(func() { d.Run(context.Background()) })
	var once sync.Once
	stop = func() { once.Do(func() { d.Close(); wg.Wait() }) }
	t.Cleanup(stop)
	return d, metrics, stop
}

// TestAgainstAlertmanager holds the sink to two real Alertmanager
// replicas with a 3 s resolve_timeout: a crash loop is active in both
// with the documented labels within 2 s, stays active for three
// resolve_timeouts because the dispatcher re-posts it, stays active
// across a restart (the new dispatcher resumes what the ledger says was
// announced), is muted by an Alertmanager silence there, and is resolved
// in both within 2 s of herald's resolution.
func TestAgainstAlertmanager(t *testing.T) {
	const resolveTimeout = 3 * time.Second
	ams := []*testenv.Alertmanager{testenv.StartAlertmanager(t, resolveTimeout), testenv.StartAlertmanager(t, resolveTimeout)}
	sink, err := New(Options{
		Name: "am", URLs: []string{ams[0].URL, ams[1].URL + "/"}, Resend: time.Second, Timeout: 5 * time.Second,
		Labels: map[string]string{"team": "platform", "severity": "ignored"}, RuleLabels: map[string]map[string]string{"pod-crashloop": {"page": "yes"}},
		ClusterName: "prod-eu", UserAgent: "herald/test",
	})
	if err != nil {
		t.Fatal(err)
	}
	d, metrics, stop := run(t, sink)
	ctx := context.Background()
	n := crashLoop(time.Now())
	if err := d.Dispatch(ctx, n); err != nil {
		t.Fatal(err)
	}
	active := func(am *testenv.Alertmanager) func() bool {
		return func() bool {
			for _, a := range alerts(t, am) {
				if a.Labels["alertname"] == "CrashLoopBackOff" && a.Status.State == "active" {
					return true
				}
			}
			return false
		}
	}
	for i, am := range ams {
		took := eventually(t, 2*time.Second, fmt.Sprintf("the alert active in Alertmanager %d", i), active(am))
		t.Logf("active in Alertmanager %d after %s", i, took.Round(time.Millisecond))
	}
	got := alerts(t, ams[0])[0]
	want := map[string]string{"alertname": "CrashLoopBackOff", "severity": "critical", "namespace": "shop", "pod": "api-1",
		"container": "api", "rule": "pod-crashloop", "cluster": "prod-eu", "team": "platform", "page": "yes"}
	if fmt.Sprint(got.Labels) != fmt.Sprint(want) {
		t.Errorf("labels = %v\nwant     %v", got.Labels, want)
	}
	for k, v := range map[string]string{"summary": n.Incident.Title, "description": n.Incident.Text, "runbook_url": n.Incident.RunbookURL,
		"links": "Dashboard: https://grafana.example.com/d/x?ns=shop\nLogs: https://grafana.example.com/explore?ns=shop",
		"hint":  n.Context.Hint, "herald_incident": n.Incident.ID} {
		if got.Annotations[k] != v {
			t.Errorf("annotation %s = %q, want %q", k, got.Annotations[k], v)
		}
	}
	if !got.StartsAt.Equal(n.Incident.FirstSeen.Truncate(time.Millisecond)) && got.StartsAt.Sub(n.Incident.FirstSeen).Abs() > time.Millisecond {
		t.Errorf("startsAt = %s, want the incident's first sighting %s", got.StartsAt, n.Incident.FirstSeen)
	}

	// Three resolve_timeouts later it is still active in both: re-posted.
	stayActive := func(d time.Duration) {
		t.Helper()
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for end := time.Now().Add(d); time.Now().Before(end); <-tick.C {
			for i, am := range ams {
				if !active(am)() {
					t.Fatalf("the alert is no longer active in Alertmanager %d: not re-posted in time", i)
				}
			}
		}
	}
	stayActive(3 * resolveTimeout)
	if r := testutil.ToFloat64(metrics.Refreshes.WithLabelValues("am")); r < 5 {
		t.Errorf("refreshes = %v, want one a second", r)
	}

	// A restart: the next dispatcher is told what was announced.
	stop()
	d, _, _ = run(t, sink, n)
	stayActive(2 * resolveTimeout)

	// An Alertmanager silence mutes it there.
	silence := `{"matchers":[{"name":"alertname","value":"CrashLoopBackOff","isRegex":false},{"name":"cluster","value":"prod-eu","isRegex":false}],` +
		`"startsAt":"` + time.Now().UTC().Format(time.RFC3339) + `","endsAt":"` + time.Now().Add(time.Hour).UTC().Format(time.RFC3339) + `","createdBy":"test","comment":"known"}`
	resp, err := http.Post(ams[0].URL+"/api/v2/silences", "application/json", bytes.NewBufferString(silence))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("creating the silence: HTTP %d", resp.StatusCode)
	}
	eventually(t, 5*time.Second, "the alert suppressed by the silence", func() bool {
		as := alerts(t, ams[0])
		return len(as) == 1 && as[0].Status.State == "suppressed" && len(as[0].Status.SilencedBy) == 1
	})

	// Resolved: gone from both within 2 s.
	resolved := n
	resolved.Transition, resolved.Seq, resolved.Time, resolved.Context = incident.Resolved, 2, time.Now(), nil
	if err := d.Dispatch(ctx, resolved); err != nil {
		t.Fatal(err)
	}
	for i, am := range ams {
		took := eventually(t, 2*time.Second, fmt.Sprintf("the alert resolved in Alertmanager %d", i), func() bool { return len(alerts(t, am)) == 0 })
		t.Logf("resolved in Alertmanager %d after %s", i, took.Round(time.Millisecond))
	}
}
