package main

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/herald-k8s/herald/internal/testenv"
)

// unavailableSince writes a Deployment's status as the controller would
// for one whose replicas have not been available since the given time.
func unavailableSince(t *testing.T, client kubernetes.Interface, name string, since time.Time) {
	t.Helper()
	ctx := context.Background()
	d, err := client.AppsV1().Deployments("default").Create(ctx, testenv.WorkloadDeployment("default", name, 2, corev1.Container{Name: "app", Image: "example.com/app:1"}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.Status = appsv1.DeploymentStatus{Replicas: 2, UpdatedReplicas: 2, UnavailableReplicas: 2, Conditions: []appsv1.DeploymentCondition{
		{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionFalse, Reason: "MinimumReplicasUnavailable", LastTransitionTime: metav1.NewTime(since), LastUpdateTime: metav1.NewTime(since)},
		{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "ReplicaSetUpdated", LastTransitionTime: metav1.NewTime(since), LastUpdateTime: metav1.NewTime(since)},
	}}
	if _, err := client.AppsV1().Deployments("default").UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// atMaxReplicas writes an autoscaler of a Deployment at its maxReplicas
// (4), as the HPA controller would, its ScalingLimited condition True
// since then with reason limit (TooManyReplicas: it wants more), or False
// (DesiredWithinRange).
func atMaxReplicas(t *testing.T, client kubernetes.Interface, name, limit string, since time.Time) {
	t.Helper()
	ctx := context.Background()
	h := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
		MinReplicas:    ptr.To[int32](1), MaxReplicas: 4,
		Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
			Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](70)}}}},
	}}
	h, err := client.AutoscalingV2().HorizontalPodAutoscalers("default").Create(ctx, h, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	limited := corev1.ConditionFalse
	if limit == "TooManyReplicas" {
		limited = corev1.ConditionTrue
	}
	h.Status = autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: 4, DesiredReplicas: 4,
		CurrentMetrics: []autoscalingv2.MetricStatus{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{
			Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: ptr.To[int32](95)}}}},
		Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{
			{Type: autoscalingv2.AbleToScale, Status: corev1.ConditionTrue, Reason: "ReadyForNewScale", LastTransitionTime: metav1.NewTime(since)},
			{Type: autoscalingv2.ScalingActive, Status: corev1.ConditionTrue, Reason: "ValidMetricFound", LastTransitionTime: metav1.NewTime(since)},
			{Type: autoscalingv2.ScalingLimited, Status: limited, Reason: limit, LastTransitionTime: metav1.NewTime(since)},
		}}
	if _, err := client.AutoscalingV2().HorizontalPodAutoscalers("default").UpdateStatus(ctx, h, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestChartDefaultsWorkloadRules runs herald with the chart's default
// configuration: a failed Job alerts (job-failed); a Deployment whose
// replicas have been unavailable for 20 minutes alerts
// (deployment-unavailable, for: 15m); the same for a Deployment whose pods
// crash-loop says only the crash loop (the chart's inhibition); an
// autoscaler at its maximum that wants more alerts (hpa-max-replicas), one
// at its maximum within range does not.
func TestChartDefaultsWorkloadRules(t *testing.T) {
	beside(t)
	env := controlPlanes.Get(t)
	client, _ := env.Client()
	recv := newReceiver(t)
	h := startedHerald(t, env, renderChartConfig(t, recv.URL))
	defer h.stop()
	ctx := context.Background()

	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "nightly-backup", Namespace: "default"}, Spec: batchv1.JobSpec{
		BackoffLimit: ptr.To[int32](1),
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "backup", Image: "example.com/backup:1"}}}},
	}}
	job, err := client.BatchV1().Jobs("default").Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	job.Status = batchv1.JobStatus{StartTime: &now, Failed: 2, Conditions: []batchv1.JobCondition{
		{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastTransitionTime: now, LastProbeTime: now},
		{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastTransitionTime: now, LastProbeTime: now},
	}}
	if _, err := client.BatchV1().Jobs("default").UpdateStatus(ctx, job, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if p := recv.next(t, 10*time.Second); p.Transition != "firing" || p.Incident.Rule != "job-failed" || p.Object.Kind != "Job" || p.Object.Name != "nightly-backup" {
		t.Fatalf("got %s %s for %s %s, want job-failed firing for Job nightly-backup", p.Incident.Rule, p.Transition, p.Object.Kind, p.Object.Name)
	}

	unavailableSince(t, client, "api", time.Now().Add(-20*time.Minute))
	if p := recv.next(t, 10*time.Second); p.Transition != "firing" || p.Incident.Rule != "deployment-unavailable" || p.Object.Kind != "Deployment" || p.Object.Name != "api" {
		t.Fatalf("got %s %s for %s %s, want deployment-unavailable firing for Deployment api", p.Incident.Rule, p.Transition, p.Object.Kind, p.Object.Name)
	}

	// An autoscaler at its maximum that wants more, for 20 minutes
	// (hpa-max-replicas, for: 15m): the alert names the metric.
	atMaxReplicas(t, client, "checkout", "TooManyReplicas", time.Now().Add(-20*time.Minute))
	if p := recv.next(t, 10*time.Second); p.Transition != "firing" || p.Incident.Rule != "hpa-max-replicas" || p.Object.Kind != "HorizontalPodAutoscaler" || p.Object.Name != "checkout" ||
		!strings.Contains(p.Text, "cpu 95% (target 70%)") {
		t.Fatalf("got %s %s for %s %s (%q), want hpa-max-replicas firing for HorizontalPodAutoscaler checkout naming cpu 95%% (target 70%%)", p.Incident.Rule, p.Transition, p.Object.Kind, p.Object.Name, p.Text)
	}

	// web's pods crash-loop: that alert explains web's unavailability.
	crashing := running(false)
	crashing.ContainerStatuses[0].RestartCount = 3
	crashing.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
	crashing.ContainerStatuses[0].LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}}
	writeStatus(t, client, podOf("web-5d6f-a", "ReplicaSet", "web-5d6f"), crashing)
	if p := recv.next(t, 10*time.Second); p.Transition != "firing" || p.Incident.Rule != "pod-crashloop" || p.Object.Name != "web" {
		t.Fatalf("got %s %s for %s %s, want pod-crashloop firing for web", p.Incident.Rule, p.Transition, p.Object.Kind, p.Object.Name)
	}
	unavailableSince(t, client, "web", time.Now().Add(-20*time.Minute))
	// At its maximum and within range (the controller says so): quiet.
	atMaxReplicas(t, client, "search", "DesiredWithinRange", time.Now().Add(-20*time.Minute))
	// Nothing for web's unavailability nor for search: the next
	// notification is the sentinel's.
	expectSentinel(t, client, recv, "sentinel")
}
