package incident

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/herald-k8s/herald/internal/rules"
)

// recordingStore counts saves and answers each with err.
type recordingStore struct {
	MemoryStore
	mu    sync.Mutex
	saves int
	err   error
	saved chan struct{} // told after every save
}

func (s *recordingStore) Save(ctx context.Context, incs []Incident) error {
	s.mu.Lock()
	s.saves++
	err := s.err
	s.mu.Unlock()
	defer func() { s.saved <- struct{}{} }()
	if err != nil {
		return err
	}
	return s.MemoryStore.Save(ctx, incs)
}

func (s *recordingStore) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.saves
}

// changed makes the tracker's state differ from what was last saved.
func changed(tr *Tracker, i int) {
	tr.Reconcile(fmt.Sprintf("Pod/shop/web-%d", i), []rules.Finding{finding(fmt.Sprintf("u%d", i), "app", false, "3")})
}

// TestPersistStopsAtTheFence: a graceful stop writes the ledger once more;
// a fence (the lease lost: the context's cause is ErrFenced) writes
// nothing more, though the state changed since the last write.
func TestPersistStopsAtTheFence(t *testing.T) {
	for _, tc := range []struct {
		name      string
		stop      func(context.CancelCauseFunc)
		wantSaves int
	}{
		{"graceful stop writes once more", func(cancel context.CancelCauseFunc) { cancel(nil) }, 1},
		{"a fence writes nothing more", func(cancel context.CancelCauseFunc) { cancel(fmt.Errorf("%w: lease lost", ErrFenced)) }, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewTracker(Options{})
			store := &recordingStore{saved: make(chan struct{}, 10)}
			ctx, cancel := context.WithCancelCause(context.Background())
			done := make(chan error)
			go func() { done <- Persist(ctx, tr, store, slog.New(slog.DiscardHandler), nil) }()
			changed(tr, 1)
			tc.stop(cancel)
			if err := <-done; err != nil {
				t.Fatalf("Persist = %v", err)
			}
			if got := store.count(); got != tc.wantSaves {
				t.Errorf("%d saves after the stop, want %d", got, tc.wantSaves)
			}
		})
	}
}

// TestPersistNeverRetriesAConflict: a write refused because another
// replica wrote the ledger is counted and returned at once, not retried
// at the next tick (that would overwrite the other replica's ledger).
func TestPersistNeverRetriesAConflict(t *testing.T) {
	tr := NewTracker(Options{})
	store := &recordingStore{saved: make(chan struct{}, 10), err: fmt.Errorf("writing ledger shard default/x: %w", ErrConflict)}
	conflicts, failures := 0, 0
	m := &LedgerMetrics{Conflicts: func() { conflicts++ }, Failures: func() { failures++ }}
	changed(tr, 1)
	done := make(chan error)
	go func() { done <- Persist(context.Background(), tr, store, slog.New(slog.DiscardHandler), m) }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrConflict) {
			t.Fatalf("Persist = %v, want ErrConflict", err)
		}
	case <-time.After(10 * FlushInterval):
		t.Fatal("Persist went on after a conflict")
	}
	if store.count() != 1 || conflicts != 1 || failures != 0 {
		t.Errorf("%d saves, %d conflicts, %d failures counted; want 1, 1, 0", store.count(), conflicts, failures)
	}
}
