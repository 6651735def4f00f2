package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
)

// TestBadLeaseTimingsAreRefusedAtOnce: timings the Lease cannot hold are
// refused before herald connects to anything (no cluster here), with exit
// code 2 and the flag to change named.
func TestBadLeaseTimingsAreRefusedAtOnce(t *testing.T) {
	beside(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--lease-duration", "500ms"}, "--lease-duration 500ms: want a whole number of seconds"},
		{[]string{"--lease-duration", "1500ms"}, "--lease-duration 1.5s: want a whole number of seconds"},
		{[]string{"--lease-duration", "0s"}, "--lease-duration 0s: want a whole number of seconds"},
		{[]string{"--lease-duration", "5s", "--renew-deadline", "5s"}, "--renew-deadline (5s) < --lease-duration (5s)"},
		{[]string{"--retry-period", "0s"}, "0 < --retry-period (0s)"},
	} {
		var out bytes.Buffer
		args := append([]string{"run", "--config", "does-not-matter.yaml", "--kubeconfig", "/nonexistent"}, tc.args...)
		code := runMain(context.Background(), args, &out, &out)
		if code != 2 || !strings.Contains(out.String(), tc.want) {
			t.Errorf("herald %v: exit %d, %q; want 2 and %q", tc.args, code, out.String(), tc.want)
		}
	}
}

// TestStartOversSurviveTheExec: the counts main hands to the next term in
// the environment read back as they were written, and a value nobody
// wrote (or garbage) counts zero rather than failing the start.
func TestStartOversSurviveTheExec(t *testing.T) {
	t.Setenv(startOversEnv, "")
	startOver(startOverLeaseLost)
	startOver(startOverLeaseLost)
	startOver(startOverLedgerConflict)
	got := parseStartOvers(os.Getenv(startOversEnv))
	if got[startOverLeaseLost] != 2 || got[startOverLedgerConflict] != 1 {
		t.Errorf("after 2 lost leases and 1 conflict: %v", got)
	}
	if got := parseStartOvers("lease_lost=x,bogus=3,ledger_conflict"); got[startOverLeaseLost] != 0 || got[startOverLedgerConflict] != 0 || len(got) != 2 {
		t.Errorf("garbage read as %v, want both reasons at 0", got)
	}
}
