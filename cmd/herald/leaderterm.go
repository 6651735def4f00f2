package main

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

// A leader's term: what runs while this replica holds the Lease, how it
// drains on a graceful stop and how it is fenced when it stops leading.

// leaderParts are what the leader runs.
type leaderParts struct {
	tracker       *incident.Tracker
	store         incident.Store
	dispatcher    *sinks.Dispatcher
	ctrl          *handlers.Controller
	logger        *slog.Logger
	namespace     string
	persisted     bool
	ledgerMetrics *incident.LedgerMetrics
	grace         time.Duration
	// silenceStatus keeps the Silences' status current while leading.
	silenceStatus func(ctx context.Context)
	// gatherContext runs the crash-context stage while leading.
	gatherContext func(ctx context.Context)
	// interactive receives Slack's button presses while leading (nil:
	// no sink has buttons).
	interactive func(ctx context.Context)
	// alerts is the Alertmanager receiver (nil: none), and saved tells
	// it when the ledger holds what it took.
	alerts *alertIntake
	saved  *incident.Saved
}

// runLeader is the leader's work: load the ledger (now that no other
// replica writes it), then reconcile and notify until ctx ends.
//
// A graceful stop (ctx cancelled) drains: the sinks send what is queued
// (up to --shutdown-grace) and the ledger is written a last time. A fence
// (fenced ends: the lease was lost, or another replica wrote the ledger,
// which runLeader reports through fence) stops everything at once: the
// sinks (their retries, digests and re-posts), the context stage, the
// Silence status writer and the ledger writer are cancelled, requests in
// flight included, and nothing more is sent or written — in the middle of
// a drain too.
func runLeader(ctx, fenced context.Context, fence context.CancelCauseFunc, p leaderParts) error {
	loaded, err := loadLedger(ctx, p.store, p.logger)
	if errors.Is(err, incident.ErrConflict) {
		p.logger.Error("the incident ledger was claimed by another replica while this one took it over", "error", err)
		if m := p.ledgerMetrics; m != nil && m.Conflicts != nil {
			m.Conflicts()
		}
		return err
	}
	if err != nil {
		return fmt.Errorf("cannot read the incident ledger in %s; refusing to start rather than repeat every open incident: %w", p.namespace, err)
	}
	p.tracker.Restore(loaded)
	if p.alerts != nil {
		p.alerts.seed(p.tracker, p.logger)
	}
	// Receivers that forget an alert unless told again (Alertmanager)
	// hear again of what was announced before this leader.
	p.dispatcher.Resume(p.tracker.Announced())
	p.ctrl.FirstStart = len(loaded) == 0
	p.logger.Info("incident ledger loaded", "incidents", len(loaded), "persisted", p.persisted, "namespace", p.namespace)

	// The sinks and the ledger writer run under fenced, which outlives
	// ctx on a graceful stop; the workers, the context stage and the
	// Silence status writer under work, which ends with ctx or the fence.
	work, stopWork := context.WithCancelCause(ctx)
	defer stopWork(nil)
	defer context.AfterFunc(fenced, func() { stopWork(context.Cause(fenced)) })()
	// What leaves names this term: the Lease's transitions (from the
	// election) and the ledger's epoch (from the claim just made).
	epoch := fencing.EpochOf(ctx)
	if s, ok := p.store.(interface{ Epoch() uint64 }); ok {
		epoch.Ledger = s.Epoch()
	}
	sinkCtx, stopSinks := context.WithCancel(fencing.WithEpoch(fenced, epoch))
	defer stopSinks()
	ledgerCtx, stopLedger := context.WithCancel(fenced)
	var wg, ledgerDone sync.WaitGroup
	var ledgerErr error
	ledgerDone.Go(func() {
		if ledgerErr = incident.Persist(ledgerCtx, p.tracker, p.store, p.logger, p.ledgerMetrics); ledgerErr != nil {
			fence(fmt.Errorf("%w: %w", incident.ErrFenced, ledgerErr))
		}
	})
	wg.Go(func() { p.dispatcher.Run(sinkCtx) })
	wg.Go(func() { p.gatherContext(work) })
	wg.Go(func() { p.silenceStatus(work) })
	if p.interactive != nil {
		wg.Go(func() { p.interactive(work) })
	}
	if p.alerts != nil {
		wg.Go(func() { p.alerts.lead(work, p.ctrl, p.tracker, p.saved) })
	}
	runErr := p.ctrl.Run(work)
	p.dispatcher.Close()
	grace := time.AfterFunc(p.grace, stopSinks)
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
