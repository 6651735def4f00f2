package rules

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
)

// withDetector adds a detector for the test's duration.
func withDetector(t *testing.T, kind, name string, spec detectorSpec) {
	t.Helper()
	detectors[kind][name] = spec
	t.Cleanup(func() { delete(detectors[kind], name) })
}

// TestAPanickingRuleIsItsOwnError: a detector that panics on an object
// (a bug, or a library's, on a shape nothing foresaw) is that rule's
// error on that object; the other rules of the kind still run, and the
// process goes on.
func TestAPanickingRuleIsItsOwnError(t *testing.T) {
	withDetector(t, "Pod", "test-panics", detectorSpec{detect: func(runtime.Object, Params, time.Time) ([]Detection, error) {
		var m map[string]int
		m["x"]++ // assignment to a nil map
		return nil, nil
	}})
	set := compile(t, `rules:
  - {name: boom, kind: Pod, detector: test-panics, sinks: [out]}
  - {name: crash, kind: Pod, detector: crashloop, sinks: [out]}
sinks: [{name: out, stdout: {}}]
`)
	ev := set.EvaluateWithExclusions("Pod", loadObject(t, "crashloop.yaml"), now, nil)
	if len(ev.Errors) != 1 || ev.Errors[0].Rule != "boom" || !strings.Contains(ev.Errors[0].Err.Error(), "a bug in herald") {
		t.Errorf("errors %+v, want one, of rule boom", ev.Errors)
	}
	if describe(ev.Findings) != "CrashLoopBackOff/app" {
		t.Errorf("findings %q, want the other rule's", describe(ev.Findings))
	}
}

// TestWakeHasAFloor: a rule that asks to look again sooner than a second
// is looked at again after a second, not in a loop.
func TestWakeHasAFloor(t *testing.T) {
	withDetector(t, "Pod", "test-wakes", detectorSpec{
		detect: func(runtime.Object, Params, time.Time) ([]Detection, error) { return nil, nil },
		wake:   func(runtime.Object, Params, time.Time) time.Duration { return time.Nanosecond },
	})
	set := compile(t, ruleYAML("Pod", "test-wakes", ""))
	if ev := set.EvaluateWithExclusions("Pod", loadObject(t, "healthy.yaml"), now, nil); ev.Wake != time.Second {
		t.Errorf("wake %s, want 1s", ev.Wake)
	}
}
