package incident

import (
	"context"
	"fmt"
	"math/rand/v2"
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
	io := nowhere(nil)
	crash := []rules.Finding{podFinding("api", 1)}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			tr.Reconcile("Pod/shop/api", crash)
		} else {
			tr.Reconcile("Pod/shop/api", nil)
		}
		incs, _ := tr.SharedSnapshot()
		if err := store.save(context.Background(), incs, io); err != nil {
			b.Fatal(err)
		}
	}
}

// nowhere is a save's writes and deletes without an API server: the
// bytes written are added to sent.
func nowhere(sent *int) shardIO {
	return shardIO{
		put: func(_ context.Context, _, data string) error {
			if sent != nil {
				*sent += len(data)
			}
			return nil
		},
		del: func(context.Context, string, string) error { return nil },
	}
}

// BenchmarkLedgerStorm is the ledger's writes in a storm over a large
// ledger: 20,000 incidents open, and between two writes the 50 of them
// whose deliveries the ledger lag gate lets go unrecorded (its default)
// change, spread at random. It reports the bytes a save sends (the
// shards that changed) and how many shards there are: the cost of a
// save grows with the shards a storm touches, not with the incidents
// that changed.
func BenchmarkLedgerStorm(b *testing.B) {
	const open, changed = 20000, 50
	clock := &fakeClock{t: time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)}
	tr := NewTracker(Options{Now: clock.now, Retention: time.Hour})
	restarts := make([]int, open)
	for i := range open {
		restarts[i] = 1
		tr.Reconcile(fmt.Sprintf("Pod/shop/p-%d", i), []rules.Finding{podFinding(fmt.Sprintf("p-%d", i), 1)})
	}
	store := NewConfigMapStore(nil, "default", "herald-ledger")
	var sent int
	io := nowhere(&sent)
	save := func() {
		incs, _ := tr.SharedSnapshot()
		if err := store.save(context.Background(), incs, io); err != nil {
			b.Fatal(err)
		}
	}
	save()
	sent = 0
	rng := rand.New(rand.NewPCG(1, 2))
	b.ReportAllocs()
	for b.Loop() {
		for range changed {
			i := rng.IntN(open)
			restarts[i] += 5 // a step: the incident's facts change
			tr.Reconcile(fmt.Sprintf("Pod/shop/p-%d", i), []rules.Finding{podFinding(fmt.Sprintf("p-%d", i), restarts[i])})
		}
		save()
	}
	b.ReportMetric(float64(sent)/float64(b.N), "sent-B/save")
	b.ReportMetric(float64(len(store.written)), "shards")
}

// BenchmarkLedgerChurn is the ledger's writes under the churn
// herald-bench makes: three saves a second (the ledger lag gate's pace
// at 100 notifications a second), and between two of them 16 crashes
// fire and the 16 of the save before resolve, their deliveries done;
// resolved incidents are kept a minute. Few incidents are open: what a
// save sends is the journal's and the archive's filling shards. It
// reports the bytes a save sends, measured once the archive is as large
// as the retention keeps it.
func BenchmarkLedgerChurn(b *testing.B) {
	const perSave = 16
	clock := &fakeClock{t: time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)}
	tr := NewTracker(Options{Now: clock.now, Retention: time.Minute})
	store := NewConfigMapStore(nil, "default", "herald-ledger")
	var sent int
	io := nowhere(&sent)
	next := 0
	deliver := func(notes []Notification) {
		for _, n := range notes {
			for _, sink := range n.Incident.Sinks {
				tr.Delivered(n, sink)
			}
		}
	}
	save := func() {
		for i := next - perSave; i < next; i++ { // the last save's crashes recover
			if i >= 0 {
				resolved, _ := tr.Reconcile(fmt.Sprintf("Pod/shop/c-%d", i), nil)
				deliver(resolved)
			}
		}
		for range perSave {
			fired, _ := tr.Reconcile(fmt.Sprintf("Pod/shop/c-%d", next), []rules.Finding{podFinding(fmt.Sprintf("c-%d", next), 1)})
			deliver(fired)
			next++
		}
		clock.t = clock.t.Add(time.Second / 3)
		incs, _ := tr.SharedSnapshot()
		if err := store.save(context.Background(), incs, io); err != nil {
			b.Fatal(err)
		}
	}
	for range 400 { // past the retention: the archive stops growing
		save()
	}
	sent = 0
	b.ReportAllocs()
	for b.Loop() {
		save()
	}
	b.ReportMetric(float64(sent)/float64(b.N), "sent-B/save")
	sz := store.sizes()
	b.ReportMetric(float64(sz.Journal.Shards+sz.Archive.Shards), "fill-shards")
}
