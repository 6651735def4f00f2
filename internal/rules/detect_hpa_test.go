package rules

import (
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestMaxReplicasSaysEachMetric: every kind of metric is said with its
// current value beside its target, matched by name (not by position: the
// controller lists only the metrics it could read); past four, the rest
// are counted; the problem began when the limit did.
func TestMaxReplicasSaysEachMetric(t *testing.T) {
	h := loadObject(t, "hpa-at-max.yaml").(*autoscalingv2.HorizontalPodAutoscaler)
	q := resource.MustParse
	h.Spec.Metrics = append(h.Spec.Metrics,
		autoscalingv2.MetricSpec{Type: autoscalingv2.ContainerResourceMetricSourceType, ContainerResource: &autoscalingv2.ContainerResourceMetricSource{
			Name: "memory", Container: "app", Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr.To(q("512Mi"))}}},
		autoscalingv2.MetricSpec{Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: "requests"}, DescribedObject: autoscalingv2.CrossVersionObjectReference{Kind: "Ingress", Name: "shop"},
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: ptr.To(q("2k"))}}},
	)
	h.Status.CurrentMetrics = append(h.Status.CurrentMetrics,
		autoscalingv2.MetricStatus{Type: autoscalingv2.ContainerResourceMetricSourceType, ContainerResource: &autoscalingv2.ContainerResourceMetricStatus{
			Name: "memory", Container: "app", Current: autoscalingv2.MetricValueStatus{AverageValue: ptr.To(q("600Mi"))}}},
		autoscalingv2.MetricStatus{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricStatus{
			Metric: autoscalingv2.MetricIdentifier{Name: "queue_messages_ready"}, Current: autoscalingv2.MetricValueStatus{Value: ptr.To(q("41"))}}},
	)
	got, err := detectMaxReplicas(h, Params{}, now)
	if err != nil || len(got) != 1 {
		t.Fatalf("got %+v, %v; want one detection", got, err)
	}
	d := got[0]
	want := "cpu 92% (target 70%), http_requests_per_second 134 per pod (target 100 per pod), queue_messages_ready 41 (target 30), memory of app 600Mi per pod (target 512Mi per pod), 1 more"
	if d.Facts["metrics"] != want {
		t.Errorf("metrics %q\nwant    %q", d.Facts["metrics"], want)
	}
	if d.Facts["maxReplicas"] != "10" || d.Facts["currentReplicas"] != "10" || d.Facts["scaleTarget"] != "Deployment/checkout" {
		t.Errorf("facts %v", d.Facts)
	}
	if since := time.Date(2026, 11, 21, 23, 30, 0, 0, time.UTC); !d.Since.Equal(since) {
		t.Errorf("since %s, want the ScalingLimited condition's %s", d.Since, since)
	}

	h.DeletionTimestamp = &metav1.Time{Time: now}
	if got, _ := detectMaxReplicas(h, Params{}, now); len(got) != 0 {
		t.Errorf("an autoscaler being deleted: %+v", got)
	}
}

// TestMaxReplicasAsTheControllerWritesIt: the controller keeps the
// ScalingLimited condition's time when only its reason changes (True at
// the minimum, TooFewReplicas, turns True, TooManyReplicas): the problem
// began when the autoscaler last scaled, not days ago. A custom metric's
// average comes in thousandths and is said as a decimal. When the
// controller cannot read its metrics it keeps their last values: the
// alert says so.
func TestMaxReplicasAsTheControllerWritesIt(t *testing.T) {
	h := loadObject(t, "hpa-at-max.yaml").(*autoscalingv2.HorizontalPodAutoscaler)
	for i, c := range h.Status.Conditions {
		if c.Type == autoscalingv2.ScalingLimited {
			h.Status.Conditions[i].LastTransitionTime = metav1.NewTime(now.Add(-72 * time.Hour))
		}
	}
	scaled := now.Add(-5 * time.Minute)
	h.Status.LastScaleTime = &metav1.Time{Time: scaled}
	h.Status.CurrentMetrics[0].Pods.Current.AverageValue = ptr.To(resource.MustParse("133667m"))
	h.Status.Conditions = append(h.Status.Conditions, autoscalingv2.HorizontalPodAutoscalerCondition{
		Type: autoscalingv2.ScalingActive, Status: "False", Reason: "FailedGetResourceMetric"})
	got, err := detectMaxReplicas(h, Params{}, now)
	if err != nil || len(got) != 1 {
		t.Fatalf("got %+v, %v", got, err)
	}
	if !got[0].Since.Equal(scaled) {
		t.Errorf("since %s, want the last scale %s", got[0].Since, scaled)
	}
	for _, want := range []string{"http_requests_per_second 133.667 per pod (target 100 per pod)", "cpu 92% (target 70%)",
		"queue_messages_ready no value (target 30)", "cannot read its metrics now (ScalingActive=False, FailedGetResourceMetric)"} {
		if !strings.Contains(got[0].Detail, want) {
			t.Errorf("detail %q\nlacks %q", got[0].Detail, want)
		}
	}
}
