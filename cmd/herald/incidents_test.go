package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/herald-k8s/herald/sinks"
)

func ledgerConfig(url, extra string) string {
	return fmt.Sprintf(`
incidents:
  ledgerName: %s
rules:
  - name: pod-crashloop
    kind: Pod
    detector: crashloop
    sinks: [hook]%s
sinks:
  - name: hook
    webhook: {url: %s/herald}
`, "herald-ledger", extra, url)
}

// crashPods creates n pods named prefix-i and puts them in CrashLoopBackOff.
func crashPods(t *testing.T, client kubernetes.Interface, prefix string, n int) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		name := fmt.Sprintf("%s-%d", prefix, i)
		if _, err := client.CoreV1().Pods("default").Create(ctx, newPod(name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		setStatus(t, client, name, crashLooping, 3)
	}
}

// collect waits for n notifications, failing on a timeout.
func (r *receiver) collect(t *testing.T, n int, timeout time.Duration) []sinks.Payload {
	t.Helper()
	var out []sinks.Payload
	deadline := time.After(timeout)
	for len(out) < n {
		select {
		case p := <-r.got:
			out = append(out, p)
		case <-deadline:
			var got []string
			for _, p := range out {
				got = append(got, string(p.Transition)+" "+p.Title)
			}
			t.Fatalf("got %d notifications within %s, want %d:\n%s", len(out), timeout, n, strings.Join(got, "\n"))
		}
	}
	return out
}

// expectSentinel crash-loops a new pod and checks that the very next
// notification is its firing: herald's sink delivers in order, so any
// notification herald had queued before (a duplicate after a restart)
// would arrive first.
func expectSentinel(t *testing.T, client kubernetes.Interface, recv *receiver, name string) {
	t.Helper()
	crashPods(t, client, name, 1)
	next := recv.next(t, 10*time.Second)
	if next.Transition != "firing" || next.Object.Name != name+"-0" {
		t.Fatalf("next notification is %s for %s (%s), want the sentinel's firing", next.Transition, next.Object.Name, next.Title)
	}
}

// TestRestartIsQuiet: 50 crash-looping pods notified; herald stopped and
// started again says nothing new, except exactly one resolved for the pod
// that recovered while it was down; restart counts already reported do
// not count again.
func TestRestartIsQuiet(t *testing.T) {
	beside(t)
	env := controlPlanes.Get(t)
	client, _ := env.Client()
	recv := newReceiver(t)
	// Pacing would hold app-3's update (pacing across a restart is
	// TestRestartWithAHeldUpdate); a short settle and hold-down keep the
	// test short.
	cfg := strings.Replace(ledgerConfig(recv.URL, "\n    restartStep: 5\n    settle: 2s"), "incidents:\n", "incidents:\n  updateInterval: 0s\n  resolveHoldDown: 5s\n", 1)

	first := startedHerald(t, env, cfg)
	crashPods(t, client, "app", 50)
	fired := recv.collect(t, 50, 30*time.Second)
	for _, p := range fired {
		if p.Transition != "firing" {
			t.Fatalf("got %s, want 50 firing", p.Transition)
		}
	}
	first.stop()

	// While herald is down: app-7 recovers, app-3 restarts three more
	// times (3 → 6, below the step of 5 since the last report).
	setStatus(t, client, "app-7", ready, 4)
	setStatus(t, client, "app-3", crashLooping, 6)

	second := startedHerald(t, env, cfg)
	defer second.stop()
	got := recv.next(t, 30*time.Second)
	if got.Transition != "resolved" || got.Object.Name != "app-7" {
		t.Fatalf("after restart got %s for %s, want resolved for app-7", got.Transition, got.Object.Name)
	}
	expectSentinel(t, client, recv, "sentinel")

	// The step counts from what was reported before the restart: 3 + 5.
	setStatus(t, client, "app-3", crashLooping, 8)
	up := recv.next(t, 10*time.Second)
	if up.Transition != "updated" || up.Object.Name != "app-3" || up.Seq != 2 || up.Facts["restartCount"] != "8" {
		t.Fatalf("got %s seq %d for %s (%v), want updated seq 2 for app-3 at 8 restarts", up.Transition, up.Seq, up.Object.Name, up.Facts)
	}
}

// TestFirstInstallStartupModes: 50 pods already broken when herald is
// installed (empty ledger) give one digest, 50 notifications, or none.
func TestFirstInstallStartupModes(t *testing.T) {
	beside(t)
	env := controlPlanes.Get(t)
	client, _ := env.Client()
	crashPods(t, client, "broken", 50)
	for _, mode := range []string{"digest", "notify", "silent"} {
		t.Run(mode, func(t *testing.T) {
			recv := newReceiver(t)
			h := startedHerald(t, env, fmt.Sprintf(`
incidents: {startup: %s, ledgerName: ledger-%s}
rules:
  - {name: pod-crashloop, kind: Pod, detector: crashloop, sinks: [hook]}
sinks:
  - {name: hook, webhook: {url: %s/herald}}
`, mode, mode, recv.URL))
			defer func() { // the next mode must find only the 50 broken pods
				h.stop()
				zero := int64(0)
				client.CoreV1().Pods("default").Delete(context.Background(), "sentinel-"+mode+"-0", metav1.DeleteOptions{GracePeriodSeconds: &zero})
			}()
			switch mode {
			case "digest":
				d := recv.next(t, 30*time.Second)
				if d.Transition != "digest" || len(d.Digest) != 50 {
					t.Fatalf("got %s with %d entries, want one digest of 50", d.Transition, len(d.Digest))
				}
			case "notify":
				for _, p := range recv.collect(t, 50, 30*time.Second) {
					if p.Transition != "firing" || !strings.HasPrefix(p.Object.Name, "broken-") {
						t.Fatalf("got %s for %s, want firing for the broken pods", p.Transition, p.Object.Name)
					}
				}
			}
			expectSentinel(t, client, recv, "sentinel-"+mode)
		})
	}
}

