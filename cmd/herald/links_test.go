package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestLinksFilled: a crash loop of a Deployment's pod carries its rule's
// dashboard link and its route's log search, filled with the cluster, the
// namespace, the workload (from the pod's ReplicaSet), a label and the
// incident's time window — 15 min before the problem to now; a link that
// comes out with no host (a label the pod lacks) is left out, counted and
// logged, and the notification still goes.
func TestLinksFilled(t *testing.T) {
	beside(t)
	env := controlPlanes.Get(t)
	client, _ := env.Client()
	recv := newReceiver(t)
	metricsAddr := freeAddr(t)
	h := startedHerald(t, env, fmt.Sprintf(`
clusterName: prod-eu
rules:
  - name: pod-crashloop
    kind: Pod
    detector: crashloop
    groupBy: workload
    sinks: [hook]
    links:
      - name: Dashboard
        url: "https://grafana.example.com/d/k8s?var-cluster={{ .Cluster }}&var-namespace={{ .Namespace }}&var-workload={{ .WorkloadName }}&from={{ .FromMs }}&to={{ .ToMs }}"
      - {name: Docs, url: 'https://{{ index .Labels "docs-host" }}/runbook'}
      - {name: Object, url: 'https://kube.example.com/{{ .Namespace }}/{{ .Kind }}/{{ .Name }}'}
routes:
  - name: all
    to: [{sink: hook}]
    links:
      - name: Logs
        url: 'https://loki.example.com/explore?query={namespace="{{ .Namespace }}",app="{{ index .Labels "app" }}"}'
sinks:
  - {name: hook, webhook: {url: %s/herald}}
`, recv.URL), "--metrics-addr", metricsAddr)
	defer h.stop()

	pod := newPod("api-5d8f7c-x2k4")
	pod.Labels = map[string]string{"app": "api", "pod-template-hash": "5d8f7c"} // no docs-host: Docs has no host
	pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "api-5d8f7c", UID: "rs-1", Controller: ptr.To(true)}}
	before := time.Now()
	if _, err := client.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	setStatus(t, client, pod.Name, crashLooping, 3)

	p := recv.next(t, 15*time.Second)
	if p.Transition != "firing" || p.Object.Kind != "Deployment" || p.Object.Name != "api" {
		t.Fatalf("got %s for %s %s, want the firing of Deployment api", p.Transition, p.Object.Kind, p.Object.Name)
	}
	var names []string
	byName := map[string]string{}
	for _, l := range p.Incident.Links {
		names = append(names, l.Name)
		byName[l.Name] = l.URL
	}
	if strings.Join(names, ",") != "Dashboard,Object,Logs" {
		t.Fatalf("links %v, want the rule's Dashboard and Object, then the route's Logs (Docs left out)", p.Incident.Links)
	}
	// A grouped incident's object is its workload, whichever pod was
	// looked at last.
	if want := "https://kube.example.com/default/Deployment/api"; byName["Object"] != want {
		t.Errorf("Object %s, want %s", byName["Object"], want)
	}
	if want := "https://grafana.example.com/d/k8s?var-cluster=prod-eu&var-namespace=default&var-workload=api&from="; !strings.HasPrefix(byName["Dashboard"], want) {
		t.Errorf("Dashboard %s\nwant it to begin %s", byName["Dashboard"], want)
	}
	var from, to int64
	if _, err := fmt.Sscanf(byName["Dashboard"][strings.Index(byName["Dashboard"], "&from="):], "&from=%d&to=%d", &from, &to); err != nil {
		t.Fatalf("the window of %s: %v", byName["Dashboard"], err)
	}
	// The crash loop's own start is when herald first saw it (the pod
	// says nothing earlier): within this test, 15 min before it.
	if lo, hi := before.Add(-15*time.Minute-time.Second).UnixMilli(), time.Now().UnixMilli(); from < lo || from > hi-15*60*1000 || to < from+15*60*1000 || to > hi {
		t.Errorf("window %d–%d, want from 15 min before the problem (%d–%d) to when it was filled (by %d)", from, to, lo, hi-15*60*1000, hi)
	}
	if want := "https://loki.example.com/explore?query=%7Bnamespace=%22default%22,app=%22api%22%7D"; byName["Logs"] != want {
		t.Errorf("Logs %s\nwant %s", byName["Logs"], want)
	}
	if n := metricValue(t, metricsAddr, `herald_link_errors_total{rule="pod-crashloop"}`); n < 1 {
		t.Errorf("herald_link_errors_total = %v, want the Docs link counted", n)
	}
	if !strings.Contains(h.logs.String(), "a link left out of a notification") {
		t.Error("the link left out was not logged")
	}
}
