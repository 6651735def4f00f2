package incident

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/herald-k8s/herald/internal/rules"
)

func pacedGroupFinding(pod string, interval time.Duration) rules.Finding {
	f := podFinding(pod, 1)
	f.GroupByWorkload, f.GroupTotal = true, 10
	f.Group = &rules.ObjectRef{Kind: "Deployment", Namespace: "shop", Name: "api"}
	f.UpdateInterval = interval
	return f
}

// TestPacedStormIsOneFiringAndOneUpdate: ten pods of a workload crash
// within seconds: the firing goes out at once, the nine changes are held
// and merged into one update when the interval ends, saying what changed;
// a second workload's first alert is not held by the first's pacing.
func TestPacedStormIsOneFiringAndOneUpdate(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)}
	coalesced := 0
	tr := NewTracker(Options{Now: clock.now, Coalesced: func(string) { coalesced++ }})
	var sent []Notification
	for i := range 10 {
		notes, _ := tr.Reconcile(fmt.Sprintf("Pod/shop/api-%d", i), []rules.Finding{pacedGroupFinding(fmt.Sprintf("api-%d", i), 30*time.Second)})
		sent = append(sent, notes...)
		clock.t = clock.t.Add(400 * time.Millisecond)
	}
	if got := transitions(sent); got != "firing " {
		t.Fatalf("during the storm: %q, want only the firing", got)
	}
	other := pacedGroupFinding("web-0", 30*time.Second)
	other.Group = &rules.ObjectRef{Kind: "Deployment", Namespace: "shop", Name: "web"}
	if notes, _ := tr.Reconcile("Pod/shop/web-0", []rules.Finding{other}); transitions(notes) != "firing " {
		t.Fatalf("another workload's first alert: %q, want firing at once", transitions(notes))
	}
	if next := tr.NextHeld(); !next.Equal(sent[0].Time.Add(30 * time.Second)) {
		t.Errorf("held until %s, want the firing + 30s", next)
	}
	if notes := tr.ReleaseHeld(clock.t); len(notes) != 0 {
		t.Fatalf("released before the interval: %v", transitions(notes))
	}
	clock.t = sent[0].Time.Add(30 * time.Second)
	notes := tr.ReleaseHeld(clock.t)
	if len(notes) != 1 || notes[0].Transition != Updated || notes[0].Seq != 2 {
		t.Fatalf("at the end of the interval: %q, want one update (seq 2)", transitions(notes))
	}
	if notes[0].Change != "1 → 10 of 10 pods" || notes[0].Incident.Title != "CrashLoopBackOff: Deployment shop/api: 10/10 pods (container app)" {
		t.Errorf("merged update: change %q, title %q", notes[0].Change, notes[0].Incident.Title)
	}
	if coalesced != 8 {
		t.Errorf("coalesced %d changes, want 8 (9 changes, 1 update)", coalesced)
	}
	if notes := tr.ReleaseHeld(clock.t.Add(time.Hour)); len(notes) != 0 {
		t.Errorf("released twice: %s", transitions(notes))
	}
}

// TestPacingLatestStateWins: a held update whose change reverted says
// nothing; a resolved cancels a held update.
func TestPacingLatestStateWins(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)}
	tr := NewTracker(Options{Now: clock.now})
	f := func(pod string) []rules.Finding { return []rules.Finding{pacedGroupFinding(pod, time.Minute)} }
	tr.Reconcile("Pod/shop/api-0", f("api-0"))
	tr.Reconcile("Pod/shop/api-1", f("api-1")) // held: 1 → 2
	tr.Reconcile("Pod/shop/api-1", nil)        // back to 1
	clock.t = clock.t.Add(time.Minute)
	if notes := tr.ReleaseHeld(clock.t); len(notes) != 0 {
		t.Errorf("a change that reverted was sent: %s %q", transitions(notes), notes[0].Change)
	}
	// A minute since the firing: held only for the gather time, in
	// which pods that change together are merged.
	tr.Reconcile("Pod/shop/api-1", f("api-1"))
	tr.Reconcile("Pod/shop/api-2", f("api-2"))
	if next := tr.NextHeld(); !next.Equal(clock.t.Add(gather)) {
		t.Errorf("held until %s, want now + %s", next, gather)
	}
	clock.t = clock.t.Add(gather)
	if notes := tr.ReleaseHeld(clock.t); len(notes) != 1 || notes[0].Change != "1 → 3 of 10 pods" {
		t.Fatalf("after the gather time: %v", notes)
	}
	tr.Reconcile("Pod/shop/api-3", f("api-3")) // held
	var notes []Notification
	for i := range 4 { // all recover at once
		n, _ := tr.Reconcile(fmt.Sprintf("Pod/shop/api-%d", i), nil)
		notes = append(notes, n...)
	}
	if got := transitions(notes); got != "resolved " {
		t.Errorf("recovery while an update is held: %q, want only resolved", got)
	}
	clock.t = clock.t.Add(time.Hour)
	if notes := tr.ReleaseHeld(clock.t); len(notes) != 0 {
		t.Errorf("held update sent after the resolved: %s", transitions(notes))
	}
}

