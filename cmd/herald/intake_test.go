package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/herald-k8s/herald/internal/slackstandin"
	"github.com/herald-k8s/herald/internal/testenv"
)

// intakeConfig: herald takes alerts in from Alertmanager (token from a
// file), has its own crash-loop check (which waits 8 s before it
// speaks), routes the payments team's incidents to #payments, and puts
// buttons on Slack messages (bob may acknowledge).
const intakeConfig = `
incidents: {resolveHoldDown: 0s, flapping: {starts: 0}, updateInterval: 0s}
intake:
  alertmanager:
    listen: %q
    token: {file: %q}
rules:
  - {name: crash, kind: Pod, detector: crashloop, for: 8s, namespaces: {include: [shop]}, sinks: [slack]}
routes:
  - {name: payments, match: {teams: [payments]}, to: [{sink: slack, channel: "#payments"}]}
sinks:
  - name: slack
    slack:
      token: {value: xoxb-intake-test, allowPlaintext: true}
      channel: "#alerts"
      apiURL: %q
      insecure: true
      interactive:
        appToken: {value: xapp-1-A0STANDIN-1-0123abcd, allowPlaintext: true}
        allow:
          - namespaces: [shop]
            acknowledge: [U0BOB1]
`

// alertmanagerToHerald is an Alertmanager configuration whose one
// receiver is herald's intake at addr, with the token from tokenFile, as
// kube-prometheus-stack's would be (docs/prometheus.md); its timings are
// short for the test.
func alertmanagerToHerald(addr, tokenFile string) string {
	return testenv.WebhookRoute{URL: "http://" + addr + "/alerts", TokenFile: tokenFile,
		GroupBy: []string{"alertname", "namespace", "pod"}, GroupInterval: time.Second}.Config()
}

// postAlert posts one alert to Alertmanager's API as Prometheus does
// (an end in the past resolves it).
func postAlert(t *testing.T, am *testenv.Alertmanager, labels, annotations map[string]string, startsAt, endsAt time.Time) {
	t.Helper()
	a := map[string]any{"labels": labels, "annotations": annotations, "startsAt": startsAt.UTC().Format(time.RFC3339Nano)}
	if !endsAt.IsZero() {
		a["endsAt"] = endsAt.UTC().Format(time.RFC3339Nano)
	}
	body, _ := json.Marshal([]any{a})
	resp, err := http.Post(am.URL+"/api/v2/alerts", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("Alertmanager refused the alert: %s", resp.Status)
	}
}

// crashPodOnNode is crashOwnedPod's pod, without the sidecar, on
// node-1, whose kubelet stand-in answers its logs.
func crashPodOnNode(t *testing.T, client kubernetes.Interface, deployment, hash string) string {
	t.Helper()
	pod := ownedPod(deployment, hash)
	pod.Spec.NodeName = "node-1"
	createCrashing(t, client, pod)
	return pod.Name
}

// topLevel counts herald's top-level Slack messages whose text has sub.
func topLevel(sl *slackstandin.Server, sub string) int {
	n := 0
	for _, m := range sl.Messages() {
		if m.ThreadTS == "" && !m.Ephemeral && strings.Contains(string(m.Blocks), sub) {
			n++
		}
	}
	return n
}

// holdsFor checks cond throughout d (polling), failing the test the
// moment it does not hold: for what must not happen in a window.
func holdsFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(d)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for time.Now().Before(end) {
		if !cond() {
			t.Fatalf("%s no longer holds", what)
		}
		<-tick.C
	}
}

