package incident

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-k8s/herald/internal/kube"
	"github.com/herald-k8s/herald/internal/rules"
)

// TestWaitSurvivesRestore: a for: wait timed from first sight (the object
// records no start) is kept in the ledger; a tracker restored from it in
// the middle of the wait fires at the wait's original end, not a whole
// for: after it first sees the finding.
func TestWaitSurvivesRestore(t *testing.T) {
	clock := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	now := func() time.Time { return clock }
	pending := finding("u1", "", false, "0")
	pending.Reason, pending.For = "PodPending", 5*time.Minute

	before := NewTracker(Options{Now: now})
	if notes, _ := before.Reconcile("k", []rules.Finding{pending}); len(notes) != 0 {
		t.Fatalf("first sight: %v", notes)
	}
	store := &MemoryStore{}
	clock = clock.Add(3 * time.Minute)
	incs, _ := before.Snapshot()
	if err := store.Save(context.Background(), incs); err != nil {
		t.Fatal(err)
	}

	after := NewTracker(Options{Now: now})
	loaded, _ := store.Load(context.Background(), nil)
	after.Restore(loaded)
	if open := after.Open(); open != 0 {
		t.Fatalf("a wait was restored as %d open incidents", open)
	}
	notes, recheck := after.Reconcile("k", []rules.Finding{pending})
	if len(notes) != 0 || recheck != 2*time.Minute {
		t.Fatalf("3m into the wait, restored: %v, recheck %s; want nothing, recheck in 2m", notes, recheck)
	}
	clock = clock.Add(2 * time.Minute)
	notes, _ = after.Reconcile("k", []rules.Finding{pending})
	if len(notes) != 1 || notes[0].Transition != Firing {
		t.Fatalf("at the wait's end: %v, want firing", notes)
	}
	if notes[0].Incident.FirstSeen != clock {
		t.Errorf("the incident begins %s, want when it fired (%s)", notes[0].Incident.FirstSeen, clock)
	}
	if notes[0].Incident.Occurrence != 1 {
		t.Errorf("occurrence %d: a wait is not an occurrence", notes[0].Incident.Occurrence)
	}

	// Fired, the wait leaves the ledger; so does one whose finding went.
	gone := pending
	gone.Object.UID = "u2"
	after.Reconcile("k2", []rules.Finding{gone})
	after.Reconcile("k2", nil)
	incs, _ = after.Snapshot()
	for _, inc := range incs {
		if inc.Ended == EndedWaiting {
			t.Errorf("a wait that ended is still in the ledger: %s", inc.ID)
		}
	}
}

// TestWaitsTheLedgerKeepsAreBounded: past MaxPersistedWaits, the ledger
// keeps the waits that began first (they are due first).
func TestWaitsTheLedgerKeepsAreBounded(t *testing.T) {
	clock := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	tr := NewTracker(Options{Now: func() time.Time { return clock }})
	for i := range MaxPersistedWaits + 10 {
		f := finding(fmt.Sprint("u", i), "", false, "0")
		f.Reason, f.For, f.Object.Name = "PodPending", 15*time.Minute, fmt.Sprint("web-", i)
		tr.Reconcile(fmt.Sprint("Pod/shop/web-", i), []rules.Finding{f})
		clock = clock.Add(time.Second)
	}
	incs, _ := tr.Snapshot()
	waits := 0
	for _, inc := range incs {
		if inc.Ended == EndedWaiting {
			waits++
			if inc.Members[0] == fmt.Sprint("Pod/shop/web-", MaxPersistedWaits+9) {
				t.Errorf("the last wait begun is kept, an earlier one left out")
			}
		}
	}
	if waits != MaxPersistedWaits {
		t.Errorf("%d waits in the ledger, want %d", waits, MaxPersistedWaits)
	}
}

