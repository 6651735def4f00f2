package incident

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/herald-k8s/herald/internal/rules"
)

// untilMuter mutes every incident until a fixed time (zero: never).
type untilMuter struct{ until time.Time }

func (m *untilMuter) Mute(_ *Incident, _ Open, now time.Time) (Mute, bool) {
	if now.Before(m.until) {
		return Mute{By: "silence shop/test", Until: m.until}, true
	}
	return Mute{}, false
}

// TestMutedIncidentFiresWhenTheSilenceEnds: a crash loop opened under a
// silence sends nothing while it lasts, then its firing once, with what
// it is at the end (not what it was when it opened).
func TestMutedIncidentFiresWhenTheSilenceEnds(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)}
	muter := &untilMuter{until: clock.t.Add(time.Hour)}
	var mutedCount int
	tr := NewTracker(Options{Now: clock.now, HoldDown: time.Minute, Muter: muter,
		Muted: func(*Incident, Transition, Mute) { mutedCount++ }})
	var sent []Notification
	for restarts := 1; restarts <= 20; restarts++ {
		notes, _ := tr.Reconcile("Pod/shop/api-0", []rules.Finding{podFinding("api-0", restarts)})
		sent = append(sent, notes...)
		sent = append(sent, tr.ReleaseMuted(clock.t)...)
		clock.t = clock.t.Add(time.Minute)
	}
	if len(sent) != 0 {
		t.Fatalf("under the silence: %q, want nothing", transitions(sent))
	}
	if mutedCount == 0 || tr.MutedByRule()[podFinding("api-0", 1).Rule] != 1 {
		t.Errorf("muted notifications counted %d, muted incidents %v", mutedCount, tr.MutedByRule())
	}
	clock.t = muter.until
	notes := tr.ReleaseMuted(clock.t)
	if len(notes) != 1 || notes[0].Transition != Firing || notes[0].Seq != 1 || notes[0].Incident.Facts["restartCount"] != "20" {
		t.Fatalf("when the silence ended: %q (%v), want one firing with restarts 20", transitions(notes), notes)
	}
	if notes[0].Incident.MutedBy != "" || len(tr.MutedByRule()) != 0 {
		t.Errorf("still muted after the end: %q", notes[0].Incident.MutedBy)
	}
	if notes := tr.ReleaseMuted(clock.t.Add(time.Hour)); len(notes) != 0 {
		t.Errorf("released twice: %q", transitions(notes))
	}
}

// TestMutedIncidentThatRecoversSendsNothing: never announced, so its
// resolution has nothing to take back; and nothing is owed afterwards.
func TestMutedIncidentThatRecoversSendsNothing(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)}
	muter := &untilMuter{until: clock.t.Add(time.Hour)}
	tr := NewTracker(Options{Now: clock.now, Muter: muter})
	var sent []Notification
	notes, _ := tr.Reconcile("Pod/shop/api-0", []rules.Finding{podFinding("api-0", 3)})
	sent = append(sent, notes...)
	clock.t = clock.t.Add(time.Minute)
	notes, _ = tr.Reconcile("Pod/shop/api-0", nil)
	sent = append(sent, notes...)
	clock.t = muter.until.Add(time.Second)
	sent = append(sent, tr.ReleaseMuted(clock.t)...)
	if len(sent) != 0 || tr.Open() != 0 {
		t.Fatalf("sent %q, %d open, want nothing sent and the incident closed", transitions(sent), tr.Open())
	}
}

// TestAnnouncedIncidentResolvesUnderSilence: a silence put on a problem
// already announced mutes its updates, but its resolved still goes out,
// so no message is left saying it is firing.
func TestAnnouncedIncidentResolvesUnderSilence(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)}
	muter := &untilMuter{}
	tr := NewTracker(Options{Now: clock.now, Muter: muter})
	first, _ := tr.Reconcile("Pod/shop/api-0", []rules.Finding{podFinding("api-0", 1)})
	muter.until = clock.t.Add(time.Hour)
	more, _ := tr.Reconcile("Pod/shop/api-0", []rules.Finding{podFinding("api-0", 11)})
	gone, _ := tr.Reconcile("Pod/shop/api-0", nil)
	if got := transitions(first) + "|" + transitions(more) + "|" + transitions(gone); got != "firing ||resolved " {
		t.Fatalf("got %q, want the firing, no update under the silence, then the resolved", got)
	}
}

