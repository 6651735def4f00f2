package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunBadConfigExitsBeforeConnecting points herald at a listener that
// counts connections: a bad config must exit 1 with the positioned error
// and never dial the API server.
func TestRunBadConfigExitsBeforeConnecting(t *testing.T) {
	beside(t)
	kc, conns := countingAPIServer(t)
	tests := []struct{ file, want string }{
		{"../../config/testdata/missing-sink.yaml", `missing-sink.yaml:5:18: rules[0].sinks[1]: unknown sink "pager"`},
		{"../../config/testdata/unknown-key.yaml", `unknown-key.yaml:6:5: rules[0].sevrity: unknown field "sevrity"; did you mean "severity"?`},
		{"testdata/unknown-detector.yaml", `unknown-detector.yaml:4:15: rules[0].detector: unknown detector "crashlop" for kind Pod; available: container-error, crashloop, evicted`},
		{"testdata/does-not-exist.yaml", `no such file or directory`},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.file), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := runMain(context.Background(), []string{"run", "--config", tt.file, "--kubeconfig", kc}, &stdout, &stderr)
			if code != 1 {
				t.Errorf("exit code %d, want 1", code)
			}
			if !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("stderr = %q, want it to contain %q", stderr.String(), tt.want)
			}
			if n := conns.Load(); n != 0 {
				t.Errorf("herald made %d connections to the API server with a bad config", n)
			}
		})
	}
}

// TestValidate checks every example under examples/ (what docs/rules.md
// shows) and a bad file.
func TestValidate(t *testing.T) {
	// The examples read their secrets from the environment, as in a pod.
	t.Setenv("SLACK_BOT_TOKEN", "xoxb-example")
	t.Setenv("HERALD_WEBHOOK_SECRET", "whsec_c2VjcmV0")
	var stdout, stderr bytes.Buffer
	examples, _ := filepath.Glob("../../examples/*.yaml")
	if len(examples) < 4 {
		t.Fatalf("found %d examples", len(examples))
	}
	for _, ex := range examples {
		if code := runMain(context.Background(), []string{"validate", "-f", ex}, &stdout, &stderr); code != 0 {
			t.Errorf("validate %s: exit %d: %s", ex, code, stderr.String())
		}
	}
	stdout.Reset()
	stderr.Reset()
	if code := runMain(context.Background(), []string{"validate", "-f", "testdata/unknown-detector.yaml"}, &stdout, &stderr); code != 1 {
		t.Errorf("validate of a bad file: exit %d, want 1", code)
	}
}

// TestValidateOffline: with none of the secrets in the environment (a CI
// pipeline), plain validate fails on the examples and validate --offline
// passes, listing what herald will read at start.
func TestValidateOffline(t *testing.T) {
	for _, v := range []string{"SLACK_BOT_TOKEN", "HERALD_WEBHOOK_SECRET"} {
		t.Setenv(v, "")
		os.Unsetenv(v) // restored by Setenv's cleanup
	}
	examples, _ := filepath.Glob("../../examples/*.yaml")
	listed := ""
	for _, ex := range examples {
		var stdout, stderr bytes.Buffer
		if code := runMain(context.Background(), []string{"validate", "--offline", "-f", ex}, &stdout, &stderr); code != 0 {
			t.Errorf("validate --offline %s: exit %d: %s", ex, code, stderr.String())
		}
		listed += stdout.String()
	}
	for _, want := range []string{"sinks[0].slack.token: env SLACK_BOT_TOKEN", "sinks[0].webhook.secrets[0]: env HERALD_WEBHOOK_SECRET"} {
		if !strings.Contains(listed, want) {
			t.Errorf("validate --offline does not list %q:\n%s", want, listed)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := runMain(context.Background(), []string{"validate", "-f", "../../examples/crash-to-slack.yaml"}, &stdout, &stderr); code != 1 ||
		!strings.Contains(stderr.String(), "environment variable SLACK_BOT_TOKEN is not set or empty") {
		t.Errorf("plain validate without the secret: exit %d, %s; want 1 naming the variable", code, stderr.String())
	}
}

func TestVersion(t *testing.T) {
	beside(t)
	var stdout bytes.Buffer
	if code := runMain(context.Background(), []string{"version"}, &stdout, &stdout); code != 0 || stdout.String() != "herald dev\n" {
		t.Errorf("version: exit %d, output %q", code, stdout.String())
	}
}

// TestDryRun runs herald test on objects from files: the rules that fire
// and their exact messages, nothing sent.
func TestDryRun(t *testing.T) {
	beside(t)
	var stdout, stderr bytes.Buffer
	code := runMain(context.Background(), []string{"test", "-f", "testdata/dry-run.yaml",
		"--object", "../../internal/rules/testdata/objects/crashloop.yaml",
		"--object", "testdata/widgets.yaml"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	want := `Pod shop/web: rule crash FIRES [critical → out]
  title: CrashLoopBackOff: Pod shop/web container app
  text:  CrashLoopBackOff: Pod shop/web container app: restarted 5 times, last exit code 2 (Error)
Widget default/w1: rule widget-broken FIRES [warning → out]
  title: Widget w1 is broken
  text:  WidgetBroken: Widget default/w1
Widget default/w2: no rule fires
3 objects tested, 2 findings
`
	if stdout.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", stdout.String(), want)
	}
}

// TestRunBadFlagExitsTwo: a flag value herald cannot use is a usage
// error (exit 2) that names the flag, before anything is read or dialled.
func TestRunBadFlagExitsTwo(t *testing.T) {
	beside(t)
	kc, conns := countingAPIServer(t)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--kube-log-verbosity", "-1"}, "--kube-log-verbosity -1: want 0 or more"},
		// Request and answer bodies (Secrets) in the log: refused unless forced.
		{[]string{"--kube-log-verbosity", "8"}, "--kube-log-verbosity 8: above 5 the Kubernetes client logs request URLs, headers and, from 8, the bodies"},
		{[]string{"--kube-log-verbosity", "6"}, "add --force-kube-log-verbosity"},
		{[]string{"--log-level", "loud"}, "--log-level"},
	} {
		var stdout, stderr bytes.Buffer
		args := append([]string{"run", "--config", "../../examples/demo.yaml", "--kubeconfig", kc}, tt.args...)
		if code := runMain(context.Background(), args, &stdout, &stderr); code != 2 {
			t.Errorf("%v: exit code %d, want 2", tt.args, code)
		}
		if !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("%v: stderr = %q, want it to contain %q", tt.args, stderr.String(), tt.want)
		}
	}
	if n := conns.Load(); n != 0 {
		t.Errorf("herald made %d connections to the API server with a bad flag", n)
	}
}

// TestExampleObjects: the sample objects file, through an example
// configuration, with none of its secrets at hand (a laptop): the crash
// loop fires, the healthy pod does not, and nothing asks for the token.
func TestExampleObjects(t *testing.T) {
	t.Setenv("SLACK_BOT_TOKEN", "")
	os.Unsetenv("SLACK_BOT_TOKEN") // restored by Setenv's cleanup
	var stdout, stderr bytes.Buffer
	code := runMain(context.Background(), []string{"test", "-f", "../../examples/crash-to-slack.yaml",
		"--object", "../../examples/objects/broken-shop.yaml"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, stdout.String(), stderr.String())
	}
	for _, want := range []string{"Pod shop/checkout-7d9f8b6c5-x2x9q: rule pod-crashloop FIRES", "Pod shop/cart-5b7c9d-4kq2m: rule pod-image-pull FIRES AFTER for: 2m0s",
		"Pod shop/search-6f8d7c-p9x2w: no rule fires", "3 objects tested, 2 findings"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("herald test lacks %q:\n%s", want, stdout.String())
		}
	}
}

