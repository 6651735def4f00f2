package rules

import (
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Detection is what a detector reports; Evaluate adds the rule's data.
type Detection struct {
	Reason    string
	Container string
	Facts     map[string]string
	// Detail is one sentence for the message body.
	Detail     string
	Sustaining bool
	// Severity, when set, is the detection's instead of the rule's (a
	// detector with a level of its own: a volume almost full is critical).
	Severity string
	// Settling marks a Sustaining detection whose object looks healthy
	// and is only waiting out the detector's settle time: that wait is
	// already a hold-down, so the incident resolves as soon as it ends.
	Settling bool
	// Since is when the problem began, if the object says.
	Since time.Time
	// RecheckAfter: the detection ends by itself after this long.
	RecheckAfter time.Duration
	// Object, when set, is what the finding is about instead of the
	// evaluated object (an Event's regarding object).
	Object *ObjectRef
}

// Params tune a detector; zero values take the detector's defaults.
type Params struct {
	Threshold int
	Window    time.Duration
	Reasons   []string
	// Settle: how long a recovered container must stay up (crashloop).
	Settle time.Duration
	// Except: termination reasons left to another rule (crashloop).
	Except []string
	// Critical: the second threshold (volume-filling, percent full).
	Critical int
	// Horizon: alert when the forecast says full within it (volume-filling; 0: no forecast alert).
	Horizon time.Duration
	// aboutRegarding: the detector's findings are about an Event's
	// regarding object (warning-events); customKinds are the kinds
	// outside the built-in table such an object may be (regarding.go).
	aboutRegarding bool
	customKinds    []schema.GroupKind
	// related: the cache's other objects (set for each evaluation).
	related Related
	// volumes: the kubelet's volume readings (set for each evaluation).
	volumes VolumeStats
}

// Detector inspects one object and reports its problems.
type Detector func(obj runtime.Object, p Params, now time.Time) ([]Detection, error)

type detectorSpec struct {
	detect Detector
	// wake, for a detector whose problem can begin by the passing of time
	// alone (a CronJob's run comes due), says how long until the object,
	// unchanged, could show it: the object is evaluated again then. 0:
	// no such time.
	wake       func(obj runtime.Object, p Params, now time.Time) time.Duration
	defaultFor time.Duration
	// forIsBound, when set, says what the rule's for: means for a
	// detector that reports a state normal for a while (a Job running):
	// only for: makes it a problem, so for: 0s is refused.
	forIsBound       string
	defaultThreshold int
	defaultWindow    time.Duration
	defaultSettle    time.Duration
	aboutRegarding   bool
	// reads names a kind the detector reads through Related besides its
	// own: the Set's Kinds include it, so that it is cached and watched.
	reads string
	// defaultCritical and defaultHorizon: volume-filling's.
	defaultCritical int
	defaultHorizon  time.Duration
	// readsVolumes: the detector reads VolumeStats (kubelet polling runs
	// while a rule of it is loaded).
	readsVolumes bool
}

// withDefaults fills in the detector's defaults; settle is the rule's
// setting (nil: unset; 0s is a setting).
func (p Params) withDefaults(s detectorSpec, settle *time.Duration) Params {
	if p.Threshold == 0 {
		p.Threshold = s.defaultThreshold
	}
	if p.Window == 0 {
		p.Window = s.defaultWindow
	}
	if p.Critical == 0 && s.defaultCritical > 0 {
		p.Critical = max(s.defaultCritical, p.Threshold)
	}
	if settle == nil {
		p.Settle = s.defaultSettle
	} else {
		p.Settle = *settle
	}
	p.aboutRegarding = s.aboutRegarding
	return p
}

// detectors lists the built-in detectors by kind and name (docs/rules.md
// describes each).
var detectors = map[string]map[string]detectorSpec{
	"Pod": {
		"crashloop":       {detect: detectCrashLoop, defaultSettle: time.Minute},
		"oomkilled":       {detect: detectOOMKilled, defaultWindow: 10 * time.Minute},
		"image-pull":      {detect: detectImagePull},
		"container-error": {detect: detectContainerError},
		"pod-failed":      {detect: detectPodFailed},
		"evicted":         {detect: detectEvicted, defaultWindow: time.Hour},
		"pending":         {detect: detectPending, defaultFor: 5 * time.Minute},
		"not-ready":       {detect: detectNotReady, defaultFor: 5 * time.Minute},
		"restarts":        {detect: detectRestarts, defaultThreshold: 3, defaultWindow: time.Hour},
	},
	"Deployment": {
		"rollout-stuck": {detect: detectProgressDeadline},
		"unavailable":   {detect: detectUnavailable, defaultFor: 10 * time.Minute},
	},
	"StatefulSet": {"unavailable": {detect: detectUnavailable, defaultFor: 10 * time.Minute}},
	"DaemonSet":   {"unavailable": {detect: detectUnavailable, defaultFor: 10 * time.Minute}},
	"Job": {
		"job-failed":     {detect: detectJobFailed},
		"cronjob-failed": {detect: detectCronJobFailed},
		"long-running":   {detect: detectLongRunning, defaultFor: time.Hour, forIsBound: "how long a Job may run"},
	},
	"CronJob": {"missed-schedule": {detect: detectMissedSchedule, wake: cronWake, defaultFor: 5 * time.Minute}},
	"Node": {
		"node-not-ready": {detect: detectNodeNotReady, defaultFor: time.Minute},
		"node-pressure":  {detect: detectNodePressure},
	},
	"PersistentVolumeClaim": {
		"pvc-pending": {detect: detectPVCPending, defaultFor: 5 * time.Minute},
		"volume-filling": {detect: detectVolumeFilling, reads: "Node", readsVolumes: true, defaultThreshold: DefaultVolumeWarning,
			defaultCritical: DefaultVolumeCritical, defaultWindow: DefaultVolumeWindow, defaultHorizon: DefaultVolumeHorizon},
	},
	"HorizontalPodAutoscaler": {"max-replicas": {detect: detectMaxReplicas, defaultFor: 15 * time.Minute}},
	"Service":                 {"no-endpoints": {detect: detectNoEndpoints, defaultFor: 5 * time.Minute, reads: "EndpointSlice"}},
	certificateKind: {
		"cert-expiring":  {detect: detectCertExpiring, wake: certWake, defaultWindow: 14 * 24 * time.Hour},
		"cert-not-ready": {detect: detectCertNotReady, defaultFor: 10 * time.Minute},
	},
	"Event": {"warning-events": {detect: detectWarningEvents, defaultThreshold: 1, defaultWindow: 15 * time.Minute, aboutRegarding: true}},
}

// Detectors lists the built-in detector names of kind (for docs and tests).
func Detectors(kind string) []string { return slices.Sorted(maps.Keys(detectors[kind])) }

func kindsWithDetectors() string { return strings.Join(slices.Sorted(maps.Keys(detectors)), ", ") }

func detectorNames(kind string) string {
	return strings.Join(slices.Sorted(maps.Keys(detectors[kind])), ", ")
}

// recheck returns how long until t+window passes (at least a second), and
// whether it is still in the future.
func recheck(t time.Time, window time.Duration, now time.Time) (time.Duration, bool) {
	left := t.Add(window).Sub(now)
	return max(left, time.Second), left > 0
}
