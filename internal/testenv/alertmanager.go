package testenv

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// AlertmanagerVersion is the Alertmanager the alertmanager sink is tested
// against: the newest release whose module builds with go install (later
// ones embed a web UI that is built outside Go and not in the module).
const AlertmanagerVersion = "v0.31.1"

// EnsureAlertmanager returns the alertmanager binary, built from the Go
// module proxy into the cache first if needed (about 2 min cold).
func EnsureAlertmanager(ctx context.Context, logf func(format string, args ...any)) (string, error) {
	return ensureInstalled(ctx, logf, "alertmanager", "github.com/prometheus/alertmanager/cmd/alertmanager", AlertmanagerVersion)
}

// Alertmanager is a real Alertmanager on a loopback port.
type Alertmanager struct {
	// URL is its base address, http://127.0.0.1:<port>.
	URL  string
	proc *process
}

// StartAlertmanager runs one Alertmanager for the test (RunAlertmanager)
// and stops it when the test ends.
func StartAlertmanager(t testing.TB, resolveTimeout time.Duration) *Alertmanager {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	am, err := RunAlertmanager(ctx, t.TempDir(), resolveTimeout, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(am.Stop)
	return am
}

// RunAlertmanager runs one Alertmanager in dir, alone (no clustering:
// Prometheus-style senders post to every replica, which is what herald
// does too), with resolveTimeout as its global resolve_timeout and a
// receiver that sends nowhere. Stop it with Stop.
func RunAlertmanager(ctx context.Context, dir string, resolveTimeout time.Duration, logf func(format string, args ...any)) (*Alertmanager, error) {
	cfg := fmt.Sprintf("global:\n  resolve_timeout: %s\nroute:\n  receiver: nowhere\n  group_wait: 1s\nreceivers:\n  - name: nowhere\n", resolveTimeout)
	return RunAlertmanagerWith(ctx, dir, cfg, logf)
}

// RunAlertmanagerWith runs one Alertmanager in dir, alone, with cfg as
// its configuration file (receivers that send somewhere: a test's).
func RunAlertmanagerWith(ctx context.Context, dir, cfg string, logf func(format string, args ...any)) (*Alertmanager, error) {
	bin, err := EnsureAlertmanager(ctx, logf)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "alertmanager.yml"), []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	for attempt := range 3 { // a port taken between freePorts and the bind: try another
		ports, err := freePorts(1)
		if err != nil {
			return nil, err
		}
		url := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
		proc, err := startProcess(bin, filepath.Join(dir, fmt.Sprintf("alertmanager-%d.log", attempt)),
			"--config.file="+filepath.Join(dir, "alertmanager.yml"),
			"--storage.path="+filepath.Join(dir, "data"),
			fmt.Sprintf("--web.listen-address=127.0.0.1:%d", ports[0]),
			"--cluster.listen-address=", // alone
			"--log.level=warn",
		)
		if err != nil {
			return nil, err
		}
		if waitReady(url+"/-/ready", proc, 30*time.Second) {
			return &Alertmanager{URL: url, proc: proc}, nil
		}
		logf("alertmanager did not start:\n%s", proc.tail(20))
		proc.stop()
	}
	return nil, fmt.Errorf("alertmanager did not become ready (logs in %s)", dir)
}

// Stop stops the Alertmanager.
func (am *Alertmanager) Stop() { am.proc.stop() }

// waitReady polls readyURL (Alertmanager's /-/ready, Mailpit's /readyz)
// until it answers 200, the process exits, or the time is up.
func waitReady(readyURL string, proc *process, within time.Duration) bool {
	deadline := time.Now().Add(within)
	client := &http.Client{Timeout: time.Second}
	for time.Now().Before(deadline) {
		select {
		case <-proc.exited:
			return false
		default:
		}
		if resp, err := client.Get(readyURL); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true
			}
		}
		select {
		case <-proc.exited:
			return false
		case <-time.After(100 * time.Millisecond):
		}
	}
	return false
}

// WebhookRoute is an Alertmanager route that sends every alert to one
// webhook receiver with a bearer token read from a file, as
// kube-prometheus-stack's route to herald's intake does
// (docs/prometheus.md).
type WebhookRoute struct {
	URL, TokenFile string
	GroupBy        []string
	// GroupWait and GroupInterval: Alertmanager's; short in tests.
	GroupWait, GroupInterval time.Duration
}

// Config is the route as Alertmanager's configuration file.
func (w WebhookRoute) Config() string {
	return fmt.Sprintf(`route:
  receiver: webhook
  group_by: [%s]
  group_wait: %s
  group_interval: %s
  repeat_interval: 1h
receivers:
  - name: webhook
    webhook_configs:
      - url: %s
        send_resolved: true
        http_config:
          authorization: {type: Bearer, credentials_file: %q}
`, strings.Join(w.GroupBy, ", "), w.GroupWait, w.GroupInterval, w.URL, w.TokenFile)
}
