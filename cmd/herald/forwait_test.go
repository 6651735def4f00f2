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

	"github.com/herald-k8s/herald/internal/testenv"
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

// TestForWaitSurvivesRestartAndFailover: an image-pull finding must last
// its for: (20 s here) before it is announced. herald restarts in the
// middle of the wait, and later its leader hands over to a standby in the
// middle of another: each alert goes out at the wait's original end (the
// pod's own record of when it began), not a whole for: after the new
// process first saw it.
func TestForWaitSurvivesRestartAndFailover(t *testing.T) {
	const wait = 20 * time.Second
	env := testenv.New(t)
	client, _ := env.Client()
	recv := newReceiver(t)
	config := fmt.Sprintf(`
rules:
  - {name: pull, kind: Pod, detector: image-pull, for: 20s, sinks: [hook]}
sinks:
  - {name: hook, webhook: {url: %s/herald}}
`, recv.URL)
	timings := []string{"--lease-duration", "5s", "--renew-deadline", "3s", "--retry-period", "1s"}
	arrives := func(what string, began time.Time) {
		t.Helper()
		p := recv.next(t, 2*wait)
		due := began.Add(wait)
		// A flush and a reconcile either side; a wait timed again from
		// the new process's first sight would be 8 s or more late.
		if at := time.Now(); at.Before(due.Add(-time.Second)) || at.After(due.Add(3*time.Second)) {
			t.Errorf("%s: %s announced %s after the wait began, want %s (± a flush)", what, p.Object.Name, at.Sub(began).Round(100*time.Millisecond), wait)
		} else {
			t.Logf("%s: announced %s after the wait began (for: %s)", what, at.Sub(began).Round(100*time.Millisecond), wait)
		}
	}

	// A restart: the only replica stops 8 s into the wait, a new one starts.
	a := startedHerald(t, env, config, timings...)
	began := pullFailing(t, client, "pull-restart")
	sleepUntil(began.Add(8 * time.Second))
	a.stop()
	a2 := startedHerald(t, env, config, timings...)
	t.Cleanup(a2.stop)
	arrives("after a restart", began)

	// A failover: a standby beside the leader; the leader stops 8 s into
	// the wait and the standby takes over.
	b := runHerald(t, env, config, timings...)
	t.Cleanup(b.stop)
	if err := waitFor(30*time.Second, func() bool { return strings.Contains(b.logs.String(), "following the leader") }); err != nil {
		t.Fatalf("the standby never followed the leader:\n%s", b.logs)
	}
	began = pullFailing(t, client, "pull-failover")
	sleepUntil(began.Add(8 * time.Second))
	a2.stop()
	arrives("after a failover", began)
}

// sleepUntil blocks until the wall clock reaches at: the test's own
// schedule (the middle of a for: wait), not a wait for a condition.
func sleepUntil(at time.Time) {
	<-time.After(time.Until(at))
}
