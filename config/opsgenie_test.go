package config

import (
	"strings"
	"testing"
)

// TestOpsgenie: the region picks the API's address (US by default), url
// overrides it (Jira Service Management's); a missing key, an unknown
// region or responder type are errors where they are written.
func TestOpsgenie(t *testing.T) {
	parse := func(block string) (*Config, error) {
		return Parse("herald.yaml", []byte("rules:\n  - {name: r, kind: Pod, detector: crashloop, sinks: [og]}\nsinks:\n  - name: og\n    opsgenie: "+block+"\n"))
	}
	for block, want := range map[string]string{
		"{apiKey: {value: k, allowPlaintext: true}}":                                                       OpsgenieUS,
		"{apiKey: {value: k, allowPlaintext: true}, region: eu}":                                           OpsgenieEU,
		"{apiKey: {value: k, allowPlaintext: true}, url: 'https://api.atlassian.com/jsm/ops/integration'}": "https://api.atlassian.com/jsm/ops/integration",
	} {
		cfg, err := parse(block)
		if err != nil {
			t.Fatalf("%s: %v", block, err)
		}
		if got := cfg.Sinks[0].Opsgenie.URL; got != want {
			t.Errorf("%s: url %s, want %s", block, got, want)
		}
	}
	for block, want := range map[string]string{
		"{region: eu}": "herald.yaml:5:15: sinks[0].opsgenie: an opsgenie sink needs an apiKey",
		"{apiKey: {value: k, allowPlaintext: true}, region: asia}":                              "sinks[0].opsgenie.region: must be us or eu",
		"{apiKey: {value: k, allowPlaintext: true}, responders: [{type: group, name: x}]}":      "sinks[0].opsgenie.responders[0].type: must be team, user, escalation or schedule",
		"{apiKey: {value: k, allowPlaintext: true}, responders: [{type: team}]}":                "sinks[0].opsgenie.responders[0].name: a responder needs a name",
		"{apiKey: {value: k, allowPlaintext: true}, url: 'ftp://x'}":                            "sinks[0].opsgenie.url: URL must start with http:// or https://",
		"{apiKey: {value: k, allowPlaintext: true}, url: 'http://api.opsgenie.example'}":        "sinks[0].opsgenie.url: sends the API key (Authorization: GenieKey) over plain http://",
		"{apiKey: {value: k, allowPlaintext: true}, tags: ['" + strings.Repeat("t", 51) + "']}": "sinks[0].opsgenie.tags[0]: a tag is 1 to 50 characters",
	} {
		if _, err := parse(block); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", block, err, want)
		}
	}
}
