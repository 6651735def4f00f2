package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/herald-k8s/herald/sinks"
)

// arrival is one delivery and when the receiver got it.
type arrival struct {
	at time.Time
	p  sinks.Payload
}

// arrivals records every delivery of a receiver with its arrival time.
type arrivals struct {
	mu  sync.Mutex
	got []arrival
}

func record(recv *receiver) *arrivals {
	a := &arrivals{}
	go func() {
		for p := range recv.got {
			a.mu.Lock()
			a.got = append(a.got, arrival{time.Now(), p})
			a.mu.Unlock()
		}
	}()
	return a
}

// matching returns the deliveries keep accepts, in arrival order.
func (a *arrivals) matching(keep func(sinks.Payload) bool) []arrival {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []arrival
	for _, x := range a.got {
		if keep(x.p) {
			out = append(out, x)
		}
	}
	return out
}

// await waits until n deliveries match keep, failing after timeout.
func (a *arrivals) await(t *testing.T, n int, timeout time.Duration, keep func(sinks.Payload) bool) []arrival {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return len(a.matching(keep)) >= n, nil
	})
	if err != nil {
		t.Fatalf("%d matching deliveries within %s, want %d; all: %s", len(a.matching(keep)), timeout, n, a)
	}
	return a.matching(keep)
}

func (a *arrivals) String() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var parts []string
	for _, x := range a.got {
		parts = append(parts, fmt.Sprintf("%s %s %s/%s %q", x.p.Transition, x.p.Incident.Rule, x.p.Object.Namespace, x.p.Object.Name, x.p.Change))
	}
	return strings.Join(parts, "; ")
}

func inNamespace(ns string) func(sinks.Payload) bool {
	return func(p sinks.Payload) bool { return p.Object.Namespace == ns }
}

// deploymentPods creates n pods <deploy>-5d8f-<i> of the Deployment
// deploy in ns (owned by its ReplicaSet, as the controller would make
// them) and returns their names.
func deploymentPods(t *testing.T, client kubernetes.Interface, ns, deploy string, n int) []string {
	t.Helper()
	return deploymentPodsOn(t, client, ns, deploy, n, "")
}

// deploymentPodsOn is deploymentPods for pods scheduled on node.
func deploymentPodsOn(t *testing.T, client kubernetes.Interface, ns, deploy string, n int, node string) []string {
	t.Helper()
	var names []string
	for i := range n {
		pod := newPod(fmt.Sprintf("%s-5d8f-%d", deploy, i))
		pod.Namespace, pod.Spec.NodeName = ns, node
		pod.Labels = map[string]string{"app": deploy, "pod-template-hash": "5d8f"}
		pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: deploy + "-5d8f", UID: types.UID("rs-" + ns + deploy), Controller: ptr.To(true)}}
		if _, err := client.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		names = append(names, pod.Name)
	}
	return names
}

