package incident

import (
	"slices"
	"testing"
	"time"
)

// Each stage alone, on a fake clock: what it decides, and the state it
// keeps, without the tracker's reconcile around it.

func TestFlappingStage(t *testing.T) {
	now := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	f := flapping{cfg: FlapOptions{Starts: 3, Window: 10 * time.Minute, Quiet: 5 * time.Minute}}
	if got := (&flapping{}).starts(nil, now); got != nil {
		t.Errorf("flap damping off: starts %v, want none kept", got)
	}
	prev := &Incident{Starts: []time.Time{now.Add(-20 * time.Minute), now.Add(-4 * time.Minute), now.Add(-2 * time.Minute)}}
	starts := f.starts(prev, now)
	if want := []time.Time{now.Add(-4 * time.Minute), now.Add(-2 * time.Minute), now}; !slices.Equal(starts, want) {
		t.Errorf("starts %v, want those within the window and now %v", starts, want)
	}
	many := &Incident{Starts: []time.Time{now.Add(-5 * time.Minute), now.Add(-4 * time.Minute), now.Add(-3 * time.Minute), now.Add(-2 * time.Minute)}}
	if got := f.starts(many, now); len(got) != f.cfg.Starts {
		t.Errorf("%d starts kept, want the last %d (the ledger entry stays small)", len(got), f.cfg.Starts)
	}
	inc := &Incident{Starts: []time.Time{now.Add(-2 * time.Minute), now}}
	if _, ok := f.mark(inc, now); ok || inc.Flapping {
		t.Error("marked flapping after 2 starts (want 3)")
	}
	inc.Starts = starts
	change, ok := f.mark(inc, now)
	if !ok || !inc.Flapping || change != "flapping: started 3 times in 10 min; resolves after 5 min without the problem" {
		t.Errorf("3 starts in the window: marked %v, flapping %v, change %q", ok, inc.Flapping, change)
	}
	if _, ok := f.mark(inc, now); ok {
		t.Error("marked twice: the update that says so would be sent again")
	}
	if _, ok := f.mark(&Incident{Starts: starts}, now.Add(9*time.Minute)); ok {
		t.Error("starts older than the window counted")
	}
}

// reasonMuter mutes every incident whose reason is "Evicted" while an
// incident with reason "NodeNotReady" is open, as an inhibition does,
// and finds the source through the stage's index by reason.
type reasonMuter struct{}

func (reasonMuter) Mute(inc *Incident, open Open, _ time.Time) (Mute, bool) {
	if inc.Reason != "Evicted" {
		return Mute{}, false
	}
	for src := range open.WithReason("NodeNotReady") {
		return Mute{By: InhibitedBy + src.Fingerprint, Source: src.Fingerprint}, true
	}
	return Mute{}, false
}

func TestMutingStage(t *testing.T) {
	now := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	tr := NewTracker(Options{Now: func() time.Time { return now }, Muter: reasonMuter{}})
	m := &tr.muting
	node := &Incident{Fingerprint: "node", Reason: "NodeNotReady", Seq: 1, LastNotified: now}
	pod := &Incident{Fingerprint: "pod", Reason: "Evicted"}
	if _, ok := m.ask(pod, now); ok {
		t.Fatal("muted with no source open")
	}
	tr.setOpen(node, true)
	tr.setOpen(pod, true)
	mu, ok := m.ask(pod, now)
	if !ok || mu.Source != "node" {
		t.Fatalf("ask: %+v %v, want inhibited by the node's incident (found by reason)", mu, ok)
	}
	m.mute(pod, mu)
	if !m.muted["pod"] || pod.MutedBy != mu.By || node.Covers != 1 {
		t.Errorf("after mute: muted %v, MutedBy %q, source covers %d", m.muted["pod"], pod.MutedBy, node.Covers)
	}
	if node.HeldUntil.IsZero() {
		t.Error("the source's count grew and no update of it was held")
	}
	if got := m.MutedByRule(); got[""] != 1 || len(got) != 1 {
		t.Errorf("MutedByRule %v", got)
	}
	m.unmute(pod)
	if m.muted["pod"] || pod.MutedBy != "" || node.Covers != 0 {
		t.Errorf("after unmute: muted %v, MutedBy %q, source covers %d", m.muted["pod"], pod.MutedBy, node.Covers)
	}
	tr.setOpen(node, false)
	if _, ok := m.ask(pod, now); ok {
		t.Error("a closed incident is still found by its reason")
	}
	if len(m.byReason) != 1 {
		t.Errorf("index by reason %v, want only Evicted's", m.byReason)
	}
	restored := newMuting(Options{})
	restored.restore(&Incident{Fingerprint: "a", MutedBy: "silence shop/x"})
	restored.restore(&Incident{Fingerprint: "b"})
	if !restored.muted["a"] || restored.muted["b"] {
		t.Errorf("restored mutes %v, want only the incident the ledger says is muted", restored.muted)
	}
}

func TestSettlingIsKeptByTheWaitsStage(t *testing.T) {
	w := newWaits()
	w.settle("Pod/ns/a", "fp", true)
	if !w.settled("Pod/ns/a", "fp") || w.settled("Pod/ns/b", "fp") || w.settled("Pod/ns/a", "other") {
		t.Error("settling not kept per object and fingerprint")
	}
	w.settle("Pod/ns/a", "fp", false)
	if w.settled("Pod/ns/a", "fp") || len(w.settling) != 0 {
		t.Error("settling not forgotten")
	}
}
