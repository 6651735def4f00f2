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

// MinFlushGap is the least time between two ledger writes the gate asked
// for: at most ten writes a second, whatever the storm. With the default
// gate of 50 unrecorded deliveries, that lets 500 notifications a second
// through.
const MinFlushGap = 100 * time.Millisecond

// Persist writes the tracker's state to store whenever it changed, at most
// once per FlushInterval, until ctx ends. A failed write is logged and
// retried at the next tick, but a conflict (ErrConflict: another replica
// wrote the ledger, so it leads) is logged, counted and returned at once,
// never retried: the caller stops leading.
//
// When ctx ends it writes once more, so a graceful stop loses nothing —
// unless ctx's cause is ErrFenced (the lease was lost): then the write in
// flight is abandoned and nothing more is written.
func Persist(ctx context.Context, t *Tracker, store Store, logger *slog.Logger, m *LedgerMetrics) error {
	return persist(ctx, t, store, logger, m, FlushInterval)
}

func persist(ctx context.Context, t *Tracker, store Store, logger *slog.Logger, m *LedgerMetrics, every time.Duration) error {
	var saved uint64
	flush := func(ctx context.Context) error {
		if t.Version() == saved {
			return nil // nothing changed: not even a copy of the ledger is made
		}
		mark := m.lag().Mark() // what was delivered so far is in this save
		n, version, err := save(ctx, t, store)
		if err != nil {
			if errors.Is(err, ErrConflict) {
				logger.Error("the incident ledger was written by another replica; stopping, not overwriting it", "error", err)
				m.conflicted()
				return err
			}
			if ctx.Err() == nil {
				logger.Error("writing the incident ledger failed; will retry", "error", err)
				m.failed()
			}
			return nil
		}
		m.wrote(n)
		m.lag().Recorded(mark)
		saved = version
		if m != nil {
			m.Saved.set(version)
		}
		return nil
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	urged := m.lag().Urged()
	var last time.Time   // when the last write began
	var held *time.Timer // an urged write waiting out MinFlushGap
	heldC := func() <-chan time.Time {
		if held == nil {
			return nil
		}
		return held.C
	}
	write := func() error {
		if held != nil {
			held.Stop()
			held = nil
		}
		last = time.Now()
		return flush(ctx)
	}
	defer func() {
		if held != nil {
			held.Stop()
		}
	}()
	for {
		select {
		case <-tick.C:
			if err := write(); err != nil {
				return err
			}
		case <-urged:
			if wait := MinFlushGap - time.Since(last); wait > 0 {
				if held == nil {
					held = time.NewTimer(wait)
				}
				continue
			}
			if err := write(); err != nil {
				return err
			}
		case <-heldC():
			if err := write(); err != nil {
				return err
			}
		case <-ctx.Done():
			if errors.Is(context.Cause(ctx), ErrFenced) {
				logger.Warn("the incident ledger writer was fenced; what was not written is sent again by the next leader", "cause", context.Cause(ctx))
				return nil
			}
			final, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			return flush(final)
		}
	}
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
