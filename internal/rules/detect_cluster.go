package rules

import (
	"fmt"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// detectProgressDeadline fires when a Deployment's rollout has made no
// progress within its progressDeadlineSeconds.
func detectProgressDeadline(obj runtime.Object, _ Params, _ time.Time) ([]Detection, error) {
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		return nil, fmt.Errorf("deployment detector got %T", obj)
	}
	if d.Spec.Paused || d.DeletionTimestamp != nil {
		return nil, nil
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse && c.Reason == "ProgressDeadlineExceeded" {
			return []Detection{{Reason: "ProgressDeadlineExceeded", Since: c.LastTransitionTime.Time,
				Facts:  map[string]string{"message": c.Message, "unavailableReplicas": strconv.Itoa(int(d.Status.UnavailableReplicas))},
				Detail: "the rollout is stuck: " + c.Message}}, nil
		}
	}
	return nil, nil
}

// detectUnavailable fires while a Deployment, StatefulSet or DaemonSet has
// fewer available replicas than it wants (for: 10m by default).
func detectUnavailable(obj runtime.Object, _ Params, _ time.Time) ([]Detection, error) {
	var want, available int32
	var since time.Time
	switch w := obj.(type) {
	case *appsv1.Deployment:
		if w.DeletionTimestamp != nil || w.Spec.Paused {
			return nil, nil
		}
		want, available = replicas(w.Spec.Replicas), w.Status.AvailableReplicas
		for _, c := range w.Status.Conditions {
			if c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionFalse {
				since = c.LastTransitionTime.Time
			}
		}
	case *appsv1.StatefulSet:
		if w.DeletionTimestamp != nil {
			return nil, nil
		}
		want, available = replicas(w.Spec.Replicas), w.Status.AvailableReplicas
	case *appsv1.DaemonSet:
		if w.DeletionTimestamp != nil {
			return nil, nil
		}
		want, available = w.Status.DesiredNumberScheduled, w.Status.NumberAvailable
	default:
		return nil, fmt.Errorf("unavailable detector got %T", obj)
	}
	if available >= want {
		return nil, nil
	}
	return []Detection{{Reason: "ReplicasUnavailable", Since: since,
		Facts:  map[string]string{"desired": strconv.Itoa(int(want)), "available": strconv.Itoa(int(available))},
		Detail: fmt.Sprintf("%d of %d replicas available", available, want)}}, nil
}

func replicas(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}

func jobFailure(obj runtime.Object) (*batchv1.Job, *batchv1.JobCondition, error) {
	j, ok := obj.(*batchv1.Job)
	if !ok {
		return nil, nil, fmt.Errorf("job detector got %T", obj)
	}
	for i, c := range j.Status.Conditions {
		if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
			return j, &j.Status.Conditions[i], nil
		}
	}
	return j, nil, nil
}

// detectJobFailed fires for Jobs that failed (backoff limit, deadline).
// A Job that completes is not news.
func detectJobFailed(obj runtime.Object, _ Params, _ time.Time) ([]Detection, error) {
	_, c, err := jobFailure(obj)
	if err != nil || c == nil {
		return nil, err
	}
	return []Detection{{Reason: "JobFailed", Since: c.LastTransitionTime.Time,
		Facts:  map[string]string{"reason": c.Reason, "message": c.Message},
		Detail: fmt.Sprintf("the job failed (%s): %s", c.Reason, c.Message)}}, nil
}

// detectCronJobFailed is detectJobFailed for the runs of a CronJob, named
// after the CronJob.
func detectCronJobFailed(obj runtime.Object, _ Params, _ time.Time) ([]Detection, error) {
	j, c, err := jobFailure(obj)
	if err != nil || c == nil {
		return nil, err
	}
	for _, o := range j.OwnerReferences {
		if o.Kind == "CronJob" {
			return []Detection{{Reason: "CronJobFailed", Since: c.LastTransitionTime.Time,
				Facts:  map[string]string{"cronJob": o.Name, "reason": c.Reason, "message": c.Message},
				Detail: fmt.Sprintf("run %s of CronJob %s failed (%s): %s", j.Name, o.Name, c.Reason, c.Message)}}, nil
		}
	}
	return nil, nil
}

func nodeConditions(obj runtime.Object) (*corev1.Node, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return nil, fmt.Errorf("node detector got %T", obj)
	}
	return n, nil
}

