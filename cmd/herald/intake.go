package main

import (
	"context"
	"log/slog"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/herald-k8s/herald/config"
	"github.com/herald-k8s/herald/handlers"
	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/intake"
	"github.com/herald-k8s/herald/watcher"
)

// alertIntake is the Alertmanager webhook receiver (internal/intake) as
// herald run serves it: on every replica, so that a follower answers
// 503 and Alertmanager retries until the leader takes the alerts.
type alertIntake struct {
	cfg      *config.AlertmanagerIntake
	store    *intake.Store
	receiver *intake.Receiver
	srv      *intake.Server
}

// newAlertIntake listens on the receiver's address (nil, nil when the
// configuration has no receiver). Alerts go nowhere until lead.
func newAlertIntake(cfg *config.Config, w *watcher.Watcher, logger *slog.Logger, reg prometheus.Registerer) (*alertIntake, error) {
	in := cfg.Intake.Alertmanager
	if in == nil {
		return nil, nil
	}
	sinkNames := in.Sinks
	if len(sinkNames) == 0 {
		for _, s := range cfg.Sinks {
			sinkNames = append(sinkNames, s.Name)
		}
	}
	store := intake.NewStore()
	a := &alertIntake{cfg: in, store: store}
	var token config.Secret
	if in.Token != nil {
		token = in.Token.Secret()
	}
	a.receiver = intake.NewReceiver(intake.Options{
		Config: in, Token: token, ClientCerts: in.TLS != nil && in.TLS.ClientCAFile != "", Store: store, Sinks: sinkNames, Logger: logger, Metrics: intake.NewMetrics(reg),
		Watched: func(kind string) bool { return slices.Contains(w.Kinds(), kind) },
	})
	var err error
	a.srv, err = intake.Listen(in.Listen, in.TLS, a.receiver, logger)
	if err != nil {
		return nil, err
	}
	return a, nil
}

// seed gives a new leader the alerts its ledger holds open.
func (a *alertIntake) seed(tracker *incident.Tracker, logger *slog.Logger) {
	incs, _ := tracker.Snapshot()
	if n := a.store.Seed(incs, a.cfg.AgreeFor); n > 0 {
		logger.Info("alerts firing before this leader restored from the ledger", "alerts", n)
	}
}

// lead takes alerts in while ctx lasts: an alert is answered once its
// key has been reconciled and the ledger holds the outcome.
func (a *alertIntake) lead(ctx context.Context, ctrl *handlers.Controller, tracker *incident.Tracker, saved *incident.Saved) {
	a.receiver.Lead(ctx, intake.Term{Record: func(ctx context.Context, keys []watcher.Key) error {
		if err := ctrl.Settle(ctx, keys); err != nil {
			return err
		}
		return saved.Wait(ctx, tracker.Version())
	}})
}

func (a *alertIntake) close() {
	if a != nil {
		a.srv.Close()
	}
}

// source is the receiver's store as the controller reads it (nil: no
// receiver).
func (a *alertIntake) source() handlers.AlertSource {
	if a == nil {
		return nil
	}
	return a.store
}
