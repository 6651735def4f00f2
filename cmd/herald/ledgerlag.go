package main

import (
	"flag"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/herald-k8s/herald/internal/incident"
)

// The gate on the ledger keeping up (incident.LedgerLag): its flags, its
// log lines and its metrics.

type ledgerLagFlags struct {
	maxDeliveries *int
	maxAge        *time.Duration
	policy        *string
}

func registerLedgerLag(fs *flag.FlagSet) ledgerLagFlags {
	return ledgerLagFlags{
		maxDeliveries: fs.Int("ledger-lag-max-deliveries", 50, "at most this many deliveries not yet recorded in the incident ledger (and in flight) before sending pauses: what a failover can repeat"),
		maxAge:        fs.Duration("ledger-lag-max-age", 30*time.Second, "sending pauses once a delivery has gone this long without being recorded in the incident ledger"),
		policy:        fs.String("ledger-lag-policy", string(incident.LagPause), "when the incident ledger cannot keep up: pause (hold notifications until it does) or send (send anyway; a failover then repeats every delivery since the last good write)"),
	}
}

// check refuses values the gate cannot work with, before herald connects
// to anything.
func (f ledgerLagFlags) check() error {
	if _, err := incident.NewLedgerLag(*f.maxDeliveries, *f.maxAge, incident.LagPolicy(*f.policy), nil); err != nil {
		return fmt.Errorf("--ledger-lag-max-deliveries, --ledger-lag-max-age, --ledger-lag-policy: %w", err)
	}
	return nil
}

// build makes the gate; sending pausing and resuming is logged loudly
// (a pause must never be silent) and exported.
func (f ledgerLagFlags) build(logger *slog.Logger, reg prometheus.Registerer) (*incident.LedgerLag, error) {
	lag, err := incident.NewLedgerLag(*f.maxDeliveries, *f.maxAge, incident.LagPolicy(*f.policy), func(why string) {
		if why != "" {
			logger.Error("sending paused: the incident ledger is not recording deliveries (its ConfigMap writes fail or lag); notifications are held, not lost, until it catches up — see herald_ledger_write_errors_total and the log lines before this one",
				"why", why)
			return
		}
		logger.Info("sending resumed: the incident ledger recorded the deliveries it was behind on")
	})
	if err != nil {
		return nil, fmt.Errorf("--ledger-lag-max-deliveries, --ledger-lag-max-age, --ledger-lag-policy: %w", err)
	}
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "herald_ledger_unrecorded_deliveries",
			Help: "Deliveries the incident ledger has not recorded yet: what a failover now would send again."},
			func() float64 { n, _ := lag.Unrecorded(); return float64(n) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "herald_ledger_unrecorded_oldest_seconds",
			Help: "Age of the oldest delivery the incident ledger has not recorded yet (0: none)."},
			func() float64 { _, age := lag.Unrecorded(); return age.Seconds() }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "herald_sending_paused",
			Help: "1 while sends are held because the incident ledger is behind (--ledger-lag-policy pause)."},
			func() float64 { return map[bool]float64{true: 1}[lag.Paused()] }),
	)
	return lag, nil
}
