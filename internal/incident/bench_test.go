package incident

import (
	"fmt"
	"testing"
	"time"

	"github.com/herald-k8s/herald/internal/rules"
)

// BenchmarkReconcile is the ledger-side work of one reconcile: an object
// whose open incident has not changed (the common case: another status
// update of a crash-looping pod), and a crash that fires and then
// resolves.
func BenchmarkReconcile(b *testing.B) {
	clock := &fakeClock{t: time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)}
	tr := NewTracker(Options{Now: clock.now, Retention: time.Hour})
	for i := range 1000 { // a tracker with other incidents open
		tr.Reconcile(fmt.Sprintf("Pod/shop/other-%d", i), []rules.Finding{podFinding(fmt.Sprintf("other-%d", i), 1)})
	}
	open := []rules.Finding{podFinding("web", 3)}
	tr.Reconcile("Pod/shop/web", open)
	b.Run("unchanged", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if notes, _ := tr.Reconcile("Pod/shop/web", open); len(notes) != 0 {
				b.Fatalf("%d notifications for an unchanged incident", len(notes))
			}
		}
	})
	b.Run("fire+resolve", func(b *testing.B) {
		b.ReportAllocs()
		crash := []rules.Finding{podFinding("api", 1)}
		for b.Loop() {
			fired, _ := tr.Reconcile("Pod/shop/api", crash)
			resolved, _ := tr.Reconcile("Pod/shop/api", nil)
			if len(fired) != 1 || len(resolved) != 1 {
				b.Fatalf("%d + %d notifications, want 1 + 1", len(fired), len(resolved))
			}
		}
	})
}

// BenchmarkLedgerFlush is what the ledger writer spends each second under
// churn on a tracker of 1,000 open incidents and 5,000 resolved ones kept
// for the retention period (a minute of a storm at 100 crashes/s): one
// incident changed since the last flush, then the snapshot for the store
// and its encoding into shards (the API write itself is not in it).
func BenchmarkLedgerFlush(b *testing.B) {
	clock := &fakeClock{t: time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)}
	tr := NewTracker(Options{Now: clock.now, Retention: time.Hour})
	for i := range 1000 {
		tr.Reconcile(fmt.Sprintf("Pod/shop/other-%d", i), []rules.Finding{podFinding(fmt.Sprintf("other-%d", i), 1)})
	}
	for i := range 5000 {
		key := fmt.Sprintf("Pod/shop/gone-%d", i)
		fired, _ := tr.Reconcile(key, []rules.Finding{podFinding(fmt.Sprintf("gone-%d", i), 1)})
		resolved, _ := tr.Reconcile(key, nil)
		for _, n := range append(fired, resolved...) {
			for _, sink := range n.Incident.Sinks {
				tr.Delivered(n, sink)
			}
		}
	}
	store := NewConfigMapStore(nil, "default", "herald-ledger")
	crash := []rules.Finding{podFinding("api", 1)}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			tr.Reconcile("Pod/shop/api", crash)
		} else {
			tr.Reconcile("Pod/shop/api", nil)
		}
		incs, _ := tr.SharedSnapshot()
		shards, err := store.layout(incs)
		if err != nil {
			b.Fatal(err)
		}
		for _, name := range store.archive.unwritten() { // as Save does once written
			store.buildArchive(store.archive.shards[name])
			store.archive.written(name)
		}
		for name, sh := range shards {
			store.wrote(name, sh)
		}
	}
}
