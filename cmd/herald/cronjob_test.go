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
	"k8s.io/utils/ptr"
)

// scheduledAt writes a CronJob's status as the CronJob controller does
// when it starts the run due at t (the control plane here runs no
// controllers: nothing else will).
func scheduledAt(t *testing.T, client kubernetes.Interface, cj *batchv1.CronJob, at time.Time) *batchv1.CronJob {
	t.Helper()
	cj.Status.LastScheduleTime = &metav1.Time{Time: at}
	cj, err := client.BatchV1().CronJobs(cj.Namespace).UpdateStatus(context.Background(), cj, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cj
}

// TestMissedCronJobRun: a CronJob of every minute whose run of this
// minute started, and nothing else changes: when the next minute's run
// is due and does not start (no controller runs here), herald says so —
// the CronJob itself never changed, so only herald's own wake-up at the
// due time can see it. The run starting late resolves it; a suspended
// CronJob in the same state is never notified.
func TestMissedCronJobRun(t *testing.T) {
	beside(t)
	env := controlPlanes.Get(t)
	client, _ := env.Client()
	recv := newReceiver(t)
	h := startedHerald(t, env, fmt.Sprintf(`
incidents: {resolveHoldDown: 0s}
rules:
  - {name: cronjob-missed, kind: CronJob, detector: missed-schedule, for: 0s, sinks: [hook]}
  - {name: pod-crashloop, kind: Pod, detector: crashloop, sinks: [hook]}
sinks:
  - {name: hook, webhook: {url: %s/herald}}
`, recv.URL))
	defer h.stop()
	ctx := context.Background()
	cronJob := func(name string, suspend bool) *batchv1.CronJob {
		cj := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: batchv1.CronJobSpec{
			Schedule: "* * * * *", Suspend: ptr.To(suspend),
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyOnFailure, Containers: []corev1.Container{{Name: "report", Image: "example.com/report:1"}}}}}},
		}}
		cj, err := client.BatchV1().CronJobs("default").Create(ctx, cj, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cj
	}
	thisMinute := time.Now().UTC().Truncate(time.Minute)
	paused := cronJob("paused", true)
	scheduledAt(t, client, paused, thisMinute)
	report := cronJob("report", false)
	report = scheduledAt(t, client, report, thisMinute)
	due := thisMinute.Add(time.Minute)

	firing := recv.next(t, time.Until(due)+15*time.Second)
	if firing.Transition != "firing" || firing.Incident.Rule != "cronjob-missed" || firing.Object.Kind != "CronJob" || firing.Object.Name != "report" {
		t.Fatalf("got %s %s for %s %s (%s), want cronjob-missed firing for CronJob report", firing.Incident.Rule, firing.Transition, firing.Object.Kind, firing.Object.Name, firing.Text)
	}
	if now := time.Now(); now.Before(due) {
		t.Fatalf("missed at %s, before the run was due (%s)", now.Format(time.StampMilli), due.Format(time.StampMilli))
	}
	if firing.Facts["dueAt"] != due.Format(time.RFC3339) {
		t.Errorf("dueAt %q, want %s", firing.Facts["dueAt"], due.Format(time.RFC3339))
	}
	t.Logf("due at %s, notified %s later: %s", due.Format(time.StampMilli), time.Since(due).Round(time.Millisecond), firing.Text)

	// The run starts late: resolved.
	scheduledAt(t, client, report, due)
	if p := recv.next(t, 10*time.Second); p.Transition != "resolved" || p.Incident.ID != firing.Incident.ID {
		t.Fatalf("then %s for %s, want the resolution of %s", p.Transition, p.Incident.ID, firing.Incident.ID)
	}
	// Nothing for the suspended one, due at the same time: the next
	// notification is the sentinel's (report's next run is due a minute
	// after its first).
	expectSentinel(t, client, recv, "sentinel")
}
