package rules

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
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
		target := h.Spec.ScaleTargetRef.Kind + " " + h.Spec.ScaleTargetRef.Name
		facts := map[string]string{
			"maxReplicas":     max,
			"currentReplicas": strconv.Itoa(int(h.Status.CurrentReplicas)),
			"scaleTarget":     h.Spec.ScaleTargetRef.Kind + "/" + h.Spec.ScaleTargetRef.Name,
		}
		detail := target + " is at its autoscaler's maximum of " + max + " replicas and still over target"
		if said := metricsSaid(h); said != "" {
			facts["metrics"] = said
			detail += ": " + said
		}
		if blind := metricsUnreadable(h); blind != "" {
			facts["metricsUnavailable"] = blind
			detail += "; the autoscaler cannot read its metrics now (" + blind + "): these are its last values"
		}
		return []Detection{{Reason: "AtMaxReplicas", Since: limitedSince(h, c), Facts: facts, Detail: detail}}, nil
	}
	return nil, nil
}

// limitedSince is when the autoscaler began to want more than its
// maximum, as near as the object says: the condition's time changes only
// when its status does (True/TooFewReplicas at the minimum turns into
// True/TooManyReplicas without a new time), and reaching the maximum is a
// scale, so the later of the two.
func limitedSince(h *autoscalingv2.HorizontalPodAutoscaler, c autoscalingv2.HorizontalPodAutoscalerCondition) time.Time {
	since := c.LastTransitionTime.Time
	if s := h.Status.LastScaleTime; s != nil && s.After(since) {
		since = s.Time
	}
	return since
}

// metricsUnreadable says why the autoscaler cannot read its metrics
// (ScalingActive=False: the controller then keeps its last values and
// conditions), or "".
func metricsUnreadable(h *autoscalingv2.HorizontalPodAutoscaler) string {
	for _, c := range h.Status.Conditions {
		if c.Type == autoscalingv2.ScalingActive && c.Status == corev1.ConditionFalse {
			return "ScalingActive=False, " + c.Reason
		}
	}
	return ""
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
		s := name + " no value"
		for _, cur := range h.Status.CurrentMetrics {
			if now, ok := metricCurrent(m, cur); ok {
				s = name + " " + now
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
		return string(m.Resource.Name), targetSaid(m.Resource.Target, true), true
	case m.Type == autoscalingv2.ContainerResourceMetricSourceType && m.ContainerResource != nil:
		return string(m.ContainerResource.Name) + " of " + m.ContainerResource.Container, targetSaid(m.ContainerResource.Target, true), true
	case m.Type == autoscalingv2.PodsMetricSourceType && m.Pods != nil:
		return m.Pods.Metric.Name, targetSaid(m.Pods.Target, false), true
	case m.Type == autoscalingv2.ObjectMetricSourceType && m.Object != nil:
		return m.Object.Metric.Name + " of " + m.Object.DescribedObject.Kind + "/" + m.Object.DescribedObject.Name, targetSaid(m.Object.Target, false), true
	case m.Type == autoscalingv2.ExternalMetricSourceType && m.External != nil:
		return m.External.Metric.Name, targetSaid(m.External.Target, false), true
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
		return valueSaid(cur.Resource.Current, true), true
	case m.ContainerResource != nil && cur.ContainerResource != nil && cur.ContainerResource.Name == m.ContainerResource.Name && cur.ContainerResource.Container == m.ContainerResource.Container:
		return valueSaid(cur.ContainerResource.Current, true), true
	case m.Pods != nil && cur.Pods != nil && cur.Pods.Metric.Name == m.Pods.Metric.Name:
		return valueSaid(cur.Pods.Current, false), true
	case m.Object != nil && cur.Object != nil && cur.Object.Metric.Name == m.Object.Metric.Name && cur.Object.DescribedObject.Name == m.Object.DescribedObject.Name:
		return valueSaid(cur.Object.Current, false), true
	case m.External != nil && cur.External != nil && cur.External.Metric.Name == m.External.Metric.Name:
		return valueSaid(cur.External.Current, false), true
	}
	return "", false
}

// targetSaid says a target as its type reads: "70%" for a utilization,
// the quantity otherwise (a resource's as Kubernetes writes it: "500m"
// CPU, "512Mi").
func targetSaid(t autoscalingv2.MetricTarget, isResource bool) string {
	switch {
	case t.Type == autoscalingv2.UtilizationMetricType && t.AverageUtilization != nil:
		return strconv.Itoa(int(*t.AverageUtilization)) + "%"
	case t.Type == autoscalingv2.AverageValueMetricType && t.AverageValue != nil:
		return quantitySaid(*t.AverageValue, isResource) + " per pod"
	case t.Value != nil:
		return quantitySaid(*t.Value, isResource)
	}
	return "unset"
}

// valueSaid says a current value the way its target is said.
func valueSaid(v autoscalingv2.MetricValueStatus, isResource bool) string {
	switch {
	case v.AverageUtilization != nil:
		return strconv.Itoa(int(*v.AverageUtilization)) + "%"
	case v.AverageValue != nil:
		return quantitySaid(*v.AverageValue, isResource) + " per pod"
	case v.Value != nil:
		return quantitySaid(*v.Value, isResource)
	}
	return "no value"
}

// quantitySaid says a metric's quantity as people read it: the
// controller writes a custom metric's averages in thousandths ("133667m"
// is 133.667), said as a decimal; a resource's ("460m" CPU, "600Mi"),
// whole numbers and binary sizes as written.
func quantitySaid(q resource.Quantity, isResource bool) string {
	if isResource || q.Format != resource.DecimalSI || q.MilliValue()%1000 == 0 {
		return q.String()
	}
	return strconv.FormatFloat(float64(q.MilliValue())/1000, 'f', -1, 64)
}