// TestPrometheusAlertEndToEnd: a real Alertmanager sends a
// KubePodCrashLooping (posted to its API as Prometheus does) to herald's
// receiver, about a crash-looping pod on the real API server whose
// Deployment was just rolled. It reaches Slack as one message, in the
// owning team's channel, led by the alert's summary, with the crashed
// container's log tail, the hint and what changed; herald's own
// crash-loop check of the same pod, once its for: has passed, makes no
// second message. Acknowledge from the button acknowledges it; the
// alert's resolution resolves it; a herald Silence on the Deployment
// mutes it when it fires again.
func TestPrometheusAlertEndToEnd(t *testing.T) {
	beside(t)
	env := controlPlanes.Get(t)
	client, _ := env.Client()
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	if err := env.InstallCRDs(context.Background(), silenceCRDs); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop",
		Annotations: map[string]string{"herald.io/team": "payments"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.AppsV1().Deployments("shop").Create(ctx, shopDeployment("checkout", "shop/checkout:1.8.2", "p1", "k1", "t1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	startCrashKubelet(t, client)
	sl := buttonsSlack(t)

	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("intake-token-5f2c9e\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	intakeAddr := freeAddr(t)
	am, err := testenv.RunAlertmanagerWith(ctx, t.TempDir(), alertmanagerToHerald(intakeAddr, tokenFile), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer am.Stop()
	metrics := freeAddr(t)
	h := startedHerald(t, env, fmt.Sprintf(intakeConfig, intakeAddr, tokenFile, sl.URL()+"/api/"), "--metrics-addr", metrics)
	defer h.stop()

	// The rollout herald's change record sees, then its pod crash-loops.
	d, err := client.AppsV1().Deployments("shop").Get(ctx, "checkout", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.Spec.Template.Spec.Containers[0].Image = "shop/checkout:1.9.0"
	d.Annotations["deployment.kubernetes.io/revision"] = "2"
	if _, err := client.AppsV1().Deployments("shop").Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := crashPodOnNode(t, client, "checkout", "7d9f")
	crashed := time.Now()

	labels := map[string]string{"alertname": "KubePodCrashLooping", "namespace": "shop", "pod": pod, "container": "app",
		"severity": "warning", "job": "kube-state-metrics"}
	annotations := map[string]string{"summary": "Pod is crash looping.",
		"description": "Pod shop/" + pod + " (app) is in waiting state (reason: \"CrashLoopBackOff\").",
		"runbook_url": "https://runbooks.prometheus-operator.dev/runbooks/kubernetes/kubepodcrashlooping"}
	started := time.Now().Add(-15 * time.Minute)
	postAlert(t, am, labels, annotations, started, time.Time{})

	msg := alertWith(t, sl, "Pod is crash looping.", "cannot reach the database", "Exit code 1", "1.9.0", "herald_ack")
	if msg.Channel != "#payments" {
		t.Errorf("the alert went to %s, want the payments team's #payments", msg.Channel)
	}
	for _, want := range []string{"kubepodcrashlooping", pod} {
		if !strings.Contains(string(msg.Blocks), want) {
			t.Errorf("the message lacks %q: %s", want, msg.Blocks)
		}
	}
	// herald's own check sees the crash loop too; once its for: has
	// passed it would speak, but the alert spoke for both.
	holdsFor(t, time.Until(crashed.Add(8*time.Second+4*time.Second)), "one message about the pod", func() bool {
		return topLevel(sl, pod) == 1
	})
	if v := metricValue(t, metrics, `herald_notifications_total{rule="crash",transition="firing"}`); v != 0 {
		t.Errorf("herald's own crash-loop check fired %v times beside the alert", v)
	}

	press(t, sl, msg, "herald_ack", "U0BOB1")
	alertWith(t, sl, "Acknowledged by", "Pod is crash looping.")

	// The pod recovers, and Prometheus resolves its alert.
	setStatusIn(t, client, "shop", pod, ready, 3)
	postAlert(t, am, labels, annotations, started, time.Now().Add(-time.Second))
	if err := waitFor(30*time.Second, func() bool {
		return metricValue(t, metrics, `herald_notifications_total{rule="alertmanager",transition="resolved"}`) == 1
	}); err != nil {
		t.Fatalf("the alert's resolution did not resolve the incident:\n%s", grepLines(h.logs.String(), "incident"))
	}
	alertWith(t, sl, "resolved", "KubePodCrashLooping")

	// A Silence on the Deployment; then the pod crash-loops again and
	// the alert fires again: muted, herald's own check with it.
	createSilence(t, dyn, "shop", "checkout-work", map[string]any{"workload": "checkout"}, time.Now().Add(time.Hour))
	silenceStatus(t, dyn, "shop", "checkout-work", "active", 0)
	before := topLevel(sl, pod)
	setStatusIn(t, client, "shop", pod, crashLooping, 5)
	postAlert(t, am, labels, annotations, time.Now(), time.Time{})
	silenceStatus(t, dyn, "shop", "checkout-work", "active", 1)
	if n := topLevel(sl, pod); n != before {
		t.Errorf("the muted alert made a Slack message (%d, was %d)", n, before)
	}
	if v := metricValue(t, metrics, `herald_intake_alerts_total{outcome="mapped"}`); v != 2 {
		t.Errorf("mapped alerts = %v, want 2 (the first firing and the one after the silence)", v)
	}
}
