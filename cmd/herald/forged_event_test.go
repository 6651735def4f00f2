package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/herald-k8s/herald/internal/testenv"
	"github.com/herald-k8s/herald/sinks"
)

// TestForgedEventPagesNobody, on the real control plane: an identity that
// may only create Events in team-a creates a new-style Event (eventTime
// set: the API server then accepts any regarding namespace) in team-a
// about a Pod in team-b, and another about a kind named "Severity". With
// a warning-events rule per namespace, each routed to that team's
// webhook, nothing about team-b reaches anyone, both Events are counted
// in /metrics, and a genuine Event in team-a, created after them, pages
// team-a (so herald was watching).
func TestForgedEventPagesNobody(t *testing.T) {
	beside(t)
	env := controlPlanes.Get(t)
	ctx := context.Background()
	admin, err := env.Client()
	if err != nil {
		t.Fatal(err)
	}
	uids := map[string]string{}
	for _, ns := range []string{"team-a", "team-b"} {
		if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pod := newPod("web")
		pod.Namespace = ns
		created, err := admin.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		uids[ns] = string(created.UID)
	}
	cfg, err := env.ServiceAccountConfig(ctx, "team-a", "tenant", testenv.Permissions{Namespace: []rbacv1.PolicyRule{
		{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create"}}}})
	if err != nil {
		t.Fatal(err)
	}
	tenant, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}

	hookA, hookB := newReceiver(t), newReceiver(t)
	metricsAddr := freeAddr(t)
	logs := startHeraldArgs(t, env, fmt.Sprintf(`
rules:
  - {name: team-a-events, kind: Event, detector: warning-events, reasons: [BackOff], namespaces: {include: [team-a]}, sinks: [team-a]}
  - {name: team-b-events, kind: Event, detector: warning-events, reasons: [BackOff], namespaces: {include: [team-b]}, sinks: [team-b]}
sinks:
  - {name: team-a, webhook: {url: %s/a}}
  - {name: team-b, webhook: {url: %s/b}}
`, hookA.URL, hookB.URL), "--metrics-addr", metricsAddr)

	event := func(name string, regarding corev1.ObjectReference) *eventsv1.Event {
		return &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a"},
			EventTime: metav1.NowMicro(), Type: corev1.EventTypeWarning, Reason: "BackOff", Action: "Restarting",
			Note: "Back-off restarting failed container", ReportingController: "kubelet", ReportingInstance: "node-1", Regarding: regarding}
	}
	if _, err := tenant.EventsV1().Events("team-b").Create(ctx, event("direct", corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: "team-b", Name: "web"}),
		metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("the tenant created an Event in team-b (err %v): the test's identity is not confined to team-a", err)
	}
	for _, ev := range []*eventsv1.Event{
		event("forged-namespace", corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: "team-b", Name: "web", UID: types.UID(uids["team-b"])}),
		event("forged-kind", corev1.ObjectReference{APIVersion: "v1", Kind: "Severity", Namespace: "team-a", Name: "info"}),
	} {
		if _, err := tenant.EventsV1().Events("team-a").Create(ctx, ev, metav1.CreateOptions{}); err != nil {
			t.Fatalf("the API server refused the forged Event %s (the hole this test is about is closed upstream?): %v", ev.Name, err)
		}
	}
	genuine := event("genuine", corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: "team-a", Name: "web", UID: types.UID(uids["team-a"])})
	if _, err := admin.EventsV1().Events("team-a").Create(ctx, genuine, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	paged := func(name string, p sinks.Payload) {
		t.Errorf("%s was paged about %s %s/%s: %s", name, p.Object.Kind, p.Object.Namespace, p.Object.Name, p.Title)
	}
	for p := hookA.next(t, 20*time.Second); p.Object.Namespace != "team-a" || p.Object.Name != "web" || p.Object.Kind != "Pod"; p = hookA.next(t, 20*time.Second) {
		paged("team-a", p)
	}
	if err := waitFor(20*time.Second, func() bool {
		return metricValue(t, metricsAddr, `herald_events_ignored_total{reason="foreign-namespace"}`) >= 1 &&
			metricValue(t, metricsAddr, `herald_events_ignored_total{reason="unknown-kind"}`) >= 1
	}); err != nil {
		t.Errorf("the forged Events were not counted: %v", err)
	}
	time.Sleep(time.Second) // anything the forged Events caused would be out by now
	for name, hook := range map[string]*receiver{"team-a": hookA, "team-b": hookB} {
		for len(hook.got) > 0 {
			paged(name, <-hook.got)
		}
	}
	if n := strings.Count(logs.String(), "ignoring a Warning Event"); n != 2 {
		t.Errorf("%d log lines about ignored Events, want 2 (one per cause):\n%s", n, logs)
	}
}
