package rules

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// BenchmarkEvaluate is the work a reconcile does per pod: the built-in
// detectors (crashloop, oomkilled, image-pull, not-ready) on a healthy
// and on a crash-looping pod, and a CEL condition.
func BenchmarkEvaluate(b *testing.B) {
	detectors := compile(b, `
rules:
  - {name: crash, kind: Pod, detector: crashloop, sinks: [s]}
  - {name: oom, kind: Pod, detector: oomkilled, sinks: [s]}
  - {name: pull, kind: Pod, detector: image-pull, sinks: [s]}
  - {name: ready, kind: Pod, detector: not-ready, sinks: [s]}
sinks: [{name: s, stdout: {}}]
`)
	cel := compile(b, `
rules:
  - name: restarts
    kind: Pod
    condition: object.status.containerStatuses.exists(c, c.restartCount > 3 && has(c.state.waiting) && c.state.waiting.reason == "CrashLoopBackOff")
    sinks: [s]
sinks: [{name: s, stdout: {}}]
`)
	for _, bc := range []struct {
		name string
		set  *Set
		file string
		want int
	}{
		{"detectors/healthy", detectors, "healthy.yaml", 0},
		{"detectors/crashloop", detectors, "crashloop.yaml", 2}, // crash-looping and not ready
		{"cel/healthy", cel, "healthy.yaml", 0},
		{"cel/crashloop", cel, "crashloop.yaml", 1},
	} {
		pod := loadObject(b, bc.file).(*corev1.Pod)
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				found, errs := bc.set.Evaluate("Pod", pod, now, nil)
				if len(found) != bc.want || len(errs) > 0 {
					b.Fatalf("%d findings, errors %v; want %d", len(found), errs, bc.want)
				}
			}
		})
	}
}

// BenchmarkInScope is the filter event handlers run on every event.
func BenchmarkInScope(b *testing.B) {
	set := compile(b, `
rules:
  - {name: crash, kind: Pod, detector: crashloop, namespaces: {exclude: [kube-*]}, labels: "tier!=batch", sinks: [s]}
sinks: [{name: s, stdout: {}}]
`)
	pod := loadObject(b, "crashloop.yaml").(*corev1.Pod)
	b.ReportAllocs()
	for b.Loop() {
		if !set.InScope("Pod", pod, nil) {
			b.Fatal("out of scope")
		}
	}
}