// TestMuteSurvivesARestart: the ledger's copy keeps the mute, so a new
// tracker neither sends the firing early nor forgets it at the end.
func TestMuteSurvivesARestart(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)}
	muter := &untilMuter{until: clock.t.Add(time.Hour)}
	tr := NewTracker(Options{Now: clock.now, Muter: muter})
	if notes, _ := tr.Reconcile("Pod/shop/api-0", []rules.Finding{podFinding("api-0", 1)}); len(notes) != 0 {
		t.Fatalf("under the silence: %q", transitions(notes))
	}
	saved, _ := tr.Snapshot()
	if len(saved) != 1 || saved[0].MutedBy != "silence shop/test" || !saved[0].MutedUntil.Equal(muter.until) {
		t.Fatalf("ledger copy: %+v, want the mute recorded", saved)
	}
	next := NewTracker(Options{Now: clock.now, Muter: muter})
	next.Restore(saved)
	if notes, _ := next.Reconcile("Pod/shop/api-0", []rules.Finding{podFinding("api-0", 2)}); len(notes) != 0 {
		t.Fatalf("after the restart, under the silence: %q", transitions(notes))
	}
	if notes := next.ReleaseMuted(clock.t.Add(time.Minute)); len(notes) != 0 {
		t.Fatalf("released before the end: %q", transitions(notes))
	}
	if notes := next.ReleaseMuted(muter.until); transitions(notes) != "firing " {
		t.Fatalf("at the end after a restart: %q, want the firing", transitions(notes))
	}
}

// TestSilenceCoversAnnouncedIncident: when the silences change, an
// announced incident a silence now covers gets one Silenced notification
// saying until when; one never announced or already muted gets none.
func TestSilenceCoversAnnouncedIncident(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)}
	muter := &untilMuter{}
	version := uint64(1)
	tr := NewTracker(Options{Now: clock.now, Muter: muter, MuteVersion: func(time.Time) uint64 { return version }})
	first, _ := tr.Reconcile("Pod/shop/api-0", []rules.Finding{podFinding("api-0", 1)})
	if got := transitions(first) + transitions(tr.ReleaseMuted(clock.t)); got != "firing " {
		t.Fatalf("before the silence: %q", got)
	}
	muter.until, version = clock.t.Add(time.Hour), 2
	notes := tr.ReleaseMuted(clock.t)
	if len(notes) != 1 || notes[0].Transition != Silenced || notes[0].Change != "silenced until 2026-11-22 01:00 UTC (silence shop/test)" {
		t.Fatalf("when the silence came: %v", notes)
	}
	version = 3
	if notes := tr.ReleaseMuted(clock.t); len(notes) != 0 {
		t.Errorf("said twice: %q", transitions(notes))
	}
	if notes, _ := tr.Reconcile("Pod/shop/api-0", []rules.Finding{podFinding("api-0", 30)}); len(notes) != 0 {
		t.Errorf("under the silence: %q", transitions(notes))
	}
	if notes := tr.ReleaseMuted(muter.until); transitions(notes) != "updated " || notes[0].Change != "restarts 1 → 30" || notes[0].Unmuted != "silence shop/test" {
		t.Errorf("at the end: %v, want one update of what changed, saying the silence ended", notes)
	}
}

