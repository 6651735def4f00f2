package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLoadGood(t *testing.T) {
	cfg, err := Load("testdata/good.yaml")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if cfg.Workers != 2 {
		t.Errorf("Workers = %d, want 2", cfg.Workers)
	}
	r := cfg.Rules[0]
	if r.Name != "pod-crashloop" || r.Kind != "Pod" || r.Detector != "crashloop" || r.Severity != "critical" {
		t.Errorf("rule decoded wrong: %+v", r)
	}
	if got := r.Namespaces.Exclude; len(got) != 1 || got[0] != "kube-system" {
		t.Errorf("namespaces.exclude = %v", got)
	}
	if w := cfg.Sinks[0].Webhook; w == nil || w.URL != "https://hooks.example.com/herald" || w.Timeout != 5*time.Second {
		t.Errorf("webhook decoded wrong: %+v", w)
	}
	if s := cfg.Sinks[1]; s.Type() != "stdout" || s.Stdout.Format != DefaultStdoutFormat {
		t.Errorf("stdout sink decoded wrong: %+v", s)
	}
	if err := cfg.ErrorAt("rules[0].detector", "no such detector"); err.Error() != "testdata/good.yaml:5:15: rules[0].detector: no such detector" {
		t.Errorf("ErrorAt = %q", err)
	}
}

