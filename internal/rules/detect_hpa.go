package rules

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// maxMetricsSaid bounds how many of an HPA's metrics its alert names: a
// spec may list any number, and the first few are the ones people set.
const maxMetricsSaid = 4

// detectMaxReplicas fires while a HorizontalPodAutoscaler runs at its
// maxReplicas and its controller says it wants more (ScalingLimited,
// TooManyReplicas): the workload has all the replicas it may have and
// its metrics are still over their targets (for: 15m by default, from
// when the limit began). An HPA resting at its maximum with metrics
// under target does not fire: the controller then says nothing limits it.
func detectMaxReplicas(obj runtime.Object, _ Params, _ time.Time) ([]Detection, error) {
	h, ok := obj.(*autoscalingv2.HorizontalPodAutoscaler)
	if !ok {
		return nil, fmt.Errorf("max-replicas detector got %T", obj)
	}
	if h.DeletionTimestamp != nil || h.Spec.MaxReplicas <= 0 || h.Status.CurrentReplicas < h.Spec.MaxReplicas {
		return nil, nil
	}
	for _, c := range h.Status.Conditions {
		if c.Type != autoscalingv2.ScalingLimited || c.Status != corev1.ConditionTrue || c.Reason != "TooManyReplicas" {
			continue
		}
		max := strconv.Itoa(int(h.Spec.MaxReplicas))
		facts := map[string]string{
			"maxReplicas":     max,
			"currentReplicas": strconv.Itoa(int(h.Status.CurrentReplicas)),
			"scaleTarget":     h.Spec.ScaleTargetRef.Kind + "/" + h.Spec.ScaleTargetRef.Name,
		}
		detail := "at its maximum of " + max + " replicas and still over its target"
		if said := metricsSaid(h); said != "" {
			facts["metrics"] = said
			detail = "at its maximum of " + max + " replicas and still over its target: " + said
		}
		return []Detection{{Reason: "AtMaxReplicas", Since: c.LastTransitionTime.Time, Facts: facts, Detail: detail}}, nil
	}
	return nil, nil
}

// metricsSaid says each metric of the spec with its current value beside
// its target: "cpu 92% (target 70%), queue_depth 130 (target 100)".
func metricsSaid(h *autoscalingv2.HorizontalPodAutoscaler) string {
	var said []string
	for i, m := range h.Spec.Metrics {
		if i == maxMetricsSaid {
			said = append(said, fmt.Sprintf("%d more", len(h.Spec.Metrics)-i))
			break
		}
		name, target, ok := metricTarget(m)
		if !ok {
			continue
		}
		s := name
		for _, cur := range h.Status.CurrentMetrics {
			if now, ok := metricCurrent(m, cur); ok {
				s += " " + now
				break
			}
		}
		said = append(said, s+" (target "+target+")")
	}
	return strings.Join(said, ", ")
}

// metricTarget names a spec metric and says its target.
func metricTarget(m autoscalingv2.MetricSpec) (name, target string, ok bool) {
	switch {
	case m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil:
		return string(m.Resource.Name), targetSaid(m.Resource.Target), true
	case m.Type == autoscalingv2.ContainerResourceMetricSourceType && m.ContainerResource != nil:
		return string(m.ContainerResource.Name) + " of " + m.ContainerResource.Container, targetSaid(m.ContainerResource.Target), true
	case m.Type == autoscalingv2.PodsMetricSourceType && m.Pods != nil:
		return m.Pods.Metric.Name, targetSaid(m.Pods.Target), true
	case m.Type == autoscalingv2.ObjectMetricSourceType && m.Object != nil:
		return m.Object.Metric.Name + " of " + m.Object.DescribedObject.Kind + "/" + m.Object.DescribedObject.Name, targetSaid(m.Object.Target), true
	case m.Type == autoscalingv2.ExternalMetricSourceType && m.External != nil:
		return m.External.Metric.Name, targetSaid(m.External.Target), true
	}
	return "", "", false
}

// metricCurrent says cur's value if cur is the status of spec metric m.
func metricCurrent(m autoscalingv2.MetricSpec, cur autoscalingv2.MetricStatus) (string, bool) {
	if cur.Type != m.Type {
		return "", false
	}
	switch {
	case m.Resource != nil && cur.Resource != nil && cur.Resource.Name == m.Resource.Name:
		return valueSaid(cur.Resource.Current), true
	case m.ContainerResource != nil && cur.ContainerResource != nil && cur.ContainerResource.Name == m.ContainerResource.Name && cur.ContainerResource.Container == m.ContainerResource.Container:
		return valueSaid(cur.ContainerResource.Current), true
	case m.Pods != nil && cur.Pods != nil && cur.Pods.Metric.Name == m.Pods.Metric.Name:
		return valueSaid(cur.Pods.Current), true
	case m.Object != nil && cur.Object != nil && cur.Object.Metric.Name == m.Object.Metric.Name && cur.Object.DescribedObject.Name == m.Object.DescribedObject.Name:
		return valueSaid(cur.Object.Current), true
	case m.External != nil && cur.External != nil && cur.External.Metric.Name == m.External.Metric.Name:
		return valueSaid(cur.External.Current), true
	}
	return "", false
}

// targetSaid says a target as its type reads: "70%" for a utilization,
// the quantity otherwise.
func targetSaid(t autoscalingv2.MetricTarget) string {
	switch {
	case t.Type == autoscalingv2.UtilizationMetricType && t.AverageUtilization != nil:
		return strconv.Itoa(int(*t.AverageUtilization)) + "%"
	case t.Type == autoscalingv2.AverageValueMetricType && t.AverageValue != nil:
		return t.AverageValue.String() + " per pod"
	case t.Value != nil:
		return t.Value.String()
	}
	return "unset"
}

// valueSaid says a current value the way its target is said.
func valueSaid(v autoscalingv2.MetricValueStatus) string {
	switch {
	case v.AverageUtilization != nil:
		return strconv.Itoa(int(*v.AverageUtilization)) + "%"
	case v.AverageValue != nil:
		return v.AverageValue.String() + " per pod"
	case v.Value != nil:
		return v.Value.String()
	}
	return "unknown"
}
