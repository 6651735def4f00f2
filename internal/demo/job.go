package main

import (
	"context"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// jobScene shows a Job that overruns: nothing fails and nothing crashes,
// it only takes longer than its rule allows, then finishes.
func jobScene(ctx context.Context, client kubernetes.Interface, lines <-chan string, seen func([]string)) error {
	say("a Job that runs too long: nightly-backup waits on a lock for 35s, past its rule's bound of 15s (for:). Nothing crashes or fails. Expect one FIRING for JobRunningLong 15s after it started, then RESOLVED when it finishes")
	backup := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "nightly-backup", Namespace: ns}, Spec: batchv1.JobSpec{
		BackoffLimit: ptr.To[int32](0),
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers:                    []corev1.Container{workload("-log", "INFO waiting for the lock on db-primary", "-exit", "0", "-after", "35s")}}},
	}}
	if _, err := client.BatchV1().Jobs(ns).Create(ctx, backup, metav1.CreateOptions{}); err != nil {
		return err
	}
	if err := expect(lines, seen, 60*time.Second, "FIRING", "JobRunningLong", "demo/nightly-backup"); err != nil {
		return err
	}
	return expect(lines, seen, 90*time.Second, "RESOLVED", "demo/nightly-backup")
}
