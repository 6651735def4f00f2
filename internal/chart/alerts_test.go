package chart

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/herald-k8s/herald/internal/testenv"
)

// renderedDocs renders the chart with args and decodes its documents.
func renderedDocs(t *testing.T, args ...string) []map[string]any {
	t.Helper()
	out, err := helm(t, append([]string{"template", "herald", chartDir, "-n", "herald", "--kube-version", "1.36.0"}, args...)...)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	var docs []map[string]any
	dec := yaml.NewDecoder(strings.NewReader(out))
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); err != nil {
			break
		}
		if doc != nil {
			docs = append(docs, doc)
		}
	}
	return docs
}

// TestAlertRules renders the chart's PrometheusRule and has the real
// promtool check it (syntax, PromQL, templates) and run its unit tests
// (testdata/alerts_test.yaml: no leader, a sink giving up, a full queue).
func TestAlertRules(t *testing.T) {
	promtool, err := testenv.EnsurePromtool(context.Background(), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	var spec any
	for _, doc := range renderedDocs(t, "--set", "metrics.prometheusRule.enabled=true") {
		if doc["kind"] == "PrometheusRule" {
			spec = doc["spec"]
		}
	}
	if spec == nil {
		t.Fatal("no PrometheusRule rendered with metrics.prometheusRule.enabled=true")
	}
	dir := t.TempDir()
	rules, _ := yaml.Marshal(spec)
	os.WriteFile(filepath.Join(dir, "rules.yaml"), rules, 0o644)
	tests, err := os.ReadFile("testdata/alerts_test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "alerts_test.yaml"), tests, 0o644)
	for _, args := range [][]string{{"check", "rules", "rules.yaml"}, {"test", "rules", "alerts_test.yaml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("promtool %v: %v\n%s", args, err, out)
		} else {
			t.Logf("promtool %v:\n%s", args, out)
		}
	}
}
