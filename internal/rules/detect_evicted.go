package rules

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// detectEvicted fires for evicted pods, with the kubelet's reason, for
// Window after the eviction: an evicted pod stays (Failed) until it is
// garbage-collected, days later, and the incident must not stay open as
// long; an eviction whose time the pod does not say is reported while
// the pod is there.
func detectEvicted(obj runtime.Object, p Params, now time.Time) ([]Detection, error) {
	pod, err := asPod(obj)
	if err != nil || gone(pod) || pod.Status.Phase != corev1.PodFailed || pod.Status.Reason != "Evicted" {
		return nil, err
	}
	d := Detection{Reason: "Evicted", Facts: map[string]string{"message": pod.Status.Message}, Detail: pod.Status.Message}
	if at := evictedAt(pod); !at.IsZero() && p.Window > 0 {
		wait, recent := recheck(at, p.Window, now)
		if !recent {
			return nil, nil
		}
		d.RecheckAfter = wait
	}
	return []Detection{d}, nil
}

// evictedAt is when the pod was evicted: its DisruptionTarget or Ready
// condition's last transition (the kubelet sets both), zero if neither.
func evictedAt(pod *corev1.Pod) time.Time {
	var at time.Time
	for _, c := range pod.Status.Conditions {
		if (c.Type == corev1.DisruptionTarget || c.Type == corev1.PodReady) && c.LastTransitionTime.After(at) {
			at = c.LastTransitionTime.Time
		}
	}
	return at
}
