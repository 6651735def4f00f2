package incident

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/herald-k8s/herald/internal/rules"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func podFinding(pod string, restarts int) rules.Finding {
	f := finding("uid-"+pod, "app", false, fmt.Sprint(restarts))
	f.Object.Name = pod
	f.RestartStep = 5
	return f
}

func transitions(notes []Notification) string {
	s := ""
	for _, n := range notes {
		s += string(n.Transition) + " "
	}
	return s
}

func TestGroupByWorkload(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)}
	tr := NewTracker(Options{Now: clock.now})
	group := &rules.ObjectRef{Kind: "Deployment", Namespace: "shop", Name: "api"}
	grouped := func(pod string) rules.Finding {
		f := podFinding(pod, 1)
		f.GroupByWorkload, f.Group, f.GroupTotal = true, group, 10
		return f
	}
	var all []Notification
	for i := range 10 { // ten pods crash one after another
		notes, _ := tr.Reconcile(fmt.Sprintf("Pod/shop/api-%d", i), []rules.Finding{grouped(fmt.Sprintf("api-%d", i))})
		all = append(all, notes...)
	}
	if all[0].Transition != Firing || tr.Open() != 1 {
		t.Fatalf("first: %s; open %d", all[0].Transition, tr.Open())
	}
	for _, n := range all[1:] {
		if n.Transition != Updated {
			t.Fatalf("later pods gave %s, want updated", n.Transition)
		}
	}
	if last := all[len(all)-1]; last.Incident.Title != "CrashLoopBackOff: Deployment shop/api: 10/10 pods (container app)" {
		t.Errorf("title %q", last.Incident.Title)
	}
	var resolved []Notification
	for i := range 10 {
		notes, _ := tr.Reconcile(fmt.Sprintf("Pod/shop/api-%d", i), nil)
		resolved = append(resolved, notes...)
	}
	if got := transitions(resolved); got != "updated updated updated updated updated updated updated updated updated resolved " {
		t.Errorf("recovery gave %s", got)
	}
}

func TestRestartStepAndRepeat(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)}
	tr := NewTracker(Options{Now: clock.now})
	steps := []struct {
		restarts int
		want     string
	}{{3, "firing "}, {4, ""}, {7, ""}, {8, "updated "}, {12, ""}, {13, "updated "}}
	for _, st := range steps {
		notes, _ := tr.Reconcile("Pod/shop/web", []rules.Finding{podFinding("web", st.restarts)})
		if got := transitions(notes); got != st.want {
			t.Errorf("restarts %d: %q, want %q", st.restarts, got, st.want)
		}
	}
	f := podFinding("web", 13)
	f.Repeat = time.Hour
	clock.t = clock.t.Add(59 * time.Minute)
	if notes, recheck := tr.Reconcile("Pod/shop/web", []rules.Finding{f}); len(notes) != 0 || recheck != time.Minute {
		t.Errorf("before repeat: %v, recheck %s", transitions(notes), recheck)
	}
	clock.t = clock.t.Add(time.Minute)
	if notes, _ := tr.Reconcile("Pod/shop/web", []rules.Finding{f}); transitions(notes) != "repeat " {
		t.Errorf("after an hour: %q, want repeat", transitions(notes))
	}
}

func TestHoldDownDampsFlapping(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)}
	tr := NewTracker(Options{Now: clock.now, HoldDown: time.Minute})
	f := podFinding("web", 1)
	tr.Reconcile("k", []rules.Finding{f})
	notes, recheck := tr.Reconcile("k", nil)
	if len(notes) != 0 || recheck != time.Minute {
		t.Fatalf("gone: %s recheck %s; want nothing for a minute", transitions(notes), recheck)
	}
	clock.t = clock.t.Add(30 * time.Second)
	if notes, _ := tr.Reconcile("k", []rules.Finding{f}); len(notes) != 0 {
		t.Fatalf("back within the hold-down: %s", transitions(notes))
	}
	tr.Reconcile("k", nil)
	clock.t = clock.t.Add(time.Minute)
	if notes, _ := tr.Reconcile("k", nil); transitions(notes) != "resolved " || notes[0].Incident.Ended != EndedRecovered {
		t.Fatalf("after the hold-down: %q, want resolved as recovered", transitions(notes))
	}
}

// TestResolvedSaysHowItEnded: a deleted pod's incident resolves as
// deleted, one whose problem went away as recovered (the message says
// which, not what was wrong).
func TestResolvedSaysHowItEnded(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)}
	tr := NewTracker(Options{Now: clock.now, HoldDown: time.Minute})
	tr.Reconcile("k", []rules.Finding{podFinding("web", 1)})
	notes, _ := tr.ReconcileGone("k")
	if transitions(notes) != "resolved " || notes[0].Incident.Ended != EndedDeleted {
		t.Fatalf("deleted: %+v, want resolved as deleted", notes)
	}
}