// TestPacedRestartUpdate: restart-count updates of one container are
// paced too, and say "restarts 3 → 13".
func TestPacedRestartUpdate(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)}
	tr := NewTracker(Options{Now: clock.now})
	for _, r := range []int{3, 8, 10, 13} {
		f := podFinding("web", r)
		f.UpdateInterval = 30 * time.Second
		notes, _ := tr.Reconcile("Pod/shop/web", []rules.Finding{f})
		if r == 3 && transitions(notes) != "firing " || r > 3 && len(notes) > 0 {
			t.Fatalf("restarts %d: %q", r, transitions(notes))
		}
		clock.t = clock.t.Add(5 * time.Second)
	}
	clock.t = clock.t.Add(30 * time.Second)
	notes := tr.ReleaseHeld(clock.t)
	if len(notes) != 1 || notes[0].Change != "restarts 3 → 13" || notes[0].Incident.Facts["restartCount"] != "13" {
		t.Fatalf("released %s %+v", transitions(notes), notes)
	}
}

// TestHeldUpdateSurvivesRestart: the ledger keeps a held update; a
// tracker restored from it sends the merged update once, and with the
// same idempotency key as the one sent before the ledger recorded it.
func TestHeldUpdateSurvivesRestart(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)}
	tr := NewTracker(Options{Now: clock.now})
	for i := range 3 {
		tr.Reconcile(fmt.Sprintf("Pod/shop/api-%d", i), []rules.Finding{pacedGroupFinding(fmt.Sprintf("api-%d", i), 30*time.Second)})
	}
	store := &MemoryStore{}
	saved, _ := tr.Snapshot()
	if err := store.Save(context.Background(), saved); err != nil {
		t.Fatal(err)
	}
	clock.t = clock.t.Add(31 * time.Second)
	before := tr.ReleaseHeld(clock.t) // sent, then herald dies before the next ledger write

	restore := func() *Tracker {
		incs, _ := store.Load(context.Background(), t.Logf)
		again := NewTracker(Options{Now: clock.now})
		again.Restore(incs)
		return again
	}
	after := restore().ReleaseHeld(clock.t)
	if len(before) != 1 || len(after) != 1 || before[0].ID() != after[0].ID() || after[0].Change != "1 → 3 of 10 pods" {
		t.Fatalf("before the restart %v, after %v: want the same one update", before, after)
	}
	// Delivered and written: the next restart sends nothing.
	for _, n := range tr.Undelivered() {
		tr.Delivered(n, "out")
	}
	saved, _ = tr.Snapshot()
	store.Save(context.Background(), saved)
	again := restore()
	if notes := again.ReleaseHeld(clock.t.Add(time.Hour)); len(notes) != 0 {
		t.Errorf("sent again after a restart: %v", notes)
	}
	if u := again.Undelivered(); len(u) != 0 {
		t.Errorf("undelivered after a restart: %v", u)
	}
}

// TestFlapping: a problem that resolves and comes back three times in ten
// minutes stays open the third time, with one update saying so, and
// resolves only after the quiet time.
func TestFlapping(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)}
	tr := NewTracker(Options{Now: clock.now, Flapping: FlapOptions{Starts: 3, Window: 10 * time.Minute, Quiet: 10 * time.Minute}})
	var got string
	var last Notification
	step := func(present bool) time.Duration {
		var fs []rules.Finding
		if present {
			fs = []rules.Finding{podFinding("web", 1)}
		}
		notes, recheck := tr.Reconcile("Pod/shop/web", fs)
		got += transitions(notes)
		if len(notes) > 0 {
			last = notes[len(notes)-1]
		}
		clock.t = clock.t.Add(time.Minute)
		return recheck
	}
	for range 3 {
		step(true)
		step(false)
	}
	if got != "firing resolved firing resolved firing updated " {
		t.Fatalf("three cycles: %q", got)
	}
	if !last.Incident.Flapping || last.Change != "flapping: started 3 times in 10 min; resolves after 10 min without the problem" {
		t.Errorf("flapping update: %+v", last)
	}
	if n := tr.FlappingByRule()["pod-crashloop"]; n != 1 {
		t.Errorf("flapping gauge %d, want 1", n)
	}
	got = ""
	step(true) // back: the same incident, nothing said
	if recheck := step(false); recheck != 10*time.Minute {
		t.Errorf("recheck %s, want the quiet time", recheck)
	}
	clock.t = clock.t.Add(8 * time.Minute)
	step(false) // 9 minutes quiet
	if got != "" {
		t.Fatalf("while flapping: %q, want nothing", got)
	}
	step(false) // 10 minutes
	if got != "resolved " || last.Incident.Occurrence != 3 {
		t.Fatalf("after the quiet time: %q (occurrence %d), want resolved of occurrence 3", got, last.Incident.Occurrence)
	}
}

