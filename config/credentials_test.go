package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCredentialsOverPlainHTTP: a sink that authenticates (an
// Authorization header, in headers or headersFrom, any case; a user and
// password in the URL; Alertmanager's basic auth or bearer token; Slack's
// bot token) to an http:// address is refused at load, at the address's
// position, unless it says insecure: true; https:// is fine.
func TestCredentialsOverPlainHTTP(t *testing.T) {
	t.Setenv("HERALD_TEST_AUTH", "Bearer t0k3n")
	for _, tc := range []struct {
		name, sink, want string
	}{
		{"header over http", `webhook: {url: "http://hooks:8080/x", headers: {Authorization: "Bearer x"}}`,
			`s.yaml:4:20: sinks[0].webhook.url: sends the Authorization header over plain http://`},
		{"header from a secret over http", `webhook: {url: "http://hooks:8080/x", headersFrom: {authorization: {env: HERALD_TEST_AUTH}}}`,
			`sinks[0].webhook.url: sends the authorization header over plain http://`},
		{"user and password in the URL", `webhook: {url: "http://u:pw@hooks:8080/x"}`,
			`sinks[0].webhook.url: sends the user and password in the URL over plain http://`},
		{"url from a secret", `webhook: {urlFrom: {value: "http://u:pw@hooks/x", allowPlaintext: true}}`,
			`sinks[0].webhook.urlFrom: sends the user and password in the URL`},
		{"alertmanager bearer token", `alertmanager: {urls: ["https://am-0:9093", "http://am-1:9093"], bearerToken: {env: HERALD_TEST_AUTH}}`,
			`sinks[0].alertmanager.urls[1]: sends a bearer token over plain http://`},
		{"alertmanager basic auth", `alertmanager: {urls: ["http://am:9093"], basicAuth: {username: u, password: {env: HERALD_TEST_AUTH}}}`,
			`sinks[0].alertmanager.urls[0]: sends basic auth over plain http://`},
		{"slack token", `slack: {token: {env: HERALD_TEST_AUTH}, channel: "#a", apiURL: "http://slack-proxy/api"}`,
			`sinks[0].slack.apiURL: sends the bot token over plain http://`},
		{"https", `webhook: {url: "https://hooks/x", headersFrom: {Authorization: {env: HERALD_TEST_AUTH}}}`, ""},
		{"http without credentials", `webhook: {url: "http://hooks/x", headers: {X-Team: shop}}`, ""},
		{"insecure webhook", `webhook: {url: "http://hooks/x", headers: {Authorization: "Bearer x"}, insecure: true}`, ""},
		{"insecure alertmanager", `alertmanager: {urls: ["http://am:9093"], bearerToken: {env: HERALD_TEST_AUTH}, insecure: true}`, ""},
		{"insecure slack", `slack: {token: {env: HERALD_TEST_AUTH}, channel: "#a", apiURL: "http://127.0.0.1:1/api", insecure: true}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("s.yaml", []byte("rules: [{name: r, kind: Pod, detector: crashloop, sinks: [s]}]\nsinks:\n  - name: s\n    "+tc.sink+"\n"))
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want %q", err, tc.want)
			case err != nil && strings.Contains(err.Error(), "t0k3n"):
				t.Errorf("the error repeats the secret: %v", err)
			}
		})
	}
}

// TestHeadersFrom: header values read from a file or the environment;
// bad names, a header set twice, a value with a line break and a missing
// reference are each reported at their position.
func TestHeadersFrom(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "api-key")
	os.WriteFile(keyFile, []byte("k3y-from-file\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "two-lines"), []byte("a\r\nInjected: yes"), 0o600)
	t.Setenv("HERALD_TEST_AUTH", "Bearer t0k3n")
	cfg, err := Parse("s.yaml", []byte(`
rules: [{name: r, kind: Pod, detector: crashloop, sinks: [s]}]
sinks:
  - name: s
    webhook:
      url: https://hooks/x
      headers: {X-Team: shop}
      headersFrom: {Authorization: {env: HERALD_TEST_AUTH}, X-Api-Key: {file: `+keyFile+`}}
`))
	if err != nil {
		t.Fatal(err)
	}
	from := cfg.Sinks[0].Webhook.HeadersFrom
	if from["Authorization"].Secret().Reveal() != "Bearer t0k3n" || from["X-Api-Key"].Secret().Reveal() != "k3y-from-file" {
		t.Errorf("headersFrom not read: %v", from)
	}
	_, err = Parse("s.yaml", []byte(`
rules: [{name: r, kind: Pod, detector: crashloop, sinks: [s]}]
sinks:
  - name: s
    webhook:
      url: https://hooks/x
      headers: {x-team: shop}
      headersFrom:
        "Bad Name": {env: HERALD_TEST_AUTH}
        X-Team: {env: HERALD_TEST_AUTH}
        X-Split: {file: `+filepath.Join(dir, "two-lines")+`}
        X-Nothing:
`))
	for _, want := range []string{
		`s.yaml:9:21: sinks[0].webhook.headersFrom.Bad Name: "Bad Name" is not a valid header name`,
		`s.yaml:10:17: sinks[0].webhook.headersFrom.X-Team: header X-Team is set in headers too`,
		`sinks[0].webhook.headersFrom.X-Split: the secret read for header X-Split holds a line break`,
		`sinks[0].webhook.headersFrom.X-Nothing: a header from a secret needs {file: …} or {env: …}`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("errors %v\nwant %q", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), "Injected") {
		t.Errorf("an error repeats the secret: %v", err)
	}
}

// TestLoadForSinkReadsOnlyItsSecrets: herald test --send of one sink
// needs that sink's secrets and no other's.
func TestLoadForSinkReadsOnlyItsSecrets(t *testing.T) {
	dir := t.TempDir()
	token := filepath.Join(dir, "slack-token")
	if err := os.WriteFile(token, []byte("xoxb-123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "herald.yaml")
	body := `rules: [{name: crash, kind: Pod, detector: crashloop, sinks: [chat, page]}]
sinks:
  - {name: chat, slack: {channel: "#a", token: {file: ` + token + `}}}
  - {name: page, pagerduty: {routingKey: {file: /nonexistent/pagerduty/key}}}
`
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "sinks[1].pagerduty.routingKey.file") {
		t.Fatalf("Load: %v; want the missing PagerDuty key", err)
	}
	cfg, err := LoadForSink(path, "chat")
	if err != nil {
		t.Fatalf("LoadForSink(chat): %v", err)
	}
	if got := cfg.Sinks[0].Slack.Token.Secret().Reveal(); got != "xoxb-123" {
		t.Errorf("chat's token %q, want it read", got)
	}
	if _, err := LoadForSink(path, "page"); err == nil || !strings.Contains(err.Error(), "sinks[1].pagerduty.routingKey.file") {
		t.Errorf("LoadForSink(page): %v; want its missing key", err)
	}
}
