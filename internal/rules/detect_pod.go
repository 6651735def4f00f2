package rules

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// asPod narrows obj; detectors are only registered for their kind, so a
// mismatch is a bug worth an error rather than a panic.
func asPod(obj runtime.Object) (*corev1.Pod, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, fmt.Errorf("pod detector got %T", obj)
	}
	return pod, nil
}

// containers lists a pod's container statuses, init containers first
// (sidecars are init containers with restartPolicy Always).
type containerStatus struct {
	corev1.ContainerStatus
	init, sidecar bool
}

func containers(pod *corev1.Pod) []containerStatus {
	sidecars := map[string]bool{}
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars[c.Name] = true
		}
	}
	out := make([]containerStatus, 0, len(pod.Status.InitContainerStatuses)+len(pod.Status.ContainerStatuses))
	for _, cs := range pod.Status.InitContainerStatuses {
		out = append(out, containerStatus{ContainerStatus: cs, init: !sidecars[cs.Name], sidecar: sidecars[cs.Name]})
	}
	for _, cs := range pod.Status.ContainerStatuses {
		out = append(out, containerStatus{ContainerStatus: cs})
	}
	return out
}

// gone reports pods that are on their way out (rolling update, scale
// down, kubectl delete): none of their problems is news.
func gone(pod *corev1.Pod) bool { return pod.DeletionTimestamp != nil }

// lastTermination is the reason the container last ended: its current
// state if it is terminated, else its last termination state.
func lastTermination(cs corev1.ContainerStatus) string {
	if t := cs.State.Terminated; t != nil {
		return t.Reason
	}
	if t := cs.LastTerminationState.Terminated; t != nil {
		return t.Reason
	}
	return ""
}

func restartFacts(cs corev1.ContainerStatus) map[string]string {
	f := map[string]string{"restartCount": strconv.Itoa(int(cs.RestartCount))}
	if t := cs.LastTerminationState.Terminated; t != nil {
		f["exitCode"] = strconv.Itoa(int(t.ExitCode))
		if t.Reason != "" {
			f["lastReason"] = t.Reason
		}
		if t.Message != "" {
			f["lastMessage"] = t.Message
		}
	}
	return f
}

func restartDetail(f map[string]string) string {
	n, _ := strconv.Atoi(f["restartCount"])
	d := fmt.Sprintf("restarted %d %s", n, plural(n, "time", "times"))
	if code, ok := f["exitCode"]; ok {
		d += ", last exit code " + code
		if r := f["lastReason"]; r != "" {
			d += " (" + r + ")"
		}
	}
	return d
}

// detectCrashLoop fires for every container the kubelet holds in
// CrashLoopBackOff, or that has just crashed again (backingOff): the
// kubelet writes CrashLoopBackOff only when one of its pod syncs lands
// inside the back-off, which with its default 1m sync period is a flash
// at the end of each of the first back-offs (docs/testing.md). Between
// crashes such a container is briefly running, even ready; until it has
// run ready for the settle time without a new restart (an init
// container: until it exited 0) it is reported as Sustaining, so the
// incident neither resolves nor fires again with each crash cycle. The settle clock is the container's own startedAt, so a
// restart of herald does not reset it. A container whose last
// termination has a reason in p.Except (OOMKilled) is another rule's.
func detectCrashLoop(obj runtime.Object, p Params, now time.Time) ([]Detection, error) {
	pod, err := asPod(obj)
	if err != nil || gone(pod) {
		return nil, err
	}
	var out []Detection
	for _, cs := range containers(pod) {
		looping := cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff" || backingOff(cs.ContainerStatus)
		if !looping && cs.RestartCount == 0 || slices.Contains(p.Except, lastTermination(cs.ContainerStatus)) {
			continue
		}
		d := Detection{Reason: "CrashLoopBackOff", Container: cs.Name, Facts: restartFacts(cs.ContainerStatus), Sustaining: !looping}
		if t := cs.State.Terminated; t != nil {
			// The instance that crashed is the current one: its log is
			// the current container's, not the previous one's.
			d.Facts["state"] = "terminated"
			d.Facts["exitCode"] = strconv.Itoa(int(t.ExitCode))
			if t.Reason != "" {
				d.Facts["lastReason"] = t.Reason
			}
		}
		d.Detail = restartDetail(d.Facts)
		if !looping {
			left, up := settleLeft(cs, p.Settle, now)
			if up && left <= 0 {
				continue // recovered
			}
			d.Settling, d.RecheckAfter = up, left
		}
		out = append(out, d)
	}
	return out, nil
}

// backoffReset is how long a container must have run for the kubelet to
// restart it after a crash without a back-off (twice its maximum
// back-off of 5 minutes).
const backoffReset = 10 * time.Minute

// backingOff: the container has crashed (exit code not 0) after a
// restart, having run for less than backoffReset: the kubelet now backs
// off before restarting it, which is what CrashLoopBackOff says.
func backingOff(cs corev1.ContainerStatus) bool {
	t := cs.State.Terminated
	if t == nil || t.ExitCode == 0 || cs.RestartCount < 1 {
		return false
	}
	return t.StartedAt.IsZero() || t.FinishedAt.IsZero() || t.FinishedAt.Sub(t.StartedAt.Time) < backoffReset
}

