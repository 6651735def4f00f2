package main

import (
	"context"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// cronJobScene shows a run that never starts: a quota allows the
// namespace no Jobs, so the real CronJob controller's every attempt is
// refused (FailedCreate), no Job and no pod ever exist, and nothing else
// would say the nightly report stopped.
func cronJobScene(ctx context.Context, client kubernetes.Interface, lines <-chan string, seen func([]string)) error {
	say("a CronJob whose runs never start: a ResourceQuota allows the namespace no Jobs, so the CronJob controller's attempt each minute is refused (no Job, no pod, no crash to see). Expect one FIRING for MissedSchedule 20s after the next minute's run was due (the rule's for:), with the hint that points at FailedCreate")
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "no-jobs", Namespace: ns},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"count/jobs.batch": resource.MustParse("0")}}}
	if _, err := client.CoreV1().ResourceQuotas(ns).Create(ctx, quota, metav1.CreateOptions{}); err != nil {
		return err
	}
	report := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "nightly-report", Namespace: ns}, Spec: batchv1.CronJobSpec{
		Schedule: "* * * * *", TimeZone: ptr.To("Etc/UTC"),
		JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{workload("-log", "INFO report written")}}}}},
	}}
	if _, err := client.BatchV1().CronJobs(ns).Create(ctx, report, metav1.CreateOptions{}); err != nil {
		return err
	}
	// It names its time zone, so herald reads the schedule as the
	// controller does from its first run (docs/rules.md): the next minute,
	// then the rule's 20 s.
	return expect(lines, seen, 110*time.Second, "FIRING", "MissedSchedule", "demo/nightly-report")
}
