package incident

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
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
