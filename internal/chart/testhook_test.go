package chart

import (
	"strings"
	"testing"
)

// TestHelmTestPodMountsOnlyItsSinksSecrets: the helm test pod sends
// through the sinks in tests.send and mounts their Secrets, no other's
// (a Slack test needs no PagerDuty key), and calls no Kubernetes API.
func TestHelmTestPodMountsOnlyItsSinksSecrets(t *testing.T) {
	out, err := helm(t, "template", "herald", chartDir, "-n", "herald", "--kube-version", "1.36.0",
		"--show-only", "templates/tests/herald-test.yaml",
		"--set-json", `secrets=[{"name":"slack","existingSecret":"herald-slack"},{"name":"pd","existingSecret":"pagerduty-key"}]`,
		"--set-json", `config.sinks=[{"name":"slack","slack":{"token":{"file":"/var/run/secrets/herald/slack/token"}}},{"name":"page","pagerduty":{"routingKey":{"file":"/var/run/secrets/herald/pd/key"}}}]`,
		"--set-json", `tests.send=["slack"]`)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	for _, want := range []string{"--send, \"slack\"", "secretName: herald-slack", "mountPath: /var/run/secrets/herald/slack",
		"automountServiceAccountToken: false", "helm.sh/hook: test", "healthcheck, --wait=90s"} {
		if !strings.Contains(out, want) {
			t.Errorf("the test pod lacks %q:\n%s", want, out)
		}
	}
	for _, never := range []string{"pagerduty-key", "/var/run/secrets/herald/pd", "--send, \"page\""} {
		if strings.Contains(out, never) {
			t.Errorf("the test pod has %q, a Secret or sink it does not test:\n%s", never, out)
		}
	}
}
