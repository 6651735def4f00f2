package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-k8s/herald/internal/oncalltest"
	"github.com/herald-k8s/herald/internal/testenv"
)

// amAlert is what Alertmanager's GET /api/v2/alerts says of an alert.
type amAlert struct {
	Labels map[string]string `json:"labels"`
	Status struct {
		State string `json:"state"`
	} `json:"status"`
}

func activeAlerts(t *testing.T, am *testenv.Alertmanager) []amAlert {
	t.Helper()
	resp, err := http.Get(am.URL + "/api/v2/alerts?active=true&silenced=false&inhibited=false")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []amAlert
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

// within polls cond every 20 ms for up to d and returns how long it took.
func within(t *testing.T, d time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > d {
			t.Fatalf("not within %s: %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(start)
}

// TestOnCallDestinations runs herald with the four new ways out at once —
// a real Alertmanager, PagerDuty's and Teams' stand-ins, and a webhook
// with the documented Google Chat template — on one crash loop: it is
// active in Alertmanager with the documented labels within 2 s, triggers
// PagerDuty, posts a card and a chat message; across a herald restart it
// stays active in Alertmanager past its resolve_timeout and nothing is
// sent twice; its resolution resolves the PagerDuty alert with the same
// dedup key and the Alertmanager alert within 2 s.
func TestOnCallDestinations(t *testing.T) {
	beside(t)
	const resolveTimeout = 5 * time.Second
	env := controlPlanes.Get(t)
	client, err := env.Client()
	if err != nil {
		t.Fatal(err)
	}
	am := testenv.StartAlertmanager(t, resolveTimeout)
	pd := oncalltest.NewPagerDuty(t)
	teams := oncalltest.NewTeams(t)
	var chatMu sync.Mutex
	var chat []string
	chatSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		chatMu.Lock()
		chat = append(chat, string(b))
		chatMu.Unlock()
	}))
	defer chatSrv.Close()
	tmpl, err := os.ReadFile("../../examples/templates/google-chat.tmpl")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	const routingKey = "R0UT1NGK3Y0123456789abcdefABCDEF"
	cfg := fmt.Sprintf(`
rules:
  - name: pod-crashloop
    kind: Pod
    detector: crashloop
    severity: critical
    restartStep: -1
    settle: 2s
    alertLabels: {team: payments}
    sinks: [am, page, teams, chat]
sinks:
  - name: am
    alertmanager: {urls: [%q], resendInterval: 1s, clusterName: test}
  - name: page
    pagerduty: {routingKey: {file: %s}, url: %q, clusterName: test}
  - name: teams
    teams: {urlFrom: {file: %s}, clusterName: test}
  - name: chat
    webhook:
      url: %s
      body: |
%s`, am.URL, writeFile(t, dir, "routing-key", routingKey), pd.URL, writeFile(t, dir, "teams-url", teams.URL), chatSrv.URL,
		"        "+strings.ReplaceAll(strings.TrimRight(string(tmpl), "\n"), "\n", "\n        ")+"\n")

	ctx := context.Background()
	if _, err := client.CoreV1().Pods("default").Create(ctx, newPod("web"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	setStatus(t, client, "web", ready, 0)
	h := startedHerald(t, env, cfg)

	setStatus(t, client, "web", crashLooping, 3)
	isActive := func() bool {
		for _, a := range activeAlerts(t, am) {
			if a.Labels["alertname"] == "CrashLoopBackOff" && a.Labels["pod"] == "web" {
				return true
			}
		}
		return false
	}
	took := within(t, 2*time.Second, "the crash loop active in Alertmanager", isActive)
	t.Logf("active in Alertmanager %s after the pod's status changed", took.Round(time.Millisecond))
	got := activeAlerts(t, am)[0].Labels
	want := map[string]string{"alertname": "CrashLoopBackOff", "severity": "critical", "namespace": "default", "pod": "web",
		"container": "app", "rule": "pod-crashloop", "cluster": "test", "team": "payments"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("labels = %v\nwant     %v", got, want)
	}
	within(t, 5*time.Second, "the PagerDuty trigger, the Teams card and the chat message", func() bool {
		chatMu.Lock()
		defer chatMu.Unlock()
		return len(pd.Events()) == 1 && len(teams.Cards()) == 1 && len(chat) == 1
	})
	trigger := pd.Events()[0]
	if trigger.EventAction != "trigger" || trigger.RoutingKey != routingKey || trigger.DedupKey == "" || !strings.Contains(trigger.Payload.Summary, "web") {
		t.Errorf("PagerDuty got %+v", trigger)
	}
	if !strings.Contains(fmt.Sprint(teams.Cards()[0]), "default") || !strings.Contains(chat[0], `"text": "*`) && !strings.Contains(chat[0], `"text":"*`) {
		t.Errorf("Teams card %v, chat message %s", teams.Cards()[0], chat[0])
	}

	// A restart: the new herald keeps the alert alive in Alertmanager
	// from the ledger, and sends nothing again.
	h.stop()
	h = startedHerald(t, env, cfg)
	defer h.stop()
	tick := time.NewTicker(250 * time.Millisecond)
	for end := time.Now().Add(2 * resolveTimeout); time.Now().Before(end); <-tick.C {
		if !isActive() {
			t.Fatalf("the alert resolved in Alertmanager after the restart: not re-posted\n%s", h.logs)
		}
	}
	tick.Stop()
	if n := len(pd.Events()); n != 1 || len(teams.Cards()) != 1 {
		t.Errorf("after the restart PagerDuty has %d events and Teams %d cards; want 1 each (nothing re-sent)", n, len(teams.Cards()))
	}

	// Recovered: PagerDuty resolves the same alert, Alertmanager too.
	setStatus(t, client, "web", ready, 4)
	within(t, 15*time.Second, "the PagerDuty resolve", func() bool { return len(pd.Events()) == 2 })
	resolve := pd.Events()[1]
	if resolve.EventAction != "resolve" || resolve.DedupKey != trigger.DedupKey {
		t.Errorf("PagerDuty's second event = %s %q, want resolve %q", resolve.EventAction, resolve.DedupKey, trigger.DedupKey)
	}
	took = within(t, 2*time.Second, "the alert resolved in Alertmanager", func() bool { return !isActive() })
	t.Logf("resolved in Alertmanager %s after PagerDuty's resolve arrived", time.Since(resolve.At).Round(time.Millisecond))
	if inv := append(pd.Invalid(), teams.Invalid()...); len(inv) > 0 {
		t.Errorf("rejected requests: %v", inv)
	}
}