// settleLeft says whether a container that crashed before is up again
// (running and ready; an init container: exited 0), and how long it must
// stay up before it counts as recovered.
func settleLeft(cs containerStatus, settle time.Duration, now time.Time) (left time.Duration, up bool) {
	switch {
	case cs.init:
		return 0, cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0
	case cs.State.Running == nil:
		return 0, false
	case cs.sidecar:
		up = cs.Started == nil || *cs.Started
	default:
		up = cs.Ready
	}
	if !up || settle <= 0 || cs.State.Running.StartedAt.IsZero() {
		return 0, up
	}
	return cs.State.Running.StartedAt.Add(settle).Sub(now), true
}

// detectOOMKilled fires when a container was killed for running out of
// memory, as the kubelet recorded it (reason OOMKilled, not a guess from
// exit code 137), within the window; repeated kills keep it open.
func detectOOMKilled(obj runtime.Object, p Params, now time.Time) ([]Detection, error) {
	pod, err := asPod(obj)
	if err != nil || gone(pod) {
		return nil, err
	}
	limits := map[string]string{}
	for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		if q, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
			limits[c.Name] = q.String()
		}
	}
	var out []Detection
	for _, cs := range containers(pod) {
		t := cs.State.Terminated
		if t == nil || t.Reason != "OOMKilled" {
			t = cs.LastTerminationState.Terminated
		}
		if t == nil || t.Reason != "OOMKilled" {
			continue
		}
		wait, recent := recheck(t.FinishedAt.Time, p.Window, now)
		if !t.FinishedAt.IsZero() && !recent {
			continue
		}
		facts := map[string]string{"restartCount": strconv.Itoa(int(cs.RestartCount)), "exitCode": strconv.Itoa(int(t.ExitCode))}
		if t == cs.State.Terminated {
			facts["state"] = "terminated" // the killed instance is the current one
		}
		detail := "killed for running out of memory"
		if l, ok := limits[cs.Name]; ok {
			facts["memoryLimit"] = l
			detail += " (limit " + l + ")"
		}
		out = append(out, Detection{Reason: "OOMKilled", Container: cs.Name, Facts: facts, Detail: detail,
			Since: t.FinishedAt.Time, RecheckAfter: wait})
	}
	return out, nil
}

// detectPodFailed fires for pods in phase Failed, other than evictions
// (their own detector) and Job pods (the Job's detector speaks for them).
func detectPodFailed(obj runtime.Object, _ Params, _ time.Time) ([]Detection, error) {
	pod, err := asPod(obj)
	if err != nil || gone(pod) || pod.Status.Phase != corev1.PodFailed || pod.Status.Reason == "Evicted" {
		return nil, err
	}
	for _, o := range pod.OwnerReferences {
		if o.Kind == "Job" {
			return nil, nil
		}
	}
	facts := map[string]string{}
	detail := "the pod failed"
	if pod.Status.Reason != "" {
		facts["reason"] = pod.Status.Reason
		detail += ": " + pod.Status.Reason
	}
	if pod.Status.Message != "" {
		facts["message"] = pod.Status.Message
		detail += ": " + pod.Status.Message
	}
	return []Detection{{Reason: "PodFailed", Facts: facts, Detail: detail}}, nil
}

// detectPending fires for pods still Pending (unscheduled, or scheduled
// but not started); with its default for: of 5m, only for slow ones.
func detectPending(obj runtime.Object, _ Params, _ time.Time) ([]Detection, error) {
	pod, err := asPod(obj)
	if err != nil || gone(pod) || pod.Status.Phase != corev1.PodPending {
		return nil, err
	}
	d := Detection{Reason: "PodPending", Since: pod.CreationTimestamp.Time, Facts: map[string]string{"scheduled": "true"}, Detail: "the pod has not started"}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			d.Facts["scheduled"] = "false"
			d.Facts["message"] = c.Message
			d.Detail = "the pod cannot be scheduled"
			if c.Message != "" {
				d.Detail += ": " + c.Message
			}
		}
	}
	return []Detection{d}, nil
}

// detectNotReady fires for containers of running pods that are not ready
// (with its default for: of 5m, only for lasting ones).
func detectNotReady(obj runtime.Object, _ Params, _ time.Time) ([]Detection, error) {
	pod, err := asPod(obj)
	if err != nil || gone(pod) || pod.Status.Phase != corev1.PodRunning {
		return nil, err
	}
	var since time.Time
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.ContainersReady && c.Status != corev1.ConditionTrue {
			since = c.LastTransitionTime.Time
		}
	}
	var out []Detection
	for _, cs := range containers(pod) {
		if cs.init || cs.Ready {
			continue
		}
		out = append(out, Detection{Reason: "NotReady", Container: cs.Name, Since: since,
			Facts: map[string]string{"restartCount": strconv.Itoa(int(cs.RestartCount))}, Detail: "the container is not ready"})
	}
	return out, nil
}

// detectRestarts fires for containers that have restarted at least
// threshold times and whose last restart is within the window.
func detectRestarts(obj runtime.Object, p Params, now time.Time) ([]Detection, error) {
	pod, err := asPod(obj)
	if err != nil || gone(pod) {
		return nil, err
	}
	var out []Detection
	for _, cs := range containers(pod) {
		t := cs.LastTerminationState.Terminated
		if int(cs.RestartCount) < p.Threshold || t == nil {
			continue
		}
		wait, recent := recheck(t.FinishedAt.Time, p.Window, now)
		if !recent {
			continue
		}
		facts := restartFacts(cs.ContainerStatus)
		out = append(out, Detection{Reason: "Restarting", Container: cs.Name, Facts: facts, Detail: restartDetail(facts), RecheckAfter: wait})
	}
	return out, nil
}
