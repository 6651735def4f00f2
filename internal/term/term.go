// Package term is a leader's term: what runs while this replica holds
// the Lease, how it drains on a graceful stop and how it is fenced the
// moment it stops leading.
//
// The order of a term: claim and load the ledger (now that no other
// replica writes it), restore the tracker from it, let the parts that
// keep state of their own catch up (Restored), tell the receivers that
// forget what was announced before this leader, then run the sinks, the
// ledger writer, the parts beside the workers (Beside) and the workers
// until ctx ends or the fence falls.
package term

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/herald-k8s/herald/handlers"
	fencing "github.com/herald-k8s/herald/internal/fence"
	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/sinks"
)

// Parts are what the leader runs.
type Parts struct {
	Tracker       *incident.Tracker
	Store         incident.Store
	Dispatcher    *sinks.Dispatcher
	Controller    *handlers.Controller
	Logger        *slog.Logger
	Namespace     string // where the ledger is, for the messages
	Persisted     bool
	LedgerMetrics *incident.LedgerMetrics
	// Grace is how long the sinks may send what is queued after a
	// graceful stop.
	Grace time.Duration
	// Restored run once the ledger is loaded, before anything else of
	// the term: a part that keeps state of its own (the Alertmanager
	// receiver's firing alerts) takes it from the restored tracker.
	Restored []func(*incident.Tracker)
	// Beside run beside the workers for the term (the crash context
	// stage, the Silences' status, Slack's buttons, the Alertmanager
	// receiver); their context ends with the term's or with the fence.
	Beside []func(ctx context.Context)
}

// Run is the leader's work: load the ledger, then reconcile and notify
// until ctx ends.
//
// A graceful stop (ctx cancelled) drains: the sinks send what is queued
// (up to Grace) and the ledger is written a last time. A fence (fenced
// ends: the lease was lost, or another replica wrote the ledger, which
// Run reports through fence) stops everything at once: the sinks (their
// retries, digests and re-posts), the parts beside the workers and the
// ledger writer are cancelled, requests in flight included, and nothing
// more is sent or written — in the middle of a drain too.
func Run(ctx, fenced context.Context, fence context.CancelCauseFunc, p Parts) error {
	loaded, err := loadLedger(ctx, p.Store, p.Logger)
	if errors.Is(err, incident.ErrConflict) {
		p.Logger.Error("the incident ledger was claimed by another replica while this one took it over", "error", err)
		if m := p.LedgerMetrics; m != nil && m.Conflicts != nil {
			m.Conflicts()
		}
		return err
	}
	if err != nil {
		return fmt.Errorf("cannot read the incident ledger in %s; refusing to start rather than repeat every open incident: %w", p.Namespace, err)
	}
	p.Tracker.Restore(loaded)
	for _, restored := range p.Restored {
		restored(p.Tracker)
	}
	// Receivers that forget an alert unless told again (Alertmanager)
	// hear again of what was announced before this leader.
	p.Dispatcher.Resume(p.Tracker.Announced())
	p.Controller.FirstStart = len(loaded) == 0
	p.Logger.Info("incident ledger loaded", "incidents", len(loaded), "persisted", p.Persisted, "namespace", p.Namespace)

	// The sinks and the ledger writer run under fenced, which outlives
	// ctx on a graceful stop; the workers and the parts beside them
	// under work, which ends with ctx or the fence.
	work, stopWork := context.WithCancelCause(ctx)
	defer stopWork(nil)
	defer context.AfterFunc(fenced, func() { stopWork(context.Cause(fenced)) })()
	// What leaves names this term: the Lease's transitions (from the
	// election) and the ledger's epoch (from the claim just made).
	epoch := fencing.EpochOf(ctx)
	if s, ok := p.Store.(interface{ Epoch() uint64 }); ok {
		epoch.Ledger = s.Epoch()
	}
	sinkCtx, stopSinks := context.WithCancel(fencing.WithEpoch(fenced, epoch))
	defer stopSinks()
	ledgerCtx, stopLedger := context.WithCancel(fenced)
	var wg, ledgerDone sync.WaitGroup
	var ledgerErr error
	ledgerDone.Go(func() {
		if ledgerErr = incident.Persist(ledgerCtx, p.Tracker, p.Store, p.Logger, p.LedgerMetrics); ledgerErr != nil {
			fence(fmt.Errorf("%w: %w", incident.ErrFenced, ledgerErr))
		}
	})
	wg.Go(func() { p.Dispatcher.Run(sinkCtx) })
	for _, beside := range p.Beside {
		wg.Go(func() { beside(work) })
	}
	runErr := p.Controller.Run(work)
	p.Dispatcher.Close()
	grace := time.AfterFunc(p.Grace, stopSinks)
	wg.Wait()
	grace.Stop()
	stopLedger() // after the sinks: the final write records their deliveries
	ledgerDone.Wait()
	if ledgerErr != nil {
		return ledgerErr
	}
	return runErr
}

// loadLedger claims the ledger (a store that can be claimed refuses the
// writes of any replica that led before) and reads it, retrying API
// errors for up to 30 s.
func loadLedger(ctx context.Context, store incident.Store, logger *slog.Logger) ([]incident.Incident, error) {
	warn := func(msg string, args ...any) { logger.Warn(msg, args...) }
	var lastErr error
	for attempt := range 6 {
		// Claimed before it is read: a deposed leader's save that lands
		// after the claim fails, so what Load reads is all there is.
		var err error
		if c, ok := store.(interface{ Claim(context.Context) error }); ok {
			err = c.Claim(ctx)
		}
		var incs []incident.Incident
		if err == nil {
			incs, err = store.Load(ctx, warn)
		}
		if err == nil {
			return incs, nil
		}
		if errors.Is(err, incident.ErrConflict) {
			return nil, err // another replica claimed it meanwhile: it leads
		}
		lastErr = err
		logger.Warn("reading the incident ledger failed; retrying", "attempt", attempt+1, "error", err)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(5 * time.Second):
		}
	}
	return nil, lastErr
}
