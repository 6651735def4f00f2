package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/herald-k8s/herald/internal/testenv"
)

var metricName = regexp.MustCompile(`\bherald_[a-z_]+`)

// monitoringQueries renders the chart's PrometheusRule and Grafana
// dashboard and returns every PromQL expression in them; the dashboard
// must be valid JSON.
func monitoringQueries(t *testing.T) []string {
	t.Helper()
	helmBin, err := testenv.EnsureHelm(context.Background(), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(helmBin, "template", "herald", "../../charts/herald", "-n", "herald", "--kube-version", "1.36.3",
		"--set", "metrics.prometheusRule.enabled=true", "--set", "metrics.grafanaDashboard.enabled=true")
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	var exprs []string
	dec := yaml.NewDecoder(strings.NewReader(string(out)))
	for {
		var doc struct {
			Kind string `yaml:"kind"`
			Spec struct {
				Groups []struct {
					Rules []struct {
						Expr string `yaml:"expr"`
					} `yaml:"rules"`
				} `yaml:"groups"`
			} `yaml:"spec"`
			Data map[string]string `yaml:"data"`
		}
		if dec.Decode(&doc) != nil {
			break
		}
		for _, g := range doc.Spec.Groups {
			for _, r := range g.Rules {
				exprs = append(exprs, r.Expr)
			}
		}
		if dash, ok := doc.Data["herald.json"]; ok && doc.Kind == "ConfigMap" {
			var d struct {
				Panels []struct {
					Title   string `json:"title"`
					Targets []struct {
						Expr string `json:"expr"`
					} `json:"targets"`
				} `json:"panels"`
			}
			if err := json.Unmarshal([]byte(dash), &d); err != nil {
				t.Fatalf("the dashboard is not valid JSON: %v", err)
			}
			for _, p := range d.Panels {
				if len(p.Targets) == 0 {
					t.Errorf("dashboard panel %q has no query", p.Title)
				}
				for _, q := range p.Targets {
					exprs = append(exprs, q.Expr)
				}
			}
		}
	}
	return exprs
}

// TestMonitoringUsesExposedMetrics: every metric the chart's alerts and
// dashboard query is one a running herald exposes. herald is driven so
// that the metrics that appear only once something happens do (a sink
// giving up, a failing CEL rule, merged updates, a flapping incident).
func TestMonitoringUsesExposedMetrics(t *testing.T) {
	beside(t)
	exprs := monitoringQueries(t)
	used := map[string]bool{}
	for _, e := range exprs {
		for _, name := range metricName.FindAllString(e, -1) {
			used[strings.TrimSuffix(name, "_bucket")] = true
		}
	}
	if len(used) < 10 {
		t.Fatalf("only %d metrics used by %d queries: %v", len(used), len(exprs), used)
	}

	env := controlPlanes.Get(t)
	client, _ := env.Client()
	recv := newReceiver(t)
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }))
	defer down.Close()
	createNamespaces(t, client, "shop")
	metrics := freeAddr(t)
	h := startedHerald(t, env, fmt.Sprintf(`
incidents: {resolveHoldDown: 0s, flapping: {starts: 2, window: 10m, quiet: 1m}}
rules:
  - {name: crash, kind: Pod, detector: crashloop, settle: 0s, namespaces: {include: [default]}, sinks: [hook, down]}
  - {name: shop, kind: Pod, detector: crashloop, groupBy: workload, updateInterval: 1m, namespaces: {include: [shop]}, sinks: [hook]}
  - {name: broken-cel, kind: Pod, condition: 'object.spec.missing.deep == 1', sinks: [hook]}
sinks:
  - {name: hook, webhook: {url: %s/herald}}
  - {name: down, webhook: {url: %s/down}, maxAge: 2s}
`, recv.URL, down.URL), "--metrics-addr", metrics)
	defer h.stop()
	// A problem that comes back: flapping. herald is level-triggered, so
	// each state is written once the last one was seen.
	crashPods(t, client, "flap", 1)
	if p := recv.next(t, 10*time.Second); p.Transition != "firing" {
		t.Fatalf("got %s, want firing", p.Transition)
	}
	for _, step := range []struct {
		state appState
		want  string
	}{{ready, "resolved"}, {crashLooping, "firing"}, {ready, "updated"}} {
		setStatus(t, client, "flap-0", step.state, 4)
		if p := recv.next(t, 10*time.Second); p.Transition != step.want {
			t.Fatalf("got %s (%q), want %s", p.Transition, p.Change, step.want)
		}
	}
	go func() { // from here on this test reads metrics, not notifications
		for range recv.got {
		}
	}()
	for _, pod := range deploymentPods(t, client, "shop", "api", 3) { // merged updates
		setStatusIn(t, client, "shop", pod, crashLooping, 2)
	}

	exposed := map[string]bool{}
	var missing []string
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		resp, err := http.Get("http://" + metrics + "/metrics")
		if err != nil {
			return false, nil
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, line := range strings.Split(string(body), "\n") {
			if name := metricName.FindString(line); name != "" && !strings.HasPrefix(line, "#") {
				exposed[regexp.MustCompile(`_(bucket|sum|count)$`).ReplaceAllString(name, "")] = true
			}
		}
		missing = missing[:0]
		for name := range used {
			if !exposed[name] {
				missing = append(missing, name)
			}
		}
		return len(missing) == 0, nil
	})
	if err != nil {
		slices.Sort(missing)
		t.Fatalf("the alerts or the dashboard query metrics herald does not expose: %v", missing)
	}
	t.Logf("%d queries use %d metrics, all exposed", len(exprs), len(used))
}
