package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// pullFailing creates pod name whose app container cannot pull its image,
// ContainersReady false since now (the API stores whole seconds), and
// returns that time: when the wait began, by the pod's own record.
func pullFailing(t *testing.T, client kubernetes.Interface, name string) time.Time {
	t.Helper()
	ctx := context.Background()
	pod, err := client.CoreV1().Pods("default").Create(ctx, newPod(name), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	began := metav1.NewTime(time.Now().Truncate(time.Second))
	pod.Status = corev1.PodStatus{Phase: corev1.PodPending,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: began},
			{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, LastTransitionTime: began},
		},
		ContainerStatuses: []corev1.ContainerStatus{
			{Name: "app", Image: "example.com/app:nope", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "not found"}}},
			{Name: "sidecar", Image: "example.com/sidecar:1", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: began}}},
		}}
	if _, err := client.CoreV1().Pods("default").UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return began.Time
}

// stuck creates pod name labelled stuck=yes, a problem a CEL rule finds
// whose object says nothing of when it began: the wait is timed from
// herald's first sight, and the ledger keeps that. It returns the time of
// creation (herald sees it a moment later).
func stuck(t *testing.T, client kubernetes.Interface, name string) time.Time {
	t.Helper()
	pod := newPod(name)
	pod.Labels["stuck"] = "yes"
	began := time.Now()
	if _, err := client.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return began
}

// TestForWaitSurvivesRestartAndFailover: two findings must last their for:
// (20 s here) before they are announced — an image pull (the pod records
// when it began) and a CEL rule's (nothing records it but herald's
// ledger). herald restarts in the middle of the waits, and later its
// leader hands over to a standby in the middle of two more: each alert
// goes out at the wait's original end, not a whole for: after the new
// process first saw it.
func TestForWaitSurvivesRestartAndFailover(t *testing.T) {
	beside(t)
	const wait = 20 * time.Second
	env := controlPlanes.Get(t)
	client, _ := env.Client()
	recv := newReceiver(t)
	// Without crash context: a firing about a pod may wait up to 2 s for
	// its log tail and events, which is no part of the for: wait timed
	// here.
	config := fmt.Sprintf(`
rules:
  - {name: pull, kind: Pod, detector: image-pull, for: 20s, context: {enabled: false}, sinks: [hook]}
  - name: stuck
    kind: Pod
    condition: has(object.metadata.labels) && "stuck" in object.metadata.labels
    for: 20s
    context: {enabled: false}
    sinks: [hook]
sinks:
  - {name: hook, webhook: {url: %s/herald}}
`, recv.URL)
	timings := []string{"--lease-duration", "5s", "--renew-deadline", "3s", "--retry-period", "1s"}
	// arrive waits for one alert per pod named in began, each at the end
	// of its wait.
	arrive := func(what string, began map[string]time.Time) {
		t.Helper()
		for range began {
			p := recv.next(t, 2*wait)
			b, ok := began[p.Object.Name]
			if !ok {
				t.Fatalf("%s: an alert about %s, want one about each of %v", what, p.Object.Name, began)
			}
			// A flush and a reconcile either side; a wait timed again
			// from the new process's first sight would be 8 s or more
			// late.
			due := b.Add(wait)
			if at := time.Now(); at.Before(due.Add(-time.Second)) || at.After(due.Add(3*time.Second)) {
				t.Errorf("%s: %s announced %s after the wait began, want %s (± a flush)", what, p.Object.Name, at.Sub(b).Round(100*time.Millisecond), wait)
			} else {
				t.Logf("%s: %s announced %s after the wait began (for: %s)", what, p.Object.Name, at.Sub(b).Round(100*time.Millisecond), wait)
			}
		}
	}

	// A restart: the only replica stops 8 s into the waits, a new one
	// starts.
	a := startedHerald(t, env, config, timings...)
	began := map[string]time.Time{"pull-restart": pullFailing(t, client, "pull-restart"), "stuck-restart": stuck(t, client, "stuck-restart")}
	sleepUntil(began["pull-restart"].Add(8 * time.Second))
	a.stop()
	a2 := startedHerald(t, env, config, timings...)
	t.Cleanup(a2.stop)
	arrive("after a restart", began)

	// A failover: a standby beside the leader; the leader stops 8 s into
	// the waits and the standby takes over.
	b := runHerald(t, env, config, timings...)
	t.Cleanup(b.stop)
	if err := waitFor(30*time.Second, func() bool { return strings.Contains(b.logs.String(), "following the leader") }); err != nil {
		t.Fatalf("the standby never followed the leader:\n%s", b.logs)
	}
	began = map[string]time.Time{"pull-failover": pullFailing(t, client, "pull-failover"), "stuck-failover": stuck(t, client, "stuck-failover")}
	sleepUntil(began["pull-failover"].Add(8 * time.Second))
	a2.stop()
	arrive("after a failover", began)
}

// sleepUntil blocks until the wall clock reaches at: the test's own
// schedule (the middle of a for: wait), not a wait for a condition.
func sleepUntil(at time.Time) {
	<-time.After(time.Until(at))
}