// TestGroupByWorkloadOnControlPlane: a Deployment's 10 pods crash one after
// another: one firing and updates, never a second firing; all recover: one
// resolved.
func TestGroupByWorkloadOnControlPlane(t *testing.T) {
	beside(t)
	env := controlPlanes.Get(t)
	client, _ := env.Client()
	recv := newReceiver(t)
	h := startedHerald(t, env, fmt.Sprintf(`
rules:
  # Every change on its own (the paced storm is TestWorkloadStormIsPaced);
  # recovered after 1s ready.
  - {name: pod-crashloop, kind: Pod, detector: crashloop, groupBy: workload, updateInterval: 0s, settle: 1s, sinks: [hook]}
sinks:
  - {name: hook, webhook: {url: %s/herald}}
`, recv.URL))
	defer h.stop()
	createDeploymentPods(t, client, 10)
	setDeploymentPods(t, client, 10, crashLooping)
	got := recv.collect(t, 10, 30*time.Second)
	expectOneDeploymentIncident(t, got)
	if last := got[9].Title; last != "CrashLoopBackOff: Deployment default/api: 10/10 pods (container app)" {
		t.Errorf("title after ten pods: %q", last)
	}
	setDeploymentPods(t, client, 10, ready)
	recovered := recv.collect(t, 10, 30*time.Second)
	for i, p := range recovered {
		want := "updated"
		if i == 9 {
			want = "resolved"
		}
		if p.Transition != want || p.Incident.ID != got[0].Incident.ID {
			t.Fatalf("recovery notification %d: %s, want %s", i, p.Transition, want)
		}
	}
}

// createDeploymentPods creates n pods api-5d8f-<i> of the ReplicaSet
// api-5d8f, that is of the Deployment api.
func createDeploymentPods(t *testing.T, client kubernetes.Interface, n int) {
	t.Helper()
	for i := range n {
		pod := newPod(fmt.Sprintf("api-5d8f-%d", i))
		pod.Labels["pod-template-hash"] = "5d8f"
		pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "api-5d8f", UID: "rs-uid", Controller: ptr.To(true)}}
		if _, err := client.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// setDeploymentPods sets the app container of the first n of those pods
// to state, with 2 restarts.
func setDeploymentPods(t *testing.T, client kubernetes.Interface, n int, state appState) {
	t.Helper()
	for i := range n {
		setStatus(t, client, fmt.Sprintf("api-5d8f-%d", i), state, 2)
	}
}

// expectOneDeploymentIncident checks that got is one incident of the
// Deployment api: a firing, then updates of it.
func expectOneDeploymentIncident(t *testing.T, got []sinks.Payload) {
	t.Helper()
	if got[0].Transition != "firing" || got[0].Object.Kind != "Deployment" || got[0].Object.Name != "api" {
		t.Fatalf("first: %s for %s %s, want firing for Deployment api", got[0].Transition, got[0].Object.Kind, got[0].Object.Name)
	}
	for _, p := range got[1:] {
		if p.Transition != "updated" || p.Incident.ID != got[0].Incident.ID {
			t.Fatalf("got %s for %s (%s), want updates of the one incident", p.Transition, p.Object.Name, p.Incident.ID)
		}
	}
}

// TestCorruptLedgerIsReportedAndSurvived: a foreign edit that breaks a
// ledger ConfigMap is reported, its incidents count as new, and herald
// keeps working.
func TestCorruptLedgerIsReportedAndSurvived(t *testing.T) {
	beside(t)
	env := controlPlanes.Get(t)
	client, _ := env.Client()
	recv := newReceiver(t)
	cfg := ledgerConfig(recv.URL, "")
	first := startedHerald(t, env, cfg)
	crashPods(t, client, "app", 3)
	recv.collect(t, 3, 30*time.Second)
	first.stop()

	ctx := context.Background()
	cms, err := client.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{LabelSelector: "herald.io/ledger=herald-ledger"})
	if err != nil || len(cms.Items) == 0 {
		t.Fatalf("no ledger ConfigMaps: %v", err)
	}
	for _, cm := range cms.Items {
		cm.Data = map[string]string{"incidents.json": "{edited by hand"}
		if _, err := client.CoreV1().ConfigMaps("default").Update(ctx, &cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	second := startedHerald(t, env, cfg)
	defer second.stop()
	// Treated as a first start: the three still-broken pods, as a digest.
	d := recv.next(t, 30*time.Second)
	if d.Transition != "digest" || len(d.Digest) != 3 {
		t.Fatalf("got %s with %d entries, want a digest of the 3 incidents now unknown", d.Transition, len(d.Digest))
	}
	expectSentinel(t, client, recv, "sentinel")
	if !strings.Contains(second.logs.String(), "ledger ConfigMap is unreadable; its incidents will be treated as new") {
		t.Errorf("no warning about the corrupt ledger:\n%s", second.logs)
	}
}