func createNamespaces(t *testing.T, client kubernetes.Interface, names ...string) {
	t.Helper()
	for _, ns := range names {
		if _, err := client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWorkloadStormIsPaced: ten pods of one Deployment crash within 5 s,
// in two namespaces at once: one where the rule paces updates (10 s) and
// one where it does not. Paced: exactly one firing, as fast as unpaced,
// and one update ("10/10 pods") when the interval ends. Unpaced: a firing
// and nine updates, as before. Then 100 Deployments × 3 pods crash within
// 10 s: 100 firings, none held back by another incident's pacing.
func TestWorkloadStormIsPaced(t *testing.T) {
	alone(t) // it asserts latencies
	env := controlPlanes.Get(t)
	client, _ := env.Client()
	recv := newReceiver(t)
	got := record(recv)
	createNamespaces(t, client, "paced", "unpaced", "many")
	const interval = 10 * time.Second
	metrics := freeAddr(t)
	h := startedHerald(t, env, fmt.Sprintf(`
rules:
  - {name: paced, kind: Pod, detector: crashloop, groupBy: workload, updateInterval: %s, namespaces: {include: [paced, many]}, sinks: [hook]}
  - {name: unpaced, kind: Pod, detector: crashloop, groupBy: workload, updateInterval: 0s, namespaces: {include: [unpaced]}, sinks: [hook]}
sinks:
  - {name: hook, webhook: {url: %s/herald}, queueSize: 2000}
`, interval, recv.URL), "--metrics-addr", metrics)
	defer h.stop()

	paced := deploymentPods(t, client, "paced", "api", 10)
	unpaced := deploymentPods(t, client, "unpaced", "api", 10)
	var firstCrash time.Time
	tick := time.NewTicker(450 * time.Millisecond) // the storm's schedule: 10 crashes in 4.5 s
	for i := range 10 {
		if i == 0 {
			firstCrash = time.Now()
		}
		setStatusIn(t, client, "paced", paced[i], crashLooping, 2)
		setStatusIn(t, client, "unpaced", unpaced[i], crashLooping, 2)
		<-tick.C
	}
	tick.Stop()

	unpacedGot := got.await(t, 10, 20*time.Second, inNamespace("unpaced"))
	firing := got.await(t, 1, 5*time.Second, inNamespace("paced"))[0]
	if firing.p.Transition != "firing" || firing.p.Object.Kind != "Deployment" {
		t.Fatalf("paced: first delivery %s for %s, want the firing of the Deployment", firing.p.Transition, firing.p.Object.Kind)
	}
	pacedLatency, unpacedLatency := firing.at.Sub(firstCrash), unpacedGot[0].at.Sub(firstCrash)
	t.Logf("first alert latency from the first crash: paced %s, unpaced %s", pacedLatency, unpacedLatency)
	if pacedLatency > time.Second || pacedLatency > unpacedLatency+200*time.Millisecond {
		t.Errorf("paced firing took %s (unpaced %s): pacing must not delay the first alert", pacedLatency, unpacedLatency)
	}
	for i, a := range unpacedGot {
		if want := map[bool]string{true: "firing", false: "updated"}[i == 0]; a.p.Transition != want {
			t.Errorf("unpaced delivery %d: %s, want %s", i, a.p.Transition, want)
		}
	}

	// The paced incident's one update: due an interval after the firing.
	pacedGot := got.await(t, 2, interval+5*time.Second, inNamespace("paced"))
	update := pacedGot[1]
	if update.p.Transition != "updated" || !strings.HasSuffix(update.p.Change, "→ 10 of 10 pods") ||
		update.p.Title != "CrashLoopBackOff: Deployment paced/api: 10/10 pods (container app)" {
		t.Errorf("paced update: %s %q %q", update.p.Transition, update.p.Change, update.p.Title)
	}
	if early := update.at.Sub(firing.at); early < interval-time.Second || early > interval+2*time.Second {
		t.Errorf("paced update came %s after the firing, want the interval (%s)", early, interval)
	}
	t.Logf("paced: firing, then %q %s later; unpaced: %d notifications", update.p.Change, update.at.Sub(firing.at).Round(time.Millisecond), len(unpacedGot))
	// Nine changes (450 ms apart), one update: eight merged into it.
	if n := metricValue(t, metrics, `herald_notifications_coalesced_total{rule="paced"}`); n != 8 {
		t.Errorf("herald_notifications_coalesced_total{rule=paced} = %v, want 8", n)
	}

	// 100 Deployments crash within 10 s: each first alert at once.
	crashAt := map[string]time.Time{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for d := range 100 {
		wg.Go(func() {
			time.Sleep(time.Duration(d) * 90 * time.Millisecond) // the storm's schedule: 100 workloads in 9 s
			deploy := fmt.Sprintf("svc%03d", d)
			for i, name := range deploymentPods(t, client, "many", deploy, 3) {
				if err := writePodStatusIn(client, "many", name, crashLooping, 2); err != nil {
					t.Error(err)
				}
				if i == 0 {
					// The crash exists once the API server has it: from
					// then on, the time is herald's.
					mu.Lock()
					crashAt[deploy] = time.Now()
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	t.Logf("100 Deployments × 3 pods crashed in %s", time.Since(start).Round(time.Millisecond))
	firings := got.await(t, 100, 30*time.Second, func(p sinks.Payload) bool { return p.Object.Namespace == "many" && p.Transition == "firing" })
	var latencies []time.Duration
	for _, f := range firings {
		latencies = append(latencies, f.at.Sub(crashAt[f.p.Object.Name]))
	}
	slices.Sort(latencies)
	p50, p99 := latencies[len(latencies)/2], latencies[len(latencies)*99/100]
	t.Logf("100 workload storms: first-alert latency p50 %s, p99 %s, max %s", p50, p99, latencies[len(latencies)-1])
	if p99 > 2*time.Second {
		t.Errorf("first alerts held back: p99 %s after their workload's first crash", p99)
	}
	// Their updates (2 → 3 pods) are paced per incident: none comes
	// sooner than its own incident's interval after its firing.
	fired := map[string]time.Time{}
	for _, f := range firings {
		fired[f.p.Incident.ID] = f.at
	}
	for _, u := range got.matching(func(p sinks.Payload) bool { return p.Object.Namespace == "many" && p.Transition == "updated" }) {
		if gap := u.at.Sub(fired[u.p.Incident.ID]); gap < interval-time.Second {
			t.Errorf("%s: update %s after its firing, within the interval", u.p.Object.Name, gap)
		}
	}
}

// setStatusIn is setStatus for a pod in namespace ns.
func setStatusIn(t *testing.T, client kubernetes.Interface, ns, name string, state appState, restarts int32) {
	t.Helper()
	if err := writePodStatusIn(client, ns, name, state, restarts); err != nil {
		t.Fatal(err)
	}
}

// TestRestartWithAHeldUpdate: herald stops while an update is held; the
// ledger keeps it, and the restarted herald sends it once, when it is
// due, as the incident's second notification (the same idempotency key
// the first herald would have used).
func TestRestartWithAHeldUpdate(t *testing.T) {
	beside(t)
	env := controlPlanes.Get(t)
	client, _ := env.Client()
	recv := newReceiver(t)
	cfg := fmt.Sprintf(`
rules:
  - {name: pod-crashloop, kind: Pod, detector: crashloop, groupBy: workload, updateInterval: 8s, sinks: [hook]}
sinks:
  - {name: hook, webhook: {url: %s/herald}}
`, recv.URL)
	first := startedHerald(t, env, cfg)
	pods := deploymentPods(t, client, "default", "api", 3)
	setStatus(t, client, pods[0], crashLooping, 2)
	firing := recv.next(t, 5*time.Second)
	if firing.Transition != "firing" {
		t.Fatalf("got %s, want firing", firing.Transition)
	}
	setStatus(t, client, pods[1], crashLooping, 2)
	setStatus(t, client, pods[2], crashLooping, 2)
	// Held: wait until the ledger says so, then stop.
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		cms, err := client.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{LabelSelector: "herald.io/ledger=herald-ledger"})
		if err != nil {
			return false, err
		}
		for _, cm := range cms.Items {
			if strings.Contains(cm.Data["incidents.json"], `"held":`) && strings.Contains(cm.Data["incidents.json"], pods[2]) {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("the ledger never recorded the held update: %v", err)
	}
	first.stop()
	select {
	case p := <-recv.got:
		t.Fatalf("sent %s (%q) before the interval ended", p.Transition, p.Change)
	default:
	}

	second := startedHerald(t, env, cfg)
	defer second.stop()
	update := recv.next(t, 15*time.Second)
	if update.Transition != "updated" || update.Seq != 2 || update.Incident.ID != firing.Incident.ID || update.Change != "1 → 3 of 3 pods" {
		t.Fatalf("after the restart: %s seq %d %q, want the held update, seq 2, \"1 → 3 of 3 pods\"", update.Transition, update.Seq, update.Change)
	}
	if due := firing.Time.Add(8 * time.Second); update.Time.Before(due.Add(-time.Second)) {
		t.Errorf("update made at %s, before it was due (%s)", update.Time, due)
	}
	expectSentinel(t, client, recv, "sentinel") // nothing else was queued
}