func TestLoadDefaults(t *testing.T) {
	cfg, err := Parse("inline.yaml", []byte("rules: [{name: r, kind: Pod, detector: crashloop, sinks: [h]}]\nsinks: [{name: h, webhook: {url: 'http://x'}}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Workers != DefaultWorkers || cfg.Rules[0].Severity != DefaultSeverity || cfg.Sinks[0].Webhook.Timeout != DefaultWebhookTimeout {
		t.Errorf("defaults not applied: %+v", cfg)
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		file string
		want []string
	}{
		{"unknown-key.yaml", []string{
			`testdata/unknown-key.yaml:6:5: rules[0].sevrity: unknown field "sevrity"; did you mean "severity"?`,
		}},
		{"wrong-type.yaml", []string{
			`testdata/wrong-type.yaml:1:10: workers: expected an integer, got string "four"`,
		}},
		{"missing-sink.yaml", []string{
			`testdata/missing-sink.yaml:5:18: rules[0].sinks[1]: unknown sink "pager"; defined sinks: ops`,
		}},
		{"bad-url.yaml", []string{
			`testdata/bad-url.yaml:9:12: sinks[0].webhook.url: URL must start with http:// or https://`,
		}},
		{"bad-duration.yaml", []string{
			`testdata/bad-duration.yaml:10:16: sinks[0].webhook.timeout: invalid duration "10 seconds": use a positive number with a unit, such as 30s or 5m`,
		}},
		{"unknown-key-far.yaml", []string{
			`testdata/unknown-key-far.yaml:3:5: sinks[0].victorops: unknown field "victorops"; valid fields here: name, webhook, slack, nats, stdout, alertmanager, pagerduty, teams, opsgenie, email, rateLimit, maxAge, queueSize`,
		}},
		{"secrets.yaml", []string{
			`testdata/secrets.yaml:6:21: sinks[0].slack.token.file: cannot read the secret: no such file or directory`,
			`testdata/secrets.yaml:12:19: sinks[1].webhook.secrets[0].value: a secret in the config body needs allowPlaintext: true; prefer file: or env:`,
			`testdata/secrets.yaml:13:17: sinks[1].webhook.secrets[1].env: environment variable HERALD_TEST_UNSET_VARIABLE is not set or empty`,
			`testdata/secrets.yaml:15:17: sinks[2].nats.url: must be nats://, tls://, ws:// or wss:// host:port`,
			`testdata/secrets.yaml:15:46: sinks[2].nats.subject: a publish subject cannot contain spaces or wildcards: "herald.>"`,
		}},
		{"syntax.yaml", []string{
			// yaml.v3 reports the line where the enclosing block starts
			// (1) and no column: the line is found again as the first
			// whose prefix of the file fails the same way.
			`testdata/syntax.yaml:4:4: YAML syntax error: did not find expected '-' indicator (check this line's indentation: a key lines up with the keys beside it, two spaces deeper than its parent)`,
		}},
		{"empty.yaml", []string{
			`testdata/empty.yaml:1:1: the file is empty: it needs at least rules and sinks (see examples/)`,
		}},
		{"many-errors.yaml", []string{
			`testdata/many-errors.yaml:2:11: rules[0].name: "Pod_Crash" is not a valid name: use lower-case letters, digits and '-'`,
			`testdata/many-errors.yaml:5:15: rules[0].severity: must be one of info, warning, critical; got "urgent"`,
			`testdata/many-errors.yaml:6:13: rules[0].sinks[0]: unknown sink "nowhere"; defined sinks: a`,
			`testdata/many-errors.yaml:7:5: rules[1]: a rule needs a kind, e.g. kind: Pod`,
			`testdata/many-errors.yaml:7:5: rules[1]: a rule needs at least one sink in sinks: (or a last route that takes everything)`,
			`testdata/many-errors.yaml:11:5: sinks[0]: a sink needs exactly one of: webhook, slack, nats, alertmanager, pagerduty, teams, opsgenie, email, stdout`,
			`testdata/many-errors.yaml:12:11: sinks[1].name: sink name "a" is used twice`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			_, err := Load(filepath.Join("testdata", tt.file))
			var errs Errors
			if !errors.As(err, &errs) {
				t.Fatalf("Load error = %v (%T), want config.Errors", err, err)
			}
			if len(errs) != len(tt.want) {
				t.Fatalf("got %d errors, want %d:\n%v", len(errs), len(tt.want), errs)
			}
			for i, e := range errs {
				if e.Error() != tt.want[i] {
					t.Errorf("error %d:\n got  %s\n want %s", i, e, tt.want[i])
				}
			}
		})
	}
}

func TestSecretsResolveAndNeverPrint(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	os.WriteFile(tokenFile, []byte("xoxb-very-secret\n"), 0o600)
	t.Setenv("HERALD_TEST_HOOK_SECRET", "whsec_c2VjcmV0")
	cfg, err := Parse("s.yaml", []byte(`
rules: [{name: r, kind: Pod, detector: crashloop, sinks: [slack, hook]}]
sinks:
  - name: slack
    slack: {token: {file: `+tokenFile+`}, channel: "#alerts"}
  - name: hook
    webhook: {url: "https://x", secrets: [{env: HERALD_TEST_HOOK_SECRET}, {value: raw, allowPlaintext: true}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	tok := cfg.Sinks[0].Slack.Token.Secret()
	if tok.Reveal() != "xoxb-very-secret" {
		t.Errorf("token = %q", tok.Reveal())
	}
	if got := fmt.Sprintf("%v %s %+v %#v", tok, tok, cfg.Sinks[0].Slack.Token, tok); strings.Contains(got, "very-secret") {
		t.Errorf("secret printed: %s", got)
	}
	if s := cfg.Sinks[1].Webhook.Secrets; s[0].Secret().Reveal() != "whsec_c2VjcmV0" || s[1].Secret().Reveal() != "raw" {
		t.Errorf("webhook secrets not resolved")
	}
	if cfg.Sinks[0].RateLimit != DefaultSlackRate || cfg.Sinks[1].RateLimit != 0 || cfg.Sinks[0].MaxAge != DefaultMaxAge {
		t.Errorf("sink defaults: %+v", cfg.Sinks)
	}
}

func TestEveryFieldDecodes(t *testing.T) {
	cfg, err := Load("testdata/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := cfg.Rules[0]
	if r.Repeat != 4*time.Hour || r.RestartStep != 10 || *r.For != time.Minute || r.GroupBy != "workload" || r.Namespaces.Labels != "env=prod" {
		t.Errorf("rule: %+v", r)
	}
	if s := cfg.Sinks[0]; s.RateLimit != 2.5 || s.QueueSize != 100 || !s.Webhook.CloudEvents || !s.Webhook.TLS.InsecureSkipVerify ||
		s.Webhook.HeadersFrom["Authorization"].Secret().Reveal() != "Bearer t0k3n" || !s.Webhook.Insecure {
		t.Errorf("webhook sink: %+v", s)
	}
	if a := cfg.Sinks[4].Alertmanager; a == nil || len(a.URLs) != 2 || a.ResendInterval != 30*time.Second || a.BasicAuth.Password.Secret().Reveal() != "pw" || a.Labels["env"] != "prod" {
		t.Errorf("alertmanager sink: %+v", cfg.Sinks[4].Alertmanager)
	}
	if p := cfg.Sinks[5].PagerDuty; p == nil || p.URL != DefaultPagerDutyURL || p.Timeout != DefaultWebhookTimeout || len(p.RoutingKey.Secret().Reveal()) != 32 {
		t.Errorf("pagerduty sink (with defaults): %+v", cfg.Sinks[5].PagerDuty)
	}
	if tm := cfg.Sinks[6].Teams; tm == nil || tm.Timeout != 6*time.Second || cfg.Sinks[6].Type() != "teams" {
		t.Errorf("teams sink: %+v", cfg.Sinks[6].Teams)
	}
	if cfg.Rules[0].AlertLabels["team"] != "payments" {
		t.Errorf("alertLabels: %v", cfg.Rules[0].AlertLabels)
	}
	if *cfg.Incidents.ResolveHoldDown != 30*time.Second || cfg.Incidents.Startup != "notify" {
		t.Errorf("incidents: %+v", cfg.Incidents)
	}
}

// TestVolumeStats: the defaults, and an interval, concurrency or timeout
// out of bounds refused at its line.
func TestVolumeStats(t *testing.T) {
	const rules = "rules: [{name: r, kind: Pod, detector: crashloop, sinks: [out]}]\n"
	cfg, err := Parse("v.yaml", []byte("sinks: [{name: out, stdout: {}}]\n"+rules))
	if err != nil {
		t.Fatal(err)
	}
	if v := cfg.VolumeStats; v.Interval != time.Minute || v.Concurrency != 4 || v.Timeout != 10*time.Second {
		t.Errorf("defaults %+v", v)
	}
	_, err = Parse("v.yaml", []byte("sinks: [{name: out, stdout: {}}]\nvolumeStats: {interval: 500ms, concurrency: 100, timeout: 2s}\n"+rules))
	for _, want := range []string{"v.yaml:2:25: volumeStats.interval: must be between 1s and 1h", "v.yaml:2:45: volumeStats.concurrency: must be between 1 and 64", "volumeStats.timeout: must be more than 0 and at most the interval (500ms), got 2s"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want %q", err, want)
		}
	}
}