// TestSilenceEndSaidEvenWithoutChange: the channel that was told an
// incident is silenced is told when the silence ends, though nothing
// else changed, and a restart before delivery keeps saying so.
func TestSilenceEndSaidEvenWithoutChange(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)}
	muter := &untilMuter{}
	version := uint64(1)
	tr := NewTracker(Options{Now: clock.now, Muter: muter, MuteVersion: func(time.Time) uint64 { return version }})
	tr.Reconcile("Pod/shop/api-0", []rules.Finding{podFinding("api-0", 1)})
	muter.until, version = clock.t.Add(time.Hour), 2
	if got := transitions(tr.ReleaseMuted(clock.t)); got != "silenced " {
		t.Fatalf("when the silence came: %q", got)
	}
	notes := tr.ReleaseMuted(muter.until)
	if len(notes) != 1 || notes[0].Transition != Updated || notes[0].Change != "" || notes[0].Unmuted != "silence shop/test" {
		t.Fatalf("at the end: %+v, want one update saying the silence ended", notes)
	}
	var found bool
	for _, n := range tr.Undelivered() {
		if n.Seq == notes[0].Seq && n.Unmuted == "silence shop/test" {
			found = true
		}
	}
	if !found {
		t.Errorf("the undelivered update forgot what it says: %+v", tr.Undelivered())
	}
}

// countingMuter mutes until a time and counts how often it is asked.
type countingMuter struct {
	untilMuter
	asked int
}

func (m *countingMuter) Mute(inc *Incident, open Open, now time.Time) (Mute, bool) {
	m.asked++
	return m.untilMuter.Mute(inc, open, now)
}

// TestReleaseMutedAsksOnlyWhatMayHaveEnded: asking the Muter costs cache
// lookups, so the periodic release asks about a muted incident only when
// its mute may have ended (its time passed), and about all of them every
// muteRecheck; the end is still acted on at the first tick after it.
func TestReleaseMutedAsksOnlyWhatMayHaveEnded(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)}
	muter := &countingMuter{untilMuter: untilMuter{until: clock.t.Add(time.Minute)}}
	tr := NewTracker(Options{Now: clock.now, Muter: muter})
	for i := range 100 {
		tr.Reconcile(fmt.Sprintf("Pod/shop/api-%d", i), []rules.Finding{podFinding(fmt.Sprintf("api-%d", i), 1)})
	}
	tr.ReleaseMuted(clock.t) // the first pass asks about all
	muter.asked = 0
	for range 19 { // 9.5 s of ticks
		clock.t = clock.t.Add(500 * time.Millisecond)
		if notes := tr.ReleaseMuted(clock.t); len(notes) != 0 {
			t.Fatalf("released early: %q", transitions(notes))
		}
	}
	if muter.asked != 0 {
		t.Errorf("asked %d times within %s of the last full pass, want 0", muter.asked, muteRecheck)
	}
	clock.t = clock.t.Add(500 * time.Millisecond)
	tr.ReleaseMuted(clock.t)
	if muter.asked != 100 {
		t.Errorf("asked %d times at the %s recheck, want 100", muter.asked, muteRecheck)
	}
	clock.t = muter.until
	if notes := tr.ReleaseMuted(clock.t); len(notes) != 100 {
		t.Errorf("at the mute's end: %d firings, want 100", len(notes))
	}
}

// indexCheckingMuter compares, at every question, the tracker's index of
// open incidents by reason with a scan of all of them.
type indexCheckingMuter struct {
	t       *testing.T
	reasons []string
	asked   int
	seen    map[string]int // reason → most open incidents seen with it
}

func (m *indexCheckingMuter) Mute(_ *Incident, open Open, _ time.Time) (Mute, bool) {
	m.asked++
	for _, reason := range m.reasons {
		var scanned []string
		for inc := range open.All() {
			if inc.Reason == reason {
				scanned = append(scanned, inc.ID)
			}
		}
		var indexed []string
		for inc := range open.WithReason(reason) {
			indexed = append(indexed, inc.ID)
		}
		slices.Sort(scanned)
		slices.Sort(indexed)
		if !slices.Equal(scanned, indexed) {
			m.t.Errorf("open with reason %s: index %v, scan %v", reason, indexed, scanned)
		}
		m.seen[reason] = max(m.seen[reason], len(indexed))
	}
	return Mute{}, false
}

