package incident

import (
	"context"
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
// are batched into one write.
const FlushInterval = time.Second

// Persist writes the tracker's state to store whenever it changed, at most
// once per FlushInterval, until ctx ends; then it writes once more so a
// graceful stop loses nothing. A failed write is logged and retried at
// the next tick.
func Persist(ctx context.Context, t *Tracker, store Store, logger *slog.Logger, m *LedgerMetrics) {
	var saved uint64
	flush := func(ctx context.Context) {
		if t.Version() == saved {
			return // nothing changed: not even a copy of the ledger is made
		}
		incs, version := t.Snapshot()
		if err := store.Save(ctx, incs); err != nil {
			logger.Error("writing the incident ledger failed; will retry", "error", err)
			m.failed()
			return
		}
		m.wrote(len(incs))
		saved = version
	}
	tick := time.NewTicker(FlushInterval)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			flush(ctx)
		case <-ctx.Done():
			final, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			flush(final)
			cancel()
			return
		}
	}
}

// LedgerMetrics observe the ledger writer; nil fields are skipped.
type LedgerMetrics struct {
	Writes, Failures func()
	Incidents        func(n int)
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

func (m *LedgerMetrics) failed() {
	if m != nil && m.Failures != nil {
		m.Failures()
	}
}
