package rules

import (
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The detectors of containers that wait and cannot start (image pulls,
// configuration errors), and when by the pod's own record the wait
// began. What their messages say is read in waiting.go.

// startingOver: the container has never run and the kubelet is (again)
// about to create it.
func startingOver(cs containerStatus) bool {
	w := cs.State.Waiting
	return w != nil && (w.Reason == "ContainerCreating" || w.Reason == "PodInitializing") &&
		cs.RestartCount == 0 && cs.LastTerminationState.Terminated == nil
}

// waitingDetector fires for containers waiting with one of reasons; the
// incident's reason is the first of them, so flipping between, say,
// ErrImagePull and ImagePullBackOff stays one incident.
func waitingDetector(reasons ...string) Detector {
	return func(obj runtime.Object, _ Params, _ time.Time) ([]Detection, error) {
		pod, err := asPod(obj)
		if err != nil || gone(pod) {
			return nil, err
		}
		var out []Detection
		for _, cs := range containers(pod) {
			w := cs.State.Waiting
			if w == nil {
				continue
			}
			since := waitingSince(pod, cs.init)
			if startingOver(cs) {
				// A restarted kubelet writes ContainerCreating for every
				// container it has not started yet, for some seconds
				// before it tries again and finds the same problem: not
				// a recovery. An open incident stays open; none opens.
				out = append(out, Detection{Reason: reasons[0], Container: cs.Name, Sustaining: true, Detail: w.Reason})
				continue
			}
			for _, r := range reasons {
				if w.Reason != r {
					continue
				}
				facts := map[string]string{"waitingReason": w.Reason, "image": cs.Image}
				detail := w.Reason
				if w.Message != "" {
					facts["message"] = w.Message
					detail += ": " + w.Message
				}
				var more map[string]string
				switch {
				case reasons[0] == "ImagePullBackOff":
					detail, more = pullDetail(w.Reason, cs.Image, w.Message)
				case w.Reason == "CreateContainerConfigError":
					if d, f := configDetail(pod.Namespace, w.Message); d != "" {
						detail, more = d, f
					}
				}
				maps.Copy(facts, more)
				out = append(out, Detection{Reason: reasons[0], Container: cs.Name, Facts: facts, Detail: detail, Since: since})
			}
		}
		return out, nil
	}
}

// waitingSince is when, by the pod's own conditions, its containers (or
// its init containers) have been kept from running: a container status
// has no time of its own while it waits, and a for: timed from when this
// herald first saw the wait would start again at every restart or
// failover of herald. Regular containers: since ContainersReady last
// turned false, but not before the init containers finished (a pull can
// only fail after them). Init containers: since Initialized turned
// false. Zero when the conditions do not say.
func waitingSince(pod *corev1.Pod, init bool) time.Time {
	var containersDown, initDone, initDown time.Time
	for _, c := range pod.Status.Conditions {
		switch {
		case c.Type == corev1.ContainersReady && c.Status != corev1.ConditionTrue:
			containersDown = c.LastTransitionTime.Time
		case c.Type == corev1.PodInitialized && c.Status == corev1.ConditionTrue:
			initDone = c.LastTransitionTime.Time
		case c.Type == corev1.PodInitialized:
			initDown = c.LastTransitionTime.Time
		}
	}
	if init {
		return initDown
	}
	if containersDown.IsZero() {
		return time.Time{}
	}
	if initDone.After(containersDown) {
		return initDone
	}
	return containersDown
}

var (
	detectImagePull = waitingDetector("ImagePullBackOff", "ErrImagePull", "InvalidImageName", "ErrImageNeverPull")
	// Each of these is its own incident: they have different fixes.
	detectContainerError = func(obj runtime.Object, p Params, now time.Time) ([]Detection, error) {
		var out []Detection
		for _, r := range []string{"CreateContainerConfigError", "CreateContainerError", "RunContainerError"} {
			d, err := waitingDetector(r)(obj, p, now)
			if err != nil {
				return nil, err
			}
			out = append(out, d...)
		}
		return out, nil
	}
)
