package incident

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herald-k8s/herald/internal/rules"
)

// TestSnapshotOrderKeepsIDOrder: whatever comes and goes between
// snapshots, each snapshot lists every incident present once, by ID, as
// a full sort would.
func TestSnapshotOrderKeepsIDOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var o snapshotOrder
	present := map[string]*Incident{}
	next := 0
	for call := range 300 {
		// Some go, some come (a burst now and then), some come back
		// as the same incident.
		for id := range present {
			if rng.IntN(10) == 0 {
				delete(present, id)
			}
		}
		adds := rng.IntN(5)
		if call%50 == 0 {
			adds = 200
		}
		for range adds {
			next++
			id := fmt.Sprintf("%x-%d", rng.Uint32(), next)
			present[id] = &Incident{ID: id}
		}
		all := make([]*Incident, 0, len(present))
		for _, inc := range present {
			all = append(all, inc)
		}
		rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
		got := o.sorted(all)
		want := slices.Clone(all)
		slices.SortFunc(want, func(a, b *Incident) int { return strings.Compare(a.ID, b.ID) })
		if !slices.Equal(got, want) {
			t.Fatalf("snapshot %d: %d incidents out of order or missing (got %d, want %d)", call, len(present), len(got), len(want))
		}
	}
}

// TestRestoredTrackerSnapshotsEveryIncident: a tracker restored from
// another tracker's snapshot in the same process (no JSON between them)
// lists every incident in its first snapshot, whatever order marks the
// copies carry from the tracker that made them.
func TestRestoredTrackerSnapshotsEveryIncident(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)}
	first := NewTracker(Options{Now: clock.now, Retention: time.Hour})
	for i := range 20 {
		first.Reconcile(fmt.Sprintf("Pod/shop/web-%d", i), []rules.Finding{podFinding(fmt.Sprintf("web-%d", i), 1)})
	}
	first.SharedSnapshot() // marks its incidents with its own order
	saved, _ := first.Snapshot()
	next := NewTracker(Options{Now: clock.now, Retention: time.Hour})
	next.Restore(saved)
	got, _ := next.SharedSnapshot()
	if len(got) != len(saved) {
		t.Fatalf("the restored tracker's first snapshot lists %d of %d incidents", len(got), len(saved))
	}
}

// TestSnapshotOrderLetsGoneIncidentsGo: once incidents leave the ledger,
// neither of the order's slices still points at them (the collector can
// free them), whether or not new ones came in the same snapshot.
func TestSnapshotOrderLetsGoneIncidentsGo(t *testing.T) {
	var o snapshotOrder
	var all []*Incident
	for i := range 100 {
		all = append(all, &Incident{ID: fmt.Sprintf("inc-%03d", i)})
	}
	o.sorted(all)
	o.sorted(all)
	for _, next := range [][]*Incident{append(all[:40:40], &Incident{ID: "inc-new"}), all[:10]} {
		got := o.sorted(next)
		for _, s := range [][]*Incident{o.last[len(got):cap(o.last)], o.spare[:cap(o.spare)]} {
			for _, inc := range s {
				if inc != nil {
					t.Fatalf("%s is gone from the ledger, but the snapshot order still holds it", inc.ID)
				}
			}
		}
	}
}
