package main

import (
	"fmt"
	"testing"
	"time"
)

// TestFlappingCrashLoopIsOneIncident: a crash loop whose container is
// running and ready for 2.5 s between crashes, 8 cycles, then healthy.
// With the chart's crash-loop rule (grouped by workload, default pacing,
// hold-down and flap damping; settle shortened to 10 s to keep the test
// short): one firing, and one resolved once the container has stayed
// ready for the settle time, within settle + 5 s of its recovery.
// Before the settle time this was 8 firings and 8 resolved.
func TestFlappingCrashLoopIsOneIncident(t *testing.T) {
	beside(t)
	env := controlPlanes.Get(t)
	client, _ := env.Client()
	recv := newReceiver(t)
	const settle = 10 * time.Second
	h := startedHerald(t, env, fmt.Sprintf(`
rules:
  - {name: pod-crashloop, kind: Pod, detector: crashloop, severity: critical, groupBy: workload, settle: %s, sinks: [hook]}
sinks:
  - {name: hook, webhook: {url: %s/herald}}
`, settle, recv.URL))
	defer h.stop()
	pod := deploymentPods(t, client, "default", "flappy", 1)[0]
	setStatus(t, client, pod, ready, 0)

	tick := time.NewTicker(time.Second / 2) // the crash loop's schedule: 1 s in back-off, 2.5 s ready
	defer tick.Stop()
	var recovered time.Time
	for cycle := range int32(8) {
		setStatus(t, client, pod, crashLooping, cycle+1)
		for range 2 {
			<-tick.C
		}
		recovered = time.Now() // after the last cycle, healthy from here on
		setStatus(t, client, pod, ready, cycle+1)
		for range 5 {
			<-tick.C
		}
	}

	firing := recv.next(t, time.Second)
	if firing.Transition != "firing" || firing.Object.Name != "flappy" {
		t.Fatalf("first: %s for %s, want the firing", firing.Transition, firing.Object.Name)
	}
	resolved := recv.next(t, settle+5*time.Second)
	took := time.Since(recovered)
	if resolved.Transition != "resolved" || resolved.Incident.ID != firing.Incident.ID {
		t.Fatalf("then %s (%q) for %s, want the one resolved", resolved.Transition, resolved.Change, resolved.Incident.ID)
	}
	// startedAt has a resolution of one second.
	if took < settle-time.Second || took > settle+5*time.Second {
		t.Errorf("resolved %s after the recovery, want within [settle, settle+5s] (settle %s)", took, settle)
	}
	t.Logf("8 crash cycles: firing, then resolved %s after the recovery (settle %s)", took.Round(time.Millisecond), settle)
	expectSentinel(t, client, recv, "sentinel")
}
