package main

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// A replica that stops leading — the lease lost, or the ledger written by
// another replica — starts over: main executes herald afresh in the same
// process, so nothing of the old term survives in memory. The count of
// start-overs by reason survives in the environment the new term is
// executed with, so that herald_start_overs_total is a counter an alert
// can rely on across the exec (the registry itself starts empty).

// startOversEnv holds the counts: "lease_lost=3,ledger_conflict=1".
const startOversEnv = "HERALD_START_OVERS"

// Reasons for starting over.
const (
	startOverLeaseLost      = "lease_lost"
	startOverLedgerConflict = "ledger_conflict"
)

// parseStartOvers reads startOversEnv's value; what it cannot read counts 0.
func parseStartOvers(v string) map[string]int {
	counts := map[string]int{startOverLeaseLost: 0, startOverLedgerConflict: 0}
	for _, kv := range strings.Split(v, ",") {
		k, n, ok := strings.Cut(kv, "=")
		if _, known := counts[k]; ok && known {
			counts[k], _ = strconv.Atoi(n)
		}
	}
	return counts
}

// formatStartOvers is parseStartOvers' inverse.
func formatStartOvers(counts map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range counts {
			if !yield(k) {
				return
			}
		}
	}) {
		parts = append(parts, k+"="+strconv.Itoa(counts[k]))
	}
	return strings.Join(parts, ",")
}

// registerStartOvers exposes the counts the process was started with.
func registerStartOvers(reg prometheus.Registerer, env string) {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "herald_start_overs_total",
		Help: "Times this pod's herald stopped leading and started over, by reason (lease_lost: no renewal within the renew deadline; ledger_conflict: another replica wrote the ledger). Survives the start-over."},
		[]string{"reason"})
	for reason, n := range parseStartOvers(env) {
		c.WithLabelValues(reason).Add(float64(n))
	}
	reg.MustRegister(c)
}

// validateLeaseTimings checks the election's flags before herald
// connects to anything, naming the flag to change.
func validateLeaseTimings(leaseDuration, renewDeadline, retryPeriod time.Duration) error {
	if leaseDuration < time.Second || leaseDuration%time.Second != 0 {
		return fmt.Errorf("--lease-duration %s: want a whole number of seconds, at least 1s (a Lease stores leaseDurationSeconds)", leaseDuration)
	}
	if retryPeriod <= 0 || retryPeriod >= renewDeadline || renewDeadline >= leaseDuration {
		return fmt.Errorf("want 0 < --retry-period (%s) < --renew-deadline (%s) < --lease-duration (%s): the leader stops notifying at the renew deadline, the lease duration − renew deadline before another replica may take over",
			retryPeriod, renewDeadline, leaseDuration)
	}
	if renewDeadline*5 <= retryPeriod*6 {
		return fmt.Errorf("--renew-deadline %s must be more than 1.2 × --retry-period (%s), as in every Kubernetes component: retries are jittered by up to 1.2 retry periods", renewDeadline, retryPeriod)
	}
	return nil
}

// startOver records reason in the environment the next term is executed
// with (main executes it when cmdRun returns exitStartOver).
func startOver(reason string) {
	counts := parseStartOvers(os.Getenv(startOversEnv))
	counts[reason]++
	os.Setenv(startOversEnv, formatStartOvers(counts))
}
