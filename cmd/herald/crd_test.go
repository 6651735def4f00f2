package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
)

var (
	crdGVR    = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	widgetGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
)

// installWidgetCRD creates a namespaced Widget CRD and waits until it is
// served.
func installWidgetCRD(t *testing.T, dyn dynamic.Interface) { installCRD(t, dyn, widgetGVR, "Widget") }

// installCRD creates a namespaced CRD of kind at gvr, its schema left
// open, and waits until it is served.
func installCRD(t *testing.T, dyn dynamic.Interface, gvr schema.GroupVersionResource, kind string) {
	t.Helper()
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": gvr.Resource + "." + gvr.Group},
		"spec": map[string]any{
			"group": gvr.Group,
			"names": map[string]any{"kind": kind, "plural": gvr.Resource, "singular": strings.ToLower(kind), "listKind": kind + "List"},
			"scope": "Namespaced",
			"versions": []any{map[string]any{
				"name": gvr.Version, "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object", "x-kubernetes-preserve-unknown-fields": true,
				}},
			}},
		},
	}}
	ctx := context.Background()
	if _, err := dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(gvr).Namespace("default").List(ctx, metav1.ListOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("%s CRD not served: %v", kind, err)
	}
}

func widget(name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": name, "namespace": "default"},
		"spec":     spec,
	}}
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// metricValue scrapes one sample from herald's /metrics (0 if absent).
func metricValue(t *testing.T, addr, sample string) float64 {
	t.Helper()
	v, err := scrapeMetric(addr, sample)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// scrapeMetric reads one sample of the /metrics at addr, 0 if absent.
func scrapeMetric(addr, sample string) (float64, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile("(?m)^" + regexp.QuoteMeta(sample) + ` (\S+)$`).FindSubmatch(body)
	if m == nil {
		return 0, nil
	}
	return strconv.ParseFloat(string(m[1]), 64)
}

// TestCELRuleOnCustomResource: a CEL rule on a CRD fires and resolves on
// the real control plane, while a rule whose CEL fails at run time on the
// same objects is counted, logged once, and stops nothing.
func TestCELRuleOnCustomResource(t *testing.T) {
	beside(t)
	env := controlPlanes.Get(t)
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	installWidgetCRD(t, dyn)
	recv := newReceiver(t)
	metricsAddr := freeAddr(t)
	logs := startHeraldArgs(t, env, fmt.Sprintf(`
incidents: {resolveHoldDown: 0s}   # the hold-down is not what this test is about
rules:
  - name: widget-broken
    kind: Widget
    apiVersion: example.com/v1
    condition: 'has(object.spec.broken) && object.spec.broken == true'
    reason: WidgetBroken
    severity: critical
    message:
      title: 'Widget {{ .Name }} is broken'
      text: 'owner: {{ .Object.spec.owner | default "nobody" }}'
    sinks: [hook]
  - name: widget-bad-cel
    kind: Widget
    apiVersion: example.com/v1
    condition: 'object.spec.missing.deep == 1'
    sinks: [hook]
sinks:
  - name: hook
    webhook:
      url: %s/herald
`, recv.URL), "--metrics-addr", metricsAddr)

	ctx := context.Background()
	widgets := dyn.Resource(widgetGVR).Namespace("default")
	for i := range 3 { // three objects the bad rule fails on
		if _, err := widgets.Create(ctx, widget(fmt.Sprintf("ok-%d", i), map[string]any{"broken": false}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := widgets.Create(ctx, widget("w1", map[string]any{"broken": true, "owner": "team-a"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fired := recv.next(t, 10*time.Second)
	if fired.Transition != "firing" || fired.Object.Kind != "Widget" || fired.Object.Name != "w1" ||
		fired.Incident.Reason != "WidgetBroken" || fired.Title != "Widget w1 is broken" || fired.Text != "owner: team-a" {
		t.Fatalf("got %+v, want firing for Widget w1 with the rule's templates", fired)
	}
	w1, err := widgets.Get(ctx, "w1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	unstructured.SetNestedField(w1.Object, false, "spec", "broken")
	if _, err := widgets.Update(ctx, w1, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	resolved := recv.next(t, 10*time.Second)
	if resolved.Transition != "resolved" || resolved.Object.Name != "w1" || resolved.Incident.ID != fired.Incident.ID {
		t.Fatalf("got %+v, want resolved for w1", resolved)
	}

	// The bad rule fails on every widget (4 objects, 5 evaluations at
	// least) yet is logged once within the minute.
	badErrors := `herald_rule_evaluation_errors_total{rule="widget-bad-cel"}`
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return metricValue(t, metricsAddr, badErrors) >= 5, nil
	})
	if err != nil {
		t.Errorf("%s = %v, want at least 5", badErrors, metricValue(t, metricsAddr, badErrors))
	}
	if n := strings.Count(logs.String(), `msg="rule evaluation failed" rule=widget-bad-cel`); n != 1 {
		t.Errorf("the bad rule was logged %d times, want once per minute:\n%s", n, logs)
	}
	if n := metricValue(t, metricsAddr, `herald_rule_evaluation_errors_total{rule="widget-broken"}`); n != 0 {
		t.Errorf("the good rule counted %v errors", n)
	}
	// The operational metrics are there and move.
	for _, sample := range []string{`herald_leader`, `herald_cache_synced`, `herald_sink_sent_total{sink="hook"}`, `herald_notifications_total{rule="widget-broken",transition="firing"}`} {
		if v := metricValue(t, metricsAddr, sample); v < 1 {
			t.Errorf("%s = %v", sample, v)
		}
	}
	if v := metricValue(t, metricsAddr, `herald_workqueue_adds_total{name="herald"}`); v < 5 {
		t.Errorf("work queue adds = %v, want at least 5", v)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return metricValue(t, metricsAddr, "herald_ledger_writes_total") >= 1, nil
	})
	if err != nil {
		t.Errorf("no ledger write counted")
	}
	// A leader's first write folds the ledger's journal.
	if v := metricValue(t, metricsAddr, "herald_ledger_journal_folds_total"); v < 1 {
		t.Errorf("herald_ledger_journal_folds_total = %v after the leader's first ledger write, want at least 1", v)
	}
	// The ledger's size: the incident (hundreds of bytes) is in a shard,
	// hashed while it is open, archived once resolved.
	if v := metricValue(t, metricsAddr, `herald_ledger_shards{kind="hashed"}`); v < 1 {
		t.Errorf("herald_ledger_shards{kind=\"hashed\"} = %v after the leader's first ledger write, want at least 1", v)
	}
	held := 0.0
	for _, kind := range []string{"hashed", "journal", "archive"} {
		held += metricValue(t, metricsAddr, `herald_ledger_shard_bytes{kind="`+kind+`"}`)
	}
	if held < 200 {
		t.Errorf("herald_ledger_shard_bytes = %v in all after a ledger write holding an incident, want hundreds", held)
	}
}