// ledgerWaits (TestConfigMapLedger/Waits): a wait goes through the
// ConfigMaps and comes back as a wait; once it has fired, the next save
// takes it out of the ledger (it is never archived, where a stale copy
// could outlive it).
func ledgerWaits(t *testing.T, typed *kube.Client) {
	ctx := context.Background()
	clock := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	tr := NewTracker(Options{Now: func() time.Time { return clock }})
	pending := finding("u1", "", false, "0")
	pending.Reason, pending.For = "PodPending", 5*time.Minute
	tr.Reconcile("k", []rules.Finding{pending})
	store := NewConfigMapStore(typed, "default", "waits")
	if _, _, err := save(ctx, tr, store); err != nil {
		t.Fatal(err)
	}
	waitsIn := func() (waits []Incident, open int) {
		t.Helper()
		loaded, err := NewConfigMapStore(typed, "default", "waits").Load(ctx, func(msg string, args ...any) { t.Errorf("warning: %s %v", msg, args) })
		if err != nil {
			t.Fatal(err)
		}
		for _, inc := range loaded {
			switch {
			case inc.Ended == EndedWaiting:
				waits = append(waits, inc)
			case inc.ResolvedAt.IsZero():
				open++
			}
		}
		return waits, open
	}
	waits, _ := waitsIn()
	if len(waits) != 1 || !waits[0].FirstSeen.Equal(clock) || waits[0].Members[0] != "k" {
		t.Fatalf("the ledger holds waits %+v, want one for k since %s", waits, clock)
	}
	list, err := typed.ListConfigMaps(ctx, "default", metav1.ListOptions{LabelSelector: store.selector()})
	if err != nil {
		t.Fatal(err)
	}
	for _, cm := range list.Items {
		if _, archived := archiveShardNumber("waits", cm.Name); archived && strings.Contains(cm.Data[dataKey], "/waiting/") {
			t.Errorf("the wait is in archive shard %s, where a stale copy would outlive it", cm.Name)
		}
	}
	// A herald that did not know waits archived a wait as history; its
	// copy outlives the wait, and must not bring it back.
	stale := Incident{ID: "fp-old/waiting/k-old", Fingerprint: "fp-old", Members: []string{"k-old"}, FirstSeen: clock.Add(-time.Hour),
		ResolvedAt: clock.Add(-time.Hour), Ended: EndedWaiting}
	data, _ := json.Marshal([]Incident{stale})
	labels := map[string]string{}
	for _, kv := range strings.Split(store.selector(), ",") {
		k, v, _ := strings.Cut(kv, "=")
		labels[k] = v
	}
	if _, err := typed.CreateConfigMap(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "waits-a-7", Namespace: "default", Labels: labels,
		Annotations: map[string]string{generationAnnotation: "99"}}, Data: map[string]string{dataKey: string(data)}}); err != nil {
		t.Fatal(err)
	}
	if waits, _ := waitsIn(); len(waits) != 1 || waits[0].Members[0] != "k" {
		t.Fatalf("an archived wait came back: %+v", waits)
	}
	clock = clock.Add(5 * time.Minute)
	if notes, _ := tr.Reconcile("k", []rules.Finding{pending}); len(notes) != 1 {
		t.Fatalf("the wait did not fire: %v", notes)
	}
	if _, _, err := save(ctx, tr, store); err != nil {
		t.Fatal(err)
	}
	if waits, open := waitsIn(); len(waits) != 0 || open != 1 {
		t.Fatalf("after it fired the ledger holds waits %+v and %d open incidents, want none and 1", waits, open)
	}
}

// TestWaitsStage: the stage alone, on a fake clock — a wait begins at
// first sight and counts down; the object's own record of the start wins;
// a finding that goes ends its wait; a restored record resumes it.
func TestWaitsStage(t *testing.T) {
	now := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	f := finding("u1", "", false, "0")
	f.For = 5 * time.Minute
	w := newWaits()
	left, began := w.left("k", "fp", f, now)
	if left != 5*time.Minute || began == nil || !began.FirstSeen.Equal(now) || began.Ended != EndedWaiting {
		t.Fatalf("first sight: %s left, record %+v", left, began)
	}
	if left, began := w.left("k", "fp", f, now.Add(2*time.Minute)); left != 3*time.Minute || began != nil {
		t.Fatalf("2m in: %s left, a new record %v", left, began)
	}
	since := f
	since.Since = now.Add(-time.Hour)
	if left, _ := w.left("k2", "fp", since, now); left != 0 {
		t.Errorf("a problem the object says began an hour ago: %s left", left)
	}
	if len(w.records()) != 1 {
		t.Errorf("a wait timed by the object is kept too: %d records", len(w.records()))
	}
	if w.keepOnly("k", map[string]bool{"fp": true}) || !w.keepOnly("k", nil) || len(w.records()) != 0 {
		t.Errorf("a finding that went did not end its wait alone")
	}
	restored := newWaits()
	if !restored.restore(began) {
		t.Fatal("a wait record was not taken back")
	}
	if left, began := restored.left("k", "fp", f, now.Add(4*time.Minute)); left != time.Minute || began != nil {
		t.Errorf("restored, 4m in: %s left (want 1m), a new record %v", left, began)
	}
	if restored.restore(&Incident{ID: "x", Fingerprint: "fp"}) {
		t.Error("an incident was taken for a wait")
	}
	again := f
	again.Object.UID = "u1-made-again"
	if left, began := restored.left("k", "fp", again, now.Add(4*time.Minute)); left != 5*time.Minute || began == nil {
		t.Errorf("another object of the same name: %s left (want a wait of its own, 5m)", left)
	}
}

// TestWaitsOfGoneObjectsAndRemovedRulesEnd: the objects of restored waits
// are reconciled at start (MemberKeys), so a wait for an object deleted
// while herald was down ends; a reload that removes a rule ends its waits.
func TestWaitsOfGoneObjectsAndRemovedRulesEnd(t *testing.T) {
	clock := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	tr := NewTracker(Options{Now: func() time.Time { return clock }})
	f := finding("u1", "", false, "0")
	f.For = 5 * time.Minute
	tr.Reconcile("Pod/shop/gone", []rules.Finding{f})
	other := finding("u2", "", false, "0")
	other.For, other.Rule, other.Object.Name = 5*time.Minute, "pod-pending", "kept"
	tr.Reconcile("Pod/shop/kept", []rules.Finding{other})
	if keys := tr.MemberKeys(); !slices.Equal(keys, []string{"Pod/shop/gone", "Pod/shop/kept"}) {
		t.Fatalf("MemberKeys %v: the objects of waits are not reconciled at start", keys)
	}
	tr.ReconcileGone("Pod/shop/gone")
	tr.ResolveRules(map[string]bool{"pod-pending": true}, clock)
	incs, _ := tr.Snapshot()
	if len(incs) != 0 {
		t.Errorf("waits left after their object went and their rule was removed: %+v", incs)
	}
}