// TestDryRunRuleErrorsFail: a rule that cannot be evaluated on an object
// makes herald test exit 1, as a CI pipeline needs.
func TestDryRunRuleErrorsFail(t *testing.T) {
	beside(t)
	dir := t.TempDir()
	config := filepath.Join(dir, "herald.yaml")
	// The condition compiles, but reading a label the pod does not have
	// fails at evaluation.
	if err := os.WriteFile(config, []byte(`rules: [{name: by-label, kind: Pod, condition: 'object.metadata.labels["team"] == "shop"', sinks: [out]}]
sinks: [{name: out, stdout: {}}]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := runMain(context.Background(), []string{"test", "-f", config, "--object", "../../examples/objects/broken-shop.yaml"}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stdout.String(), "ERROR") || !strings.Contains(stderr.String(), "rule evaluations failed") {
		t.Errorf("exit %d:\n%s%s; want 1 with the ERROR lines counted", code, stdout.String(), stderr.String())
	}
}

// TestHeraldTestPrintsNothingRaw: a tenant's pod whose termination
// message holds terminal escapes (an OSC 52 clipboard write, a screen
// clear, a bidi override), shown by a rule's text: herald test prints the
// message without them.
func TestHeraldTestPrintsNothingRaw(t *testing.T) {
	beside(t)
	dir := t.TempDir()
	config, objects := filepath.Join(dir, "herald.yaml"), filepath.Join(dir, "pod.yaml")
	if err := os.WriteFile(config, []byte("rules: [{name: crash, kind: Pod, detector: crashloop, sinks: [out], message: {text: '{{ index .Facts \"lastMessage\" }}'}}]\nsinks: [{name: out, stdout: {}}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	pod := `apiVersion: v1
kind: Pod
metadata: {name: "evil", namespace: shop}
status:
  containerStatuses:
  - name: app
    restartCount: 5
    state: {waiting: {reason: CrashLoopBackOff}}
    lastState: {terminated: {exitCode: 1, reason: Error, message: "boom\e]52;c;Y3VybCBldmlsfHNo\a\e[2J\u202egnp.exe\nrule crash FIRES forged"}}
`
	if err := os.WriteFile(objects, []byte(pod), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := runMain(context.Background(), []string{"test", "-f", config, "--object", objects}, &stdout, &stderr)
	out := stdout.String() + stderr.String()
	if code != 0 || !strings.Contains(out, "rule crash FIRES") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for _, raw := range []string{"\x1b", "\a", "\u202e"} {
		if strings.Contains(out, raw) {
			t.Errorf("herald test printed %q raw:\n%q", raw, out)
		}
	}
	if !strings.Contains(out, "boom]52;c;Y3VybCBldmlsfHNo[2Jgnp.exe") {
		t.Errorf("the message is not shown without its controls:\n%s", out)
	}
}