// TestSettledCrashLoopSkipsHoldDown: a member that was settling (its
// settle time is a hold-down already) resolves as soon as it has
// settled; one that just disappears waits out the hold-down.
func TestSettledCrashLoopSkipsHoldDown(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)}
	tr := NewTracker(Options{Now: clock.now, HoldDown: 30 * time.Second})
	tr.Reconcile("Pod/shop/web", []rules.Finding{podFinding("web", 1)})
	settling := podFinding("web", 1)
	settling.Sustaining, settling.Settling = true, true
	tr.Reconcile("Pod/shop/web", []rules.Finding{settling})
	clock.t = clock.t.Add(time.Minute)
	if notes, _ := tr.Reconcile("Pod/shop/web", nil); transitions(notes) != "resolved " {
		t.Errorf("settled: %q, want resolved at once", transitions(notes))
	}
	tr.Reconcile("Pod/shop/db", []rules.Finding{podFinding("db", 1)})
	notes, recheck := tr.Reconcile("Pod/shop/db", nil)
	if len(notes) != 0 || recheck != 30*time.Second {
		t.Errorf("gone without settling: %q, recheck %s; want the hold-down", transitions(notes), recheck)
	}
}

// TestDeletedObjectSkipsHoldDown: a pod that is gone resolves its own
// incident at once (it cannot come back: a replacement is a new
// incident); a workload's incident still waits for the replacement pod.
func TestDeletedObjectSkipsHoldDown(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)}
	tr := NewTracker(Options{Now: clock.now, HoldDown: 30 * time.Second})
	tr.Reconcile("Pod/shop/web", []rules.Finding{podFinding("web", 1)})
	if notes, _ := tr.ReconcileGone("Pod/shop/web"); transitions(notes) != "resolved " {
		t.Errorf("deleted pod: %q, want resolved at once", transitions(notes))
	}
	tr.Reconcile("Pod/shop/api-0", []rules.Finding{pacedGroupFinding("api-0", 0)})
	if notes, recheck := tr.ReconcileGone("Pod/shop/api-0"); len(notes) != 0 || recheck != 30*time.Second {
		t.Errorf("deleted pod of a workload incident: %q, recheck %s; want the hold-down", transitions(notes), recheck)
	}
}

// TestPacerStage: the stage alone, on a fake clock — an update inside the
// interval is held until the interval ends (and a gather time at least),
// one outside it goes at once; a second change while held merges; due and
// next see the hold; a dropped or restored hold is forgotten or known.
func TestPacerStage(t *testing.T) {
	now := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	p := newPacer()
	inc := &Incident{Fingerprint: "fp", LastNotified: now, updateEvery: 30 * time.Second}
	open := map[string]*Incident{"fp": inc}
	if sendNow, newly := p.hold(inc, now.Add(10*time.Second)); sendNow || !newly || !inc.HeldUntil.Equal(now.Add(30*time.Second)) {
		t.Fatalf("inside the interval: send now %v, newly held %v, until %s", sendNow, newly, inc.HeldUntil)
	}
	if sendNow, newly := p.hold(inc, now.Add(20*time.Second)); sendNow || newly {
		t.Errorf("a second change while held: send now %v, newly held %v (want merged)", sendNow, newly)
	}
	if next := p.next(open); !next.Equal(now.Add(30 * time.Second)) {
		t.Errorf("next %s", next)
	}
	if due := p.due(now.Add(29*time.Second), open); len(due) != 0 {
		t.Errorf("due early: %v", due)
	}
	if due := p.due(now.Add(30*time.Second), open); len(due) != 1 {
		t.Errorf("not due at the interval's end: %v", due)
	}
	p.drop(inc)
	if !inc.HeldUntil.IsZero() || !p.next(open).IsZero() {
		t.Error("a dropped hold is still known")
	}
	// Past the interval: held for the gather time only, then sent.
	quiet := &Incident{Fingerprint: "q", LastNotified: now, updateEvery: 30 * time.Second}
	if sendNow, _ := p.hold(quiet, now.Add(time.Minute)); sendNow || !quiet.HeldUntil.Equal(now.Add(time.Minute+gather)) {
		t.Errorf("past the interval: send now %v, held until %s (want the gather time)", sendNow, quiet.HeldUntil)
	}
	if sendNow, _ := p.hold(quiet, now.Add(time.Minute+gather)); !sendNow {
		t.Error("at its hold's end, a change was held again")
	}
	if sendNow, _ := p.hold(&Incident{Fingerprint: "n", LastNotified: now}, now); !sendNow {
		t.Error("an update of a rule without an interval was held")
	}
	restored := newPacer()
	inc.HeldUntil = now.Add(time.Minute)
	restored.restore(inc)
	if next := restored.next(open); !next.Equal(now.Add(time.Minute)) {
		t.Errorf("a restored hold: next %s", next)
	}
}