// TestLedgerRoundTrip: state saved and restored into a new tracker (a
// restart) stays quiet for what was said and delivers what was not.
func TestLedgerRoundTrip(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)}
	tr := NewTracker(Options{Now: clock.now})
	n1, _ := tr.Reconcile("Pod/shop/a", []rules.Finding{podFinding("a", 3)})
	n2, _ := tr.Reconcile("Pod/shop/b", []rules.Finding{podFinding("b", 3)})
	tr.Delivered(n1[0], "out") // a delivered, b not
	_ = n2
	store := &MemoryStore{}
	incs, _ := tr.Snapshot()
	store.Save(context.Background(), incs)

	loaded, _ := store.Load(context.Background(), nil)
	after := NewTracker(Options{Now: clock.now})
	after.Restore(loaded)
	undelivered := after.Undelivered()
	if len(undelivered) != 1 || undelivered[0].Incident.Object.Name != "b" || undelivered[0].Seq != 1 {
		t.Fatalf("undelivered after restore: %+v", undelivered)
	}
	if notes, _ := after.Reconcile("Pod/shop/a", []rules.Finding{podFinding("a", 5)}); len(notes) != 0 {
		t.Errorf("restart made noise: %s", transitions(notes))
	}
	// Restart counts already reported do not count again.
	if notes, _ := after.Reconcile("Pod/shop/a", []rules.Finding{podFinding("a", 7)}); len(notes) != 0 {
		t.Errorf("restart count 7 after 3 reported: %s", transitions(notes))
	}
	if notes, _ := after.Reconcile("Pod/shop/a", []rules.Finding{podFinding("a", 8)}); transitions(notes) != "updated " || notes[0].Seq != 2 {
		t.Errorf("restart count 8 after 3 reported: %s", transitions(notes))
	}
	if keys := after.MemberKeys(); len(keys) != 2 {
		t.Errorf("member keys %v", keys)
	}
	if notes, _ := after.Reconcile("Pod/shop/b", nil); transitions(notes) != "resolved " {
		t.Errorf("b recovered: %s", transitions(notes))
	}
}

// TestSameIDAfterUnflushedRestart: a herald killed after notifying but
// before its ledger write restarts from the older ledger and gives the
// problem the same ID, so the repeated notification has the same key.
func TestSameIDAfterUnflushedRestart(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)}
	first := NewTracker(Options{Now: clock.now})
	first.Reconcile("k", []rules.Finding{podFinding("web", 1)})
	notes, _ := first.Reconcile("k", nil) // occurrence 1 resolved
	saved, _ := first.Snapshot()          // the last ledger write
	again, _ := first.Reconcile("k", []rules.Finding{podFinding("web", 9)})
	if len(notes) != 1 || len(again) != 1 || again[0].Incident.ID == notes[0].Incident.ID {
		t.Fatalf("a problem that comes back must be a new incident: %v / %v", notes, again)
	}
	// Killed before writing again: the next herald starts from saved.
	second := NewTracker(Options{Now: clock.now})
	second.Restore(saved)
	repeat, _ := second.Reconcile("k", []rules.Finding{podFinding("web", 9)})
	if len(repeat) != 1 || repeat[0].ID() != again[0].ID() {
		t.Fatalf("after an unflushed restart: %v, want the same key %s", repeat, again[0].ID())
	}
}

// TestFlappingKeepsOneResolvedIncident: a pod that crashes and recovers
// a hundred times leaves one resolved incident in the ledger, not a
// hundred, and the next occurrence still gets the next number, also
// after a restart from that ledger.
func TestFlappingKeepsOneResolvedIncident(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)}
	tr := NewTracker(Options{Now: clock.now, Retention: 24 * time.Hour})
	for i := range 100 {
		for _, findings := range [][]rules.Finding{{podFinding("web", i+1)}, nil} {
			for _, n := range mustReconcile(tr, "Pod/shop/web", findings) {
				tr.Delivered(n, "out")
			}
		}
	}
	snap, _ := tr.Snapshot()
	if len(snap) != 1 || snap[0].Occurrence != 100 || snap[0].ResolvedAt.IsZero() {
		t.Fatalf("ledger after 100 flaps: %d incidents (%+v), want the 100th, resolved", len(snap), snap)
	}
	// An undelivered resolved incident is kept until its sink has it.
	fired := mustReconcile(tr, "Pod/shop/web", []rules.Finding{podFinding("web", 101)})
	tr.Delivered(fired[0], "out")
	mustReconcile(tr, "Pod/shop/web", nil) // resolved, not delivered
	mustReconcile(tr, "Pod/shop/web", []rules.Finding{podFinding("web", 102)})
	snap, _ = tr.Snapshot()
	if len(snap) != 2 || snap[0].Occurrence != 101 || len(snap[0].Pending) != 1 || snap[1].Occurrence != 102 || !snap[1].ResolvedAt.IsZero() {
		t.Errorf("want occurrence 101 (resolved, not yet delivered) and 102 (open), got %+v", snap)
	}
	restored := NewTracker(Options{Now: clock.now, Retention: 24 * time.Hour})
	snap, _ = tr.Snapshot()
	restored.Restore(snap)
	mustReconcile(restored, "Pod/shop/web", nil)
	next := mustReconcile(restored, "Pod/shop/web", []rules.Finding{podFinding("web", 103)})
	if len(next) != 1 || next[0].Incident.Occurrence != 103 {
		t.Fatalf("after a restart the next occurrence is %+v, want 103", next)
	}
}

func mustReconcile(tr *Tracker, key string, findings []rules.Finding) []Notification {
	notes, _ := tr.Reconcile(key, findings)
	return notes
}