// detectNodeNotReady fires while a node's Ready condition is not True.
func detectNodeNotReady(obj runtime.Object, _ Params, _ time.Time) ([]Detection, error) {
	n, err := nodeConditions(obj)
	if err != nil {
		return nil, err
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
			return []Detection{{Reason: "NodeNotReady", Since: c.LastTransitionTime.Time,
				Facts:  map[string]string{"status": string(c.Status), "reason": c.Reason, "message": c.Message},
				Detail: fmt.Sprintf("the node is not ready (%s): %s", c.Reason, c.Message)}}, nil
		}
	}
	return nil, nil
}

// detectNodePressure fires for each pressure condition that is True.
func detectNodePressure(obj runtime.Object, _ Params, _ time.Time) ([]Detection, error) {
	n, err := nodeConditions(obj)
	if err != nil {
		return nil, err
	}
	var out []Detection
	for _, c := range n.Status.Conditions {
		switch c.Type {
		case corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure, corev1.NodeNetworkUnavailable:
			if c.Status == corev1.ConditionTrue {
				out = append(out, Detection{Reason: string(c.Type), Since: c.LastTransitionTime.Time,
					Facts: map[string]string{"message": c.Message}, Detail: c.Message})
			}
		}
	}
	return out, nil
}

// detectPVCPending fires for claims still Pending (for: 5m by default).
func detectPVCPending(obj runtime.Object, _ Params, _ time.Time) ([]Detection, error) {
	pvc, ok := obj.(*corev1.PersistentVolumeClaim)
	if !ok {
		return nil, fmt.Errorf("pvc detector got %T", obj)
	}
	if pvc.DeletionTimestamp != nil || pvc.Status.Phase != corev1.ClaimPending {
		return nil, nil
	}
	class := ""
	if pvc.Spec.StorageClassName != nil {
		class = *pvc.Spec.StorageClassName
	}
	return []Detection{{Reason: "PVCPending", Since: pvc.CreationTimestamp.Time,
		Facts: map[string]string{"storageClass": class}, Detail: "the claim is not bound"}}, nil
}

// detectWarningEvents fires for Warning events (of the configured
// reasons) seen at least threshold times, counting every occurrence of an
// event series, while the last one is within the window. The finding is
// about the event's regarding object, when it is believed (regarding.go):
// an Event cannot speak for another namespace.
func detectWarningEvents(obj runtime.Object, p Params, now time.Time) ([]Detection, error) {
	ev, ok := obj.(*eventsv1.Event)
	if !ok {
		return nil, fmt.Errorf("event detector got %T", obj)
	}
	if ev.Type != corev1.EventTypeWarning || (len(p.Reasons) > 0 && !contains(p.Reasons, ev.Reason)) {
		return nil, nil
	}
	if distrust(ev, p.customKinds) != "" {
		return nil, nil
	}
	count, last := 1, ev.EventTime.Time
	if ev.DeprecatedCount > 0 {
		count = int(ev.DeprecatedCount)
	}
	if !ev.DeprecatedLastTimestamp.IsZero() {
		last = ev.DeprecatedLastTimestamp.Time
	}
	if ev.Series != nil {
		count, last = int(ev.Series.Count), ev.Series.LastObservedTime.Time
	}
	if last.IsZero() {
		last = ev.CreationTimestamp.Time
	}
	wait, recent := recheck(last, p.Window, now)
	if count < p.Threshold || !recent {
		return nil, nil
	}
	r := ev.Regarding
	return []Detection{{Reason: truncate(ev.Reason, MaxEventReason), RecheckAfter: wait,
		Object: &ObjectRef{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, UID: string(r.UID)},
		Facts:  map[string]string{"count": strconv.Itoa(count), "note": ev.Note, "reportingController": ev.ReportingController},
		Detail: fmt.Sprintf("%s (%d× in the last %s)", ev.Note, count, window(p.Window))}}, nil
}

// window says a detector's window as people read it: "15 min", "1 h",
// "1 h 30 min" (a window is whole minutes in practice; seconds only
// below one).
func window(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%d s", int(d.Seconds()))
	}
	h, m := int(d.Hours()), int(d.Minutes())%60
	switch {
	case h == 0:
		return fmt.Sprintf("%d min", m)
	case m == 0:
		return fmt.Sprintf("%d h", h)
	}
	return fmt.Sprintf("%d h %d min", h, m)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
