package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// jobStarted writes a Job's status as the Job controller does when it
// starts the Job's pods (no controller runs on this control plane).
func jobStarted(t *testing.T, client kubernetes.Interface, name string) *batchv1.Job {
	t.Helper()
	ctx := context.Background()
	j, err := client.BatchV1().Jobs("default").Create(ctx, &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "run", Image: "example.com/backup:1"}}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	j.Status.StartTime, j.Status.Active = &metav1.Time{Time: time.Now()}, 1
	if j, err = client.BatchV1().Jobs("default").UpdateStatus(ctx, j, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return j
}

// jobCompleted writes a Job's status as the Job controller does when its
// pod has succeeded.
func jobCompleted(t *testing.T, client kubernetes.Interface, j *batchv1.Job) {
	t.Helper()
	now := metav1.Now()
	j.Status.Active, j.Status.Succeeded, j.Status.CompletionTime = 0, 1, &now
	j.Status.Conditions = []batchv1.JobCondition{
		{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: now, LastProbeTime: now},
		{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: now, LastProbeTime: now},
	}
	if _, err := client.BatchV1().Jobs("default").UpdateStatus(context.Background(), j, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestJobRunningTooLong: a Job that is still running 4 s (the rule's
// for:) after its start is notified then and not before — nothing about
// the Job changes at that moment, so only herald's wait for for: can see
// it — and resolved when it completes; a Job that completes within its
// bound is never notified.
func TestJobRunningTooLong(t *testing.T) {
	beside(t)
	env := controlPlanes.Get(t)
	client, _ := env.Client()
	recv := newReceiver(t)
	h := startedHerald(t, env, fmt.Sprintf(`
incidents: {resolveHoldDown: 0s}
rules:
  - {name: job-long-running, kind: Job, detector: long-running, for: 4s, sinks: [hook]}
  - {name: pod-crashloop, kind: Pod, detector: crashloop, sinks: [hook]}
sinks:
  - {name: hook, webhook: {url: %s/herald}}
`, recv.URL))
	defer h.stop()

	backup := jobStarted(t, client, "backup")
	quick := jobStarted(t, client, "quick")
	jobCompleted(t, client, quick)
	bound := backup.Status.StartTime.Add(4 * time.Second) // startTime is whole seconds

	firing := recv.next(t, time.Until(bound)+10*time.Second)
	if firing.Transition != "firing" || firing.Incident.Reason != "JobRunningLong" || firing.Object.Kind != "Job" || firing.Object.Name != "backup" {
		t.Fatalf("got %s %s for %s %s (%s), want JobRunningLong firing for Job backup", firing.Incident.Reason, firing.Transition, firing.Object.Kind, firing.Object.Name, firing.Text)
	}
	if now := time.Now(); now.Before(bound) {
		t.Fatalf("notified at %s, before the Job had run 4 s (%s)", now.Format(time.StampMilli), bound.Format(time.StampMilli))
	}
	t.Logf("bound passed at %s, notified %s later: %s", bound.Format(time.StampMilli), time.Since(bound).Round(time.Millisecond), firing.Text)

	jobCompleted(t, client, backup)
	if p := recv.next(t, 10*time.Second); p.Transition != "resolved" || p.Incident.ID != firing.Incident.ID {
		t.Fatalf("then %s for %s, want the resolution of %s", p.Transition, p.Incident.ID, firing.Incident.ID)
	}
	expectSentinel(t, client, recv, "sentinel")
}
