package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/herald-k8s/herald/internal/testenv"
)

// The demo's Alertmanager sends every alert to herald's receiver (docs/
// prometheus.md): herald's own alerts, which its alertmanager sink posts
// there, come back and are dropped; a Prometheus-style alert posted to
// Alertmanager's API arrives as a herald incident.

// alertmanagerForDemo starts Alertmanager with herald's intake as its
// receiver, on a port it picks, and returns the intake's address and the
// token file both read.
func alertmanagerForDemo(ctx context.Context, dir string) (am *testenv.Alertmanager, intakeAddr, tokenFile string, err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", "", err
	}
	intakeAddr = ln.Addr().String()
	ln.Close()
	tokenFile = filepath.Join(dir, "intake-token")
	if err := os.WriteFile(tokenFile, []byte(fmt.Sprintf("demo-%d\n", time.Now().UnixNano())), 0o600); err != nil {
		return nil, "", "", err
	}
	cfg := testenv.WebhookRoute{URL: "http://" + intakeAddr + "/alerts", TokenFile: tokenFile,
		GroupBy: []string{"alertname", "namespace"}, GroupWait: time.Second, GroupInterval: 5 * time.Second}.Config()
	am, err = testenv.RunAlertmanagerWith(ctx, dir, cfg, func(f string, a ...any) { fmt.Printf("    "+f+"\n", a...) })
	return am, intakeAddr, tokenFile, err
}

// intakeConfig is the receiver's part of herald's configuration.
func intakeConfig(addr, tokenFile string) string {
	return fmt.Sprintf("\nintake:\n  alertmanager:\n    listen: %q\n    token: {file: %q}\n", addr, tokenFile)
}

// intakeScene posts an SLO alert to Alertmanager as Prometheus would: it
// reaches herald through Alertmanager's webhook and is told like herald's
// own, routed to the team that owns the namespace.
func intakeScene(amURL string, lines <-chan string, seen func([]string)) error {
	say("Prometheus alerts in: an SLO alert about the Deployment web is posted to Alertmanager's API, as Prometheus does; Alertmanager sends it to herald's receiver. Expect one FIRING for CheckoutErrorBudgetBurn, routed to the storefront team like herald's own (herald's own alerts, which its alertmanager sink posts to the same Alertmanager, came back and were dropped)")
	alert := []map[string]any{{
		"labels": map[string]string{"alertname": "CheckoutErrorBudgetBurn", "namespace": ns, "deployment": "web", "severity": "critical"},
		"annotations": map[string]string{"summary": "checkout burns its error budget 14x too fast",
			"description": "5xx ratio 7% over the last hour (SLO 99.5%)", "runbook_url": "https://runbooks.example/checkout-slo"},
		"startsAt": time.Now().UTC().Format(time.RFC3339),
	}}
	body, _ := json.Marshal(alert)
	resp, err := http.Post(amURL+"/api/v2/alerts", "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("Alertmanager refused the alert: %s", resp.Status)
	}
	return expect(lines, seen, 60*time.Second, "FIRING", "CheckoutErrorBudgetBurn")
}