// TestOpenIncidentsByReason: what a Muter gets by reason (the index
// inhibition uses) is what a scan of every open incident finds, through
// firing, resolving, dropping a rule's incidents and restoring.
func TestOpenIncidentsByReason(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)}
	muter := &indexCheckingMuter{t: t, reasons: []string{"CrashLoopBackOff", "OOMKilled"}, seen: map[string]int{}}
	tr := NewTracker(Options{Now: clock.now, Muter: muter})
	oom := func(pod string) rules.Finding {
		f := podFinding(pod, 1)
		f.Rule, f.Reason = "pod-oom", "OOMKilled"
		return f
	}
	for i := range 6 {
		pod := fmt.Sprintf("api-%d", i)
		findings := []rules.Finding{podFinding(pod, 1)}
		if i%2 == 0 {
			findings = append(findings, oom(pod))
		}
		tr.Reconcile("Pod/shop/"+pod, findings)
	}
	if muter.seen["CrashLoopBackOff"] < 5 || muter.seen["OOMKilled"] < 2 {
		t.Fatalf("the muter saw %v open incidents by reason, want 5+ crash loops and 2+ OOM kills", muter.seen)
	}
	clock.t = clock.t.Add(time.Hour)
	for i := range 3 { // three pods recover: their incidents resolve
		tr.Reconcile(fmt.Sprintf("Pod/shop/api-%d", i), nil)
	}
	asked := muter.asked
	tr.Reconcile("Pod/shop/api-9", []rules.Finding{podFinding("api-9", 1)})
	if muter.asked == asked {
		t.Fatal("the muter was not asked about a new incident")
	}
	tr.ResolveRules(map[string]bool{"pod-oom": true}, clock.now())
	saved := slices.Collect(maps.Values(tr.open))
	restored := NewTracker(Options{Now: clock.now, Muter: muter})
	var incs []Incident
	for _, inc := range saved {
		incs = append(incs, *inc)
	}
	restored.Restore(incs)
	asked = muter.asked
	restored.Reconcile("Pod/shop/api-10", []rules.Finding{podFinding("api-10", 1), oom("api-10")})
	if muter.asked == asked {
		t.Fatal("the restored tracker's muter was not asked")
	}
}

// TestFirstWordAfterAMuteIsTheFiring: a grouped incident muted from its
// first sight gains a pod just before the silence ends; the update that
// holds falls due after it. Never announced, the incident's first
// notification is its firing, whichever of the held update and the
// silence's end is handled first (make demo once showed "UPDATED 0 → 2
// of 2 pods" as a first message).
func TestFirstWordAfterAMuteIsTheFiring(t *testing.T) {
	for _, heldFirst := range []bool{true, false} {
		clock := &fakeClock{t: time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)}
		muter := &untilMuter{until: clock.t.Add(time.Minute)}
		tr := NewTracker(Options{Now: clock.now, HoldDown: time.Minute, Muter: muter})
		a, b := groupedFinding("api-0", 2), groupedFinding("api-1", 2)
		a.UpdateInterval, b.UpdateInterval = 10*time.Second, 10*time.Second
		var sent []Notification
		notes, _ := tr.Reconcile("Pod/shop/api-0", []rules.Finding{a})
		sent = append(sent, notes...)
		clock.t = muter.until.Add(-time.Second)
		notes, _ = tr.Reconcile("Pod/shop/api-1", []rules.Finding{b})
		sent = append(sent, notes...)
		if len(sent) != 0 {
			t.Fatalf("under the silence: %q", transitions(sent))
		}
		clock.t = muter.until.Add(15 * time.Second)
		if heldFirst {
			sent = append(sent, tr.ReleaseHeld(clock.t)...)
			sent = append(sent, tr.ReleaseMuted(clock.t)...)
		} else {
			sent = append(sent, tr.ReleaseMuted(clock.t)...)
			sent = append(sent, tr.ReleaseHeld(clock.t)...)
		}
		if len(sent) != 1 || sent[0].Transition != Firing || sent[0].Seq != 1 || sent[0].Incident.MemberCount != 2 {
			t.Errorf("held update first %v: %q, want one firing of 2 pods", heldFirst, transitions(sent))
		}
	}
}
