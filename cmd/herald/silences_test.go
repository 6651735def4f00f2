package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/herald-k8s/herald/internal/silence"
	"github.com/herald-k8s/herald/internal/testenv"
	"github.com/herald-k8s/herald/sinks"
)

const silenceCRDs = "../../charts/herald/crds/silences.herald.io.yaml"

func silenceConfig(url string) string {
	return fmt.Sprintf(`
incidents: {resolveHoldDown: 0s, updateInterval: 0s}
rules:
  - {name: crash, kind: Pod, detector: crashloop, groupBy: workload, sinks: [hook]}
sinks:
  - {name: hook, webhook: {url: %s/herald}}
`, url)
}

// createSilence makes a Silence through the API, as kubectl would.
func createSilence(t *testing.T, dyn dynamic.Interface, ns, name string, matchers map[string]any, ends time.Time) {
	t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "herald.io/v1alpha1", "kind": "Silence",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"matchers": matchers, "endsAt": ends.UTC().Format(time.RFC3339)},
	}}
	if _, err := dyn.Resource(silence.Resource).Namespace(ns).Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// crashDeployment crash-loops n pods of Deployment deploy in ns.
func crashDeployment(t *testing.T, client kubernetes.Interface, ns, deploy string, n int) []string {
	t.Helper()
	pods := deploymentPods(t, client, ns, deploy, n)
	for _, p := range pods {
		setStatusIn(t, client, ns, p, crashLooping, 3)
	}
	return pods
}

func ofWorkload(ns, name string) func(sinks.Payload) bool {
	return func(p sinks.Payload) bool { return p.Object.Namespace == ns && p.Object.Name == name }
}

// TestSilences runs herald with the Silence CRD from the chart's crds/
// on one control plane: a silenced crash loop says nothing while the
// silence lasts and fires once when it ends (across a herald restart);
// one that recovers under the silence says nothing at all; a silence
// mutes only its own namespace unless it is in herald's.
func TestSilences(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	if err := env.InstallCRDs(ctx, silenceCRDs); err != nil {
		t.Fatal(err)
	}
	client, _ := env.Client()
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	createNamespaces(t, client, "herald", "team-a", "team-b", "team-c", "team-d")
	recv := newReceiver(t)
	got := record(recv)
	metrics := freeAddr(t)
	args := []string{"--namespace", "herald", "--metrics-addr", metrics}
	h := startedHerald(t, env, silenceConfig(recv.URL), args...)
	if logs := h.logs.String(); strings.Contains(logs, "Silence resources are off") {
		t.Fatalf("silences off with the CRD installed:\n%s", logs)
	}
	// sentinel crash-loops a new unsilenced workload and waits for its
	// firing: the reconciles of anything crashed before it have run.
	sentinels := 0
	sentinel := func() {
		t.Helper()
		sentinels++
		name := fmt.Sprintf("sentinel-%d", sentinels)
		crashDeployment(t, client, "team-c", name, 1)
		got.await(t, 1, 15*time.Second, ofWorkload("team-c", name))
	}

	// A Deployment silenced for 12 s, still failing when it ends.
	ends := time.Now().Add(12 * time.Second).Truncate(time.Second)
	createSilence(t, dyn, "team-a", "deploy-api", map[string]any{"workload": "api"}, ends)
	// Recovered before its silence (8 s) ends.
	recoveredEnds := time.Now().Add(8 * time.Second).Truncate(time.Second)
	createSilence(t, dyn, "team-a", "deploy-worker", map[string]any{"workload": "worker"}, recoveredEnds)
	// Not yours: team-b's silence for everything cannot mute team-c.
	createSilence(t, dyn, "team-b", "everything", map[string]any{"name": "*"}, ends.Add(time.Hour))
	// Cluster-wide: herald's namespace may mute team-d.
	createSilence(t, dyn, "herald", "team-d-maintenance", map[string]any{"namespace": "team-d"}, ends.Add(time.Hour))

	crashDeployment(t, client, "team-a", "api", 3)
	worker := crashDeployment(t, client, "team-a", "worker", 2)
	crashDeployment(t, client, "team-d", "db", 2)
	sentinel() // also: team-b's silence did not mute team-c
	if muted := metricValue(t, metrics, `herald_incidents_muted{rule="crash"}`); muted != 3 {
		t.Errorf("herald_incidents_muted = %v, want 3 (api, worker, db)", muted)
	}
	for _, p := range worker {
		if err := client.CoreV1().Pods("team-a").Delete(ctx, p, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// Restarted mid-silence: nothing re-sent, the silence still honoured.
	h.stop()
	h = startedHerald(t, env, silenceConfig(recv.URL), args...)
	defer h.stop()
	sentinel()
	if early := got.matching(func(p sinks.Payload) bool { return p.Object.Namespace != "team-c" }); len(early) != 0 || len(got.matching(inNamespace("team-c"))) != 2 {
		t.Fatalf("under the silences, across a restart: %s; want only the two sentinels' firings", got)
	}

	// The api silence ends: one firing within a few seconds.
	api := got.await(t, 1, 30*time.Second, ofWorkload("team-a", "api"))
	late := api[0].at.Sub(ends)
	if late < 0 || late > 3*time.Second {
		t.Errorf("api's firing arrived %s after its silence ended, want within 3s", late)
	}
	if p := api[0].p; p.Transition != "firing" || !strings.Contains(p.Title, "3/3 pods") {
		t.Errorf("when the silence ended: %s %q, want the firing of 3/3 pods", p.Transition, p.Title)
	}
	sentinel()
	if n := len(got.matching(ofWorkload("team-a", "api"))); n != 1 {
		t.Errorf("%d notifications for api, want 1: %s", n, got)
	}
	if n := len(got.matching(ofWorkload("team-a", "worker"))) + len(got.matching(inNamespace("team-d"))); n != 0 {
		t.Errorf("worker (recovered under its silence) or team-d (cluster-wide silence) notified: %s", got)
	}
	if n := metricValue(t, metrics, `herald_notifications_silenced_total{rule="crash"}`); n == 0 {
		t.Errorf("herald_notifications_silenced_total is 0 after a restart with muted incidents open")
	}
	t.Logf("api's firing %s after its silence ended; all deliveries: %s", late.Round(10*time.Millisecond), got)
}
