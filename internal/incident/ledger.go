package incident

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"
)

// Store persists the ledger: every open incident, resolved ones for the
// retention period, and what each sink has not accepted yet. The embedded
// default keeps it in ConfigMaps; another backend implements this.
type Store interface {
	// Load returns the stored incidents. Parts it cannot read are
	// reported through warn and skipped: their incidents count as new.
	Load(ctx context.Context, warn func(msg string, args ...any)) ([]Incident, error)
	// Save replaces the stored incidents with incs.
	Save(ctx context.Context, incs []Incident) error
}

// SharedStore is a Store that can save the tracker's shared snapshot
// (Tracker.SharedSnapshot) without a copy of each incident; the
// ConfigMap store is one. It must not modify or keep the incidents.
type SharedStore interface {
	Store
	SaveShared(ctx context.Context, incs []*Incident) error
}

// MemoryStore keeps the ledger in memory: for tests and --no-persist.
type MemoryStore struct {
	mu   sync.Mutex
	incs []Incident
}

// Load implements Store.
func (m *MemoryStore) Load(context.Context, func(string, ...any)) ([]Incident, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Incident(nil), m.incs...), nil
}

// Save implements Store.
func (m *MemoryStore) Save(_ context.Context, incs []Incident) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.incs = append([]Incident(nil), incs...)
	return nil
}

// FlushInterval bounds how often the ledger is written: changes within it
// are batched into one write. The ledger lag gate may ask for a write
// sooner (LedgerLag.Urged), but never more often than MinFlushGap.
const FlushInterval = time.Second

// MinFlushGap is the least time between two ledger writes: at most ten
// a second, however often the gate asks. With the default gate of 50
// unrecorded deliveries and writes of a few shards, hundreds of
// notifications a second go through; a large ledger's writes (a request
// per changed shard, within the ledger client's own rate limit) hold
// that lower.
const MinFlushGap = 100 * time.Millisecond

// Persist writes the tracker's state to store whenever it changed: once
// per FlushInterval, and sooner when the ledger lag gate asks
// (LedgerLag.Urged), never within MinFlushGap of the last write, until
// ctx ends. A failed write is logged and retried at the next tick (not
// at the gate's asking: a failing store is not hammered), but a conflict
// (ErrConflict: another replica wrote the ledger, so it leads) is
// logged, counted and returned at once, never retried: the caller stops
// leading.
//
// When ctx ends it writes once more, so a graceful stop loses nothing —
// unless ctx's cause is ErrFenced (the lease was lost): then the write in
// flight is abandoned and nothing more is written.
func Persist(ctx context.Context, t *Tracker, store Store, logger *slog.Logger, m *LedgerMetrics) error {
	tick := time.NewTicker(FlushInterval)
	defer tick.Stop()
	return persist(ctx, t, store, logger, m, tick.C)
}

// persist is Persist with its ticks given (a test's own).
func persist(ctx context.Context, t *Tracker, store Store, logger *slog.Logger, m *LedgerMetrics, ticks <-chan time.Time) error {
	w := &ledgerWriter{t: t, store: store, logger: logger, m: m}
	urged := m.lag().Urged()
	var held *time.Timer // a write waiting out MinFlushGap
	defer func() {
		if held != nil {
			held.Stop()
		}
	}()
	write := func() error {
		if held != nil {
			held.Stop()
			held = nil
		}
		return w.flush(ctx)
	}
	// request writes now, or once MinFlushGap has passed since the last.
	request := func() error {
		if wait := MinFlushGap - time.Since(w.last); wait > 0 {
			if held == nil {
				held = time.NewTimer(wait)
			}
			return nil
		}
		return write()
	}
	for {
		var heldC <-chan time.Time
		if held != nil {
			heldC = held.C
		}
		var err error
		select {
		case <-ticks:
			err = request()
		case <-urged:
			if !w.failing {
				err = request()
			}
		case <-heldC:
			err = write()
		case <-ctx.Done():
			if errors.Is(context.Cause(ctx), ErrFenced) {
				logger.Warn("the incident ledger writer was fenced; what was not written is sent again by the next leader", "cause", context.Cause(ctx))
				return nil
			}
			final, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			return w.flush(final)
		}
		if err != nil {
			return err
		}
	}
}

// ledgerWriter is Persist's state between writes.
type ledgerWriter struct {
	t      *Tracker
	store  Store
	logger *slog.Logger
	m      *LedgerMetrics

	saved   uint64    // the tracker's version the last successful write holds
	last    time.Time // when the last write began
	failing bool      // the last write failed
}

// flush writes the tracker's state if it changed since the last
// successful write. Only a conflict is returned.
func (w *ledgerWriter) flush(ctx context.Context) error {
	// Taken first: a delivery reaches the tracker before the gate counts
	// it, so every delivery counted by mark is in the state read below —
	// or, if that has not changed, in the last write.
	mark := w.m.lag().Mark()
	if w.t.Version() == w.saved {
		w.m.lag().Recorded(mark)
		return nil // nothing changed: not even a copy of the ledger is made
	}
	w.last = time.Now()
	n, version, err := save(ctx, w.t, w.store)
	if err != nil {
		if errors.Is(err, ErrConflict) {
			w.logger.Error("the incident ledger was written by another replica; stopping, not overwriting it", "error", err)
			w.m.conflicted()
			return err
		}
		if ctx.Err() == nil {
			w.logger.Error("writing the incident ledger failed; will retry", "error", err)
			w.m.failed()
		}
		w.failing = true
		return nil
	}
	w.failing = false
	w.m.wrote(n)
	w.m.lag().Recorded(mark)
	w.saved = version
	if w.m != nil {
		w.m.Saved.set(version)
	}
	return nil
}

// save writes the tracker's state to store and says how many incidents
// it holds.
func save(ctx context.Context, t *Tracker, store Store) (int, uint64, error) {
	if shared, ok := store.(SharedStore); ok {
		incs, version := t.SharedSnapshot()
		return len(incs), version, shared.SaveShared(ctx, incs)
	}
	incs, version := t.Snapshot()
	return len(incs), version, store.Save(ctx, incs)
}

// ErrFenced, as the cause of a context's end, says this replica stopped
// leading: whatever that context guards stops at once, without a last
// write or send, as another replica may lead already.
var ErrFenced = errors.New("fenced: this replica no longer leads")

// LedgerMetrics observe the ledger writer; nil fields are skipped.
type LedgerMetrics struct {
	Writes, Failures func()
	// Conflicts counts writes refused because another replica wrote the
	// ledger since this one read it.
	Conflicts func()
	Incidents func(n int)
	// Saved, if set, is told each version the ledger holds.
	Saved *Saved
	// Lag, if set, is told which deliveries each save recorded.
	Lag *LedgerLag
}

func (m *LedgerMetrics) lag() *LedgerLag {
	if m == nil {
		return nil
	}
	return m.Lag
}

func (m *LedgerMetrics) wrote(n int) {
	if m == nil {
		return
	}
	if m.Writes != nil {
		m.Writes()
	}
	if m.Incidents != nil {
		m.Incidents(n)
	}
}

func (m *LedgerMetrics) conflicted() {
	if m != nil && m.Conflicts != nil {
		m.Conflicts()
	}
}

func (m *LedgerMetrics) failed() {
	if m != nil && m.Failures != nil {
		m.Failures()
	}
}
