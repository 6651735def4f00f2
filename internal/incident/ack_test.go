package incident

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/herald-k8s/herald/internal/rules"
)

// TestAcknowledgeOnceStopsRepeatsAndSurvivesRestore: the first press
// records who and when and makes one Acknowledged notification pending
// for every sink; the same press again, or another, changes nothing; the
// incident then sends no repeat, but still resolves; the ledger keeps
// the ack; a resolved incident cannot be acknowledged.
func TestAcknowledgeOnceStopsRepeatsAndSurvivesRestore(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)}
	tr := NewTracker(Options{Now: clock.now})
	f := podFinding("web", 3)
	f.Repeat, f.Sinks = time.Hour, []string{"slack", "pd"}
	fired := mustReconcile(tr, "Pod/shop/web", []rules.Finding{f})
	if transitions(fired) != "firing " {
		t.Fatalf("first: %q", transitions(fired))
	}
	id := fired[0].Incident.ID
	clock.t = clock.t.Add(3 * time.Minute)
	n, version, res := tr.Acks().Record(id, Ack{By: "slack:U1", Name: "ana", Key: "press-1"})
	if res != AckRecorded || n.Transition != Acknowledged || n.Seq != 2 || n.Incident.Ack == nil || n.Incident.Ack.Name != "ana" || !n.Incident.Ack.At.Equal(clock.t) {
		t.Fatalf("ack: %v %+v", res, n)
	}
	if version == 0 || version != tr.Version() {
		t.Errorf("version %d, tracker at %d", version, tr.Version())
	}
	undelivered := tr.Undelivered()
	if len(undelivered) != 2 || undelivered[1].Transition != Acknowledged || len(undelivered[1].Incident.Sinks) != 2 {
		t.Fatalf("pending: %+v", undelivered)
	}
	for _, key := range []string{"press-1", "press-2"} {
		if _, _, res := tr.Acks().Record(id, Ack{By: "slack:U2", Key: key}); res != AckAlready {
			t.Errorf("again (%s): %v, want AckAlready", key, res)
		}
	}
	clock.t = clock.t.Add(2 * time.Hour) // past the repeat interval
	if notes := mustReconcile(tr, "Pod/shop/web", []rules.Finding{f}); len(notes) != 0 {
		t.Errorf("an acknowledged incident repeated: %q", transitions(notes))
	}

	snap, _ := tr.Snapshot()
	data, _ := json.Marshal(snap)
	incs, _, err := decodeShard(string(data))
	if err != nil {
		t.Fatal(err)
	}
	restored := NewTracker(Options{Now: clock.now})
	restored.Restore(incs)
	if _, _, res := restored.Acks().Record(id, Ack{By: "slack:U3", Key: "press-1"}); res != AckAlready {
		t.Errorf("after a restart the press was done again: %v", res)
	}
	if notes := mustReconcile(restored, "Pod/shop/web", nil); transitions(notes) != "resolved " {
		t.Fatalf("resolve: %q", transitions(notes))
	}
	if _, _, res := restored.Acks().Record(id, Ack{By: "slack:U3"}); res != AckNotOpen {
		t.Errorf("resolved incident: %v, want AckNotOpen", res)
	}
	if _, _, res := restored.Acks().Record("nope-1", Ack{By: "slack:U3"}); res != AckNotOpen {
		t.Errorf("unknown incident: %v, want AckNotOpen", res)
	}
}

// TestUnacknowledgedRepeats is the control for the test above: the
// same incident, not acknowledged, repeats.
func TestUnacknowledgedRepeats(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)}
	tr := NewTracker(Options{Now: clock.now})
	f := podFinding("web", 3)
	f.Repeat = time.Hour
	mustReconcile(tr, "Pod/shop/web", []rules.Finding{f})
	clock.t = clock.t.Add(2 * time.Hour)
	if notes := mustReconcile(tr, "Pod/shop/web", []rules.Finding{f}); transitions(notes) != "repeat " {
		t.Errorf("%q, want a repeat", transitions(notes))
	}
}

// TestSavedWaitsForTheLedger: a waiter returns once Persist wrote the
// version it waits for, not before.
func TestSavedWaitsForTheLedger(t *testing.T) {
	tr := NewTracker(Options{})
	saved := NewSaved()
	f := podFinding("web", 3)
	mustReconcile(tr, "Pod/shop/web", []rules.Finding{f})
	early, cancel := context.WithCancel(context.Background())
	cancel()
	if err := saved.Wait(early, tr.Version()); err == nil {
		t.Fatal("Wait returned before any write")
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan error, 1)
	go func() {
		done <- Persist(ctx, tr, &MemoryStore{}, slog.New(slog.DiscardHandler), &LedgerMetrics{Saved: saved})
	}()
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	if err := saved.Wait(wctx, tr.Version()); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	stop()
	<-done
}
