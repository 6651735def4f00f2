package rules

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Detection is what a detector reports; Evaluate adds the rule's data.
type Detection struct {
	Reason     string
	Container  string
	Facts      map[string]string
	Detail     string // one sentence for the message body
	Sustaining bool
}

// Detector inspects one object and reports its problems.
type Detector func(obj runtime.Object) ([]Detection, error)

// detectors lists the built-in detectors by kind and name. It is a
// constant table, never modified.
var detectors = map[string]map[string]Detector{
	"Pod": {
		"crashloop": detectCrashLoop,
	},
}

func supportedKinds() string {
	return strings.Join(sortedKeys(detectors), ", ")
}

func detectorNames(kind string) string {
	return strings.Join(sortedKeys(detectors[kind]), ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// detectCrashLoop fires for every container (init containers included) the
// kubelet holds in CrashLoopBackOff. Between crashes such a container is
// briefly running; until it is running and ready again (an init container:
// exited 0) it is reported as Sustaining, so the incident neither resolves
// nor fires again with each crash cycle.
func detectCrashLoop(obj runtime.Object) ([]Detection, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, fmt.Errorf("crashloop detector got %T, want *v1.Pod", obj)
	}
	if pod.DeletionTimestamp != nil {
		return nil, nil // being deleted: its incidents resolve
	}
	var out []Detection
	check := func(cs corev1.ContainerStatus, init bool) {
		recovered := cs.State.Running != nil && cs.Ready
		if init {
			recovered = cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0
		}
		looping := cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff"
		if !looping && (recovered || cs.RestartCount == 0) {
			return
		}
		d := Detection{
			Reason:     "CrashLoopBackOff",
			Container:  cs.Name,
			Facts:      map[string]string{"restartCount": strconv.Itoa(int(cs.RestartCount))},
			Sustaining: !looping,
		}
		if t := cs.LastTerminationState.Terminated; t != nil {
			d.Facts["exitCode"] = strconv.Itoa(int(t.ExitCode))
			if t.Reason != "" {
				d.Facts["lastReason"] = t.Reason
			}
			if t.Message != "" {
				d.Facts["lastMessage"] = t.Message
			}
		}
		d.Detail = fmt.Sprintf("restarted %d %s", cs.RestartCount, plural(int(cs.RestartCount), "time", "times"))
		if code, ok := d.Facts["exitCode"]; ok {
			d.Detail += ", last exit code " + code
			if r := d.Facts["lastReason"]; r != "" {
				d.Detail += " (" + r + ")"
			}
		}
		out = append(out, d)
	}
	for _, cs := range pod.Status.InitContainerStatuses {
		check(cs, true)
	}
	for _, cs := range pod.Status.ContainerStatuses {
		check(cs, false)
	}
	return out, nil
}
