package incident

import (
	"context"
	"testing"
	"time"
)

// Where the archive's and the journal's filling shards are sealed
// (archive.go: sealSize), without an API server: a save's writes are
// recorded.

// TestSealSize: a filling shard is sealed at a 32nd of what its kind
// holds, never under 16 KiB (a shard per few saves) nor over 128 KiB
// (what a save rewrites at most).
func TestSealSize(t *testing.T) {
	for _, c := range []struct{ holding, want int }{
		{0, 16 << 10}, {100 << 10, 16 << 10}, {1 << 20, 32 << 10}, {4 << 20, 128 << 10}, {100 << 20, 128 << 10},
	} {
		if got := sealSize(c.holding); got != c.want {
			t.Errorf("sealSize(%d) = %d, want %d", c.holding, got, c.want)
		}
	}
}

// recorded is a save's writes, by shard name: how many and their bytes.
type recorded struct{ puts, bytes map[string]int }

func recording() (*recorded, shardIO) {
	r := &recorded{puts: map[string]int{}, bytes: map[string]int{}}
	return r, shardIO{
		put: func(_ context.Context, name, data string) error {
			r.puts[name]++
			r.bytes[name] = len(data)
			return nil
		},
		del: func(context.Context, string, string) error { return nil },
	}
}

// of counts the shards of kind ("a", "j") written, and gives the
// largest's length.
func (r *recorded) of(ledger, kind string) (n, most int) { return ofKind(ledger, kind, r.bytes) }

func resolvedIncidents(n int) []Incident {
	incs := realisticIncidents(n)
	for i := range incs {
		incs[i].ResolvedAt = time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
	}
	return incs
}

// TestArchiveSealedForWhatItWillHold: a save that archives many
// incidents into an empty archive seals its shards at a 32nd of what
// the archive holds after it, not at the 16 KiB of an empty archive.
func TestArchiveSealedForWhatItWillHold(t *testing.T) {
	store := NewConfigMapStore(nil, "default", "burst")
	incs := resolvedIncidents(6000) // about 4 MB
	rec, io := recording()
	if err := store.save(context.Background(), sharedOf(incs), io); err != nil {
		t.Fatal(err)
	}
	if n, most := rec.of("burst", "a"); n > 34 || most < 64<<10 {
		t.Errorf("6,000 resolved incidents archived in %d shards of at most %d bytes: want about 32", n, most)
	}
}

// TestTombstonesSealedForWhatLeaves: a storm's incidents expiring
// together leave their tombstones in shards sealed to fit them, not in
// the 16 KiB shards of a journal of few open incidents.
func TestTombstonesSealedForWhatLeaves(t *testing.T) {
	store := NewConfigMapStore(nil, "default", "expiry")
	const open = 100
	incs := append(realisticIncidents(open), resolvedIncidents(20000 + open)[open:]...)
	_, io := recording()
	if err := store.save(context.Background(), sharedOf(incs), io); err != nil {
		t.Fatal(err)
	}
	// A change journaled: the journal's shards are sealed at 16 KiB.
	incs[5].Facts = map[string]string{"restartCount": "9"}
	incs[5].rev++
	folds := store.folds
	if err := store.save(context.Background(), sharedOf(incs), io); err != nil || store.folds != folds {
		t.Fatalf("a change: %v, folded: %v; want it journaled (the test does not test what it says)", err, store.folds != folds)
	}
	rec, io := recording()
	if err := store.save(context.Background(), sharedOf(incs[:open]), io); err != nil { // the 20,000 expire
		t.Fatal(err)
	}
	total := 0
	for name, size := range rec.bytes {
		if _, ok := fillAndSealNumber("expiry", "j", name); ok {
			total += size
		}
	}
	// A 32nd of them each, at most 128 KiB: 47 shards of 6 MB.
	if n, most := rec.of("expiry", "j"); n == 0 || n > max(34, total/(128<<10)+2) {
		t.Errorf("20,000 tombstones (%d bytes) written in %d journal shards of at most %d bytes: want about 32, or 128 KiB each", total, n, most)
	}
}

// TestSealedShardNotRewritten: a filling archive shard sealed because
// the next incident does not fit, when it was already written as it is,
// is never written again — not even when one of its incidents opens
// again (its copy there goes stale, as in any sealed shard).
func TestSealedShardNotRewritten(t *testing.T) {
	store := NewConfigMapStore(nil, "default", "sealed")
	incs := resolvedIncidents(40)
	// k incidents fill sealed-a-0 to within one of its 16 KiB seal (the
	// incidents are all of one size).
	one, err := encodeForLedger(&incs[0])
	if err != nil {
		t.Fatal(err)
	}
	k := minSealBytes / (len(one) + 1)
	_, io := recording()
	if err := store.save(context.Background(), sharedOf(incs[:k]), io); err != nil {
		t.Fatal(err)
	}
	// One more does not fit: sealed-a-0 is sealed as it was written.
	if err := store.save(context.Background(), sharedOf(incs[:k+1]), io); err != nil {
		t.Fatal(err)
	}
	if sh := store.archive.shards["sealed-a-0"]; sh == nil || !sh.sealed || len(store.archive.shards) != 2 {
		t.Fatalf("archive shards %v: want sealed-a-0 sealed and another filling (the test does not test what it says)", store.archive.shards)
	}
	// One of its incidents opens again.
	incs[3].ResolvedAt = time.Time{}
	incs[3].rev++
	rec, io := recording()
	if err := store.save(context.Background(), sharedOf(incs[:k+1]), io); err != nil {
		t.Fatal(err)
	}
	if rec.puts["sealed-a-0"] > 0 {
		t.Error("the sealed shard sealed-a-0 was written again")
	}
}

// TestJournalSealAfterFold: a fold sets the journal's seal for what the
// ledger holds, so that the tombstones of the next save are not sealed
// at the last journaling save's size (or at 128 KiB after a load).
func TestJournalSealAfterFold(t *testing.T) {
	store := NewConfigMapStore(nil, "default", "afterfold")
	incs := realisticIncidents(100) // about 70 KB open: sealed at 16 KiB
	_, io := recording()
	if err := store.save(context.Background(), sharedOf(incs), io); err != nil { // the first save folds
		t.Fatal(err)
	}
	rec, io := recording()
	if err := store.save(context.Background(), sharedOf(incs[:40]), io); err != nil { // 60 leave
		t.Fatal(err)
	}
	if n, most := rec.of("afterfold", "j"); n == 0 || most > minSealBytes+1<<10 {
		t.Errorf("60 tombstones written in %d journal shards of at most %d bytes: want them sealed at 16 KiB", n, most)
	}
}
