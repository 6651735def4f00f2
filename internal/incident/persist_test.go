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

// startStore notes when each save began.
type startStore struct {
	recordingStore
	began []time.Time
}

func (s *startStore) Save(ctx context.Context, incs []Incident) error {
	s.mu.Lock()
	s.began = append(s.began, time.Now())
	s.mu.Unlock()
	return s.recordingStore.Save(ctx, incs)
}

func (s *startStore) starts() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.began...)
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

// gateFixture runs persist with a gate of four deliveries and the ticks
// given (nil: none), for the tests of the gate's asking.
type gateFixture struct {
	t     *testing.T
	tr    *Tracker
	store *startStore
	lag   *LedgerLag
	ctx   context.Context
}

func newGateFixture(t *testing.T, ticks <-chan time.Time, storeErr error) *gateFixture {
	f := &gateFixture{t: t, tr: NewTracker(Options{}),
		store: &startStore{recordingStore: recordingStore{saved: make(chan struct{}, 1000), err: storeErr}}}
	var err error
	if f.lag, err = NewLedgerLag(4, time.Hour, LagSend, nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f.ctx = ctx
	done := make(chan error, 1)
	go func() {
		done <- persist(ctx, f.tr, f.store, slog.New(slog.DiscardHandler), &LedgerMetrics{Lag: f.lag}, ticks)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return f
}

// deliver changes the tracker (as the tracker hears of a delivery) and
// counts a delivery for the gate, in that order.
func (f *gateFixture) deliver(i int) {
	f.t.Helper()
	f.changeAndCount(i, func() {})
}

// changeAndCount changes the tracker, runs between, then counts a
// delivery.
func (f *gateFixture) changeAndCount(i int, between func()) {
	f.t.Helper()
	sent, err := f.lag.Acquire(f.ctx, 1)
	if err != nil {
		f.t.Fatal(err)
	}
	changed(f.tr, i)
	between()
	sent(1)
}

func (f *gateFixture) written(what string) {
	f.t.Helper()
	select {
	case <-f.store.saved:
	case <-time.After(30 * time.Second):
		f.t.Fatalf("%s: the ledger was not written", what)
	}
}

// allRecorded waits until the gate counts no delivery unrecorded.
func (f *gateFixture) allRecorded(what string) {
	f.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		n, _ := f.lag.Unrecorded()
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("%s: %d deliveries still unrecorded after 30 s", what, n)
		}
		time.Sleep(5 * time.Millisecond) // polling the gate's count
	}
}

// TestPersistWritesWhenTheGateFills: once half the ledger lag gate's
// limit is delivered and unrecorded, the ledger is written at once, not
// at the next tick (none here), so a storm faster than the limit
// a tick does not pause the sinks; and urged writes keep MinFlushGap
// apart.
func TestPersistWritesWhenTheGateFills(t *testing.T) {
	f := newGateFixture(t, nil, nil)
	f.deliver(1)
	f.deliver(2)
	f.written("two of four deliveries unrecorded")
	f.allRecorded("after the write")
	f.deliver(3)
	f.deliver(4)
	f.written("two more unrecorded")
	// The gap is counted from just before each save is entered; half of
	// it allows for the moments between the two on a busy machine.
	if starts := f.store.starts(); len(starts) != 2 || starts[1].Sub(starts[0]) < MinFlushGap/2 {
		t.Errorf("urged writes began at %v, want 2 at least %s apart", starts, MinFlushGap)
	}
}

// TestPersistTicksKeepTheGap: the tick's writes keep MinFlushGap apart
// from each other and from the gate's too (here the tick is 1 ms, and
// the tracker changes all the time).
func TestPersistTicksKeepTheGap(t *testing.T) {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	f := newGateFixture(t, tick.C, nil)
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; len(f.store.starts()) < 4; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("%d writes in 30 s, want 4", len(f.store.starts()))
		}
		f.deliver(i)
		time.Sleep(time.Millisecond) // a change a millisecond: the tick would write each
	}
	starts := f.store.starts()
	for i := 1; i < len(starts); i++ {
		if gap := starts[i].Sub(starts[i-1]); gap < MinFlushGap/2 {
			t.Errorf("writes %d and %d began %s apart, want at least %s", i, i+1, gap, MinFlushGap)
		}
	}
}

// TestPersistRecordsADeliveryItsLastWriteHeld: a write that began after
// the tracker heard of a delivery but before the gate counted it holds
// the delivery; the next write asked for records it, though nothing has
// changed since. (Otherwise it stays unrecorded until something changes,
// and after --ledger-lag-max-age every send is held.)
func TestPersistRecordsADeliveryItsLastWriteHeld(t *testing.T) {
	f := newGateFixture(t, nil, nil)
	f.changeAndCount(1, func() {
		f.lag.askForSave() // as the tick would
		f.written("asked for between the tracker hearing of the delivery and the gate counting it")
	})
	f.lag.askForSave() // as the next tick or delivery would
	f.allRecorded("nothing changed since the write that holds the delivery")
}

// TestPersistDoesNotHammerAFailingStore: while writes fail, the gate's
// asking does not retry them (the tick does); once the tick's retry
// succeeds, the gate's asking writes again.
func TestPersistDoesNotHammerAFailingStore(t *testing.T) {
	ticks := make(chan time.Time)
	f := newGateFixture(t, ticks, errors.New("admission webhook denied the request"))
	f.deliver(1)
	f.deliver(2)
	f.written("two of four deliveries unrecorded")
	for i := 3; i < 20; i++ {
		f.deliver(i) // policy send: each asks again
	}
	select {
	case <-f.store.saved:
		t.Fatalf("a failing write was retried at the gate's asking (%d writes)", f.store.count())
	case <-time.After(3 * MinFlushGap):
	}

	f.store.mu.Lock()
	f.store.err = nil
	f.store.mu.Unlock()
	ticks <- time.Now()
	f.written("the tick's retry")
	f.allRecorded("after the tick's retry succeeded")
	f.deliver(20)
	f.deliver(21)
	f.written("two of four unrecorded after a successful retry: the gate's asking writes again")
}

// TestPersistWritesWhenSendsPause: a send held by the gate asks for a
// write even below half its limit (here most of the limit is in flight),
// and goes once the write records what was delivered.
func TestPersistWritesWhenSendsPause(t *testing.T) {
	tr := NewTracker(Options{})
	store := &recordingStore{saved: make(chan struct{}, 16)}
	lag, err := NewLedgerLag(4, time.Hour, LagPause, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		_ = persist(ctx, tr, store, slog.New(slog.DiscardHandler), &LedgerMetrics{Lag: lag}, nil)
	}()

	if _, err := lag.Acquire(ctx, 2); err != nil { // a digest of two, in flight throughout
		t.Fatal(err)
	}
	changed(tr, 1)
	sent, err := lag.Acquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	sent(1) // one of four unrecorded: no write asked for yet
	held, cancelHeld := context.WithTimeout(ctx, 30*time.Second)
	defer cancelHeld()
	if _, err := lag.Acquire(held, 2); err != nil {
		t.Fatalf("a send held by the gate did not go (%v): the ledger was not written while it waited", err)
	}
	if store.count() != 1 {
		t.Errorf("%d writes, want 1", store.count())
	}
}
