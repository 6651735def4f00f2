package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/herald-k8s/herald/internal/oncalltest"
	"github.com/herald-k8s/herald/sinks/webhook"
)

// evidence collects everything herald said to the outside world.
type evidence struct {
	mu    sync.Mutex
	parts map[string]*bytes.Buffer
}

func (e *evidence) add(where string, b []byte) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.parts[where] == nil {
		e.parts[where] = &bytes.Buffer{}
	}
	e.parts[where].Write(b)
	e.parts[where].WriteByte('\n')
}

// TestSecretsNeverLeak gives herald a Slack token, a webhook signing
// secret, a webhook URL holding a token, and a NATS nkey seed; shows each
// is used (the Slack server sees the token, the receiver verifies the
// signature, the URL's path is hit, the NATS server admits the nkey);
// makes every sink fail once so that errors are logged at debug level;
// and then finds none of the secrets in `herald validate`, a config
// error, the logs, /metrics, /healthz, /readyz, any notification content
// or the ledger.
func TestSecretsNeverLeak(t *testing.T) {
	dir := t.TempDir()
	ev := &evidence{parts: map[string]*bytes.Buffer{}}
	slackToken := "xoxb-1111-2222-SLACKSECRETTOKEN"
	signingKey := []byte("webhook-signing-key-SECRET")
	webhookSecret := "whsec_" + base64.StdEncoding.EncodeToString(signingKey)
	urlToken := "URLTOKENSECRET9876"
	user, _ := nkeys.CreateUser()
	seed, _ := user.Seed()
	pub, _ := user.PublicKey()
	routingKey := "PDROUTINGKEYSECRET0123456789abcd"
	amToken := "ALERTMANAGER-BEARER-SECRET"
	hookKey := "WEBHOOK-HEADER-API-KEY-SECRET"
	secrets := map[string]string{"webhook header (headersFrom)": hookKey, "slack token": slackToken, "webhook secret": webhookSecret,
		"webhook signing key": string(signingKey), "webhook URL token": urlToken, "nkey seed": string(seed),
		"pagerduty routing key": routingKey, "teams URL signature": "SECRET-SIGNATURE", "alertmanager token": amToken}

	// PagerDuty throttles the first event; Teams fails the first card.
	pd := oncalltest.NewPagerDuty(t)
	pd.Throttle(1, "1")
	teams := oncalltest.NewTeams(t)
	teams.Fail(1)
	// Alertmanager (behind a proxy that wants the token): 502 once.
	var amCalls, amAuthorised atomic.Int32
	amSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ev.add("alertmanager alerts", body)
		if r.Header.Get("Authorization") == "Bearer "+amToken {
			amAuthorised.Add(1)
		}
		if amCalls.Add(1) == 1 {
			http.Error(w, "bad gateway", http.StatusBadGateway)
		}
	}))
	defer amSrv.Close()

	// Slack: the first call fails, the rest succeed; the token must be
	// the bearer of every call.
	var slackCalls, slackAuthorised atomic.Int32
	slackSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		ev.add("slack message", []byte(r.Form.Get("text")+r.Form.Get("blocks")))
		if r.Header.Get("Authorization") == "Bearer "+slackToken || r.Form.Get("token") == slackToken {
			slackAuthorised.Add(1)
		}
		if slackCalls.Add(1) == 1 {
			http.Error(w, "upstream trouble", http.StatusInternalServerError)
			return
		}
		fmt.Fprint(w, `{"ok":true,"channel":"C1","ts":"1700000000.000100"}`)
	}))
	defer slackSrv.Close()

	// Webhook: 503 once, then checks the signature with the key.
	var hookCalls, hookVerified, hookKeyed atomic.Int32
	hookSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ev.add("webhook payload", body)
		if r.Header.Get("X-Api-Key") == hookKey {
			hookKeyed.Add(1)
		}
		if r.URL.Path != "/hook/"+urlToken {
			http.Error(w, "wrong path", http.StatusNotFound)
			return
		}
		if hookCalls.Add(1) == 1 {
			http.Error(w, "try later", http.StatusServiceUnavailable)
			return
		}
		if webhook.Verify(signingKey, r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp"), r.Header.Get("webhook-signature"), body, time.Now(), time.Minute) == nil {
			hookVerified.Add(1)
		}
	}))
	defer hookSrv.Close()

	// NATS: only the nkey user may connect.
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoSigs: true, Nkeys: []*server.NkeyUser{{Nkey: pub}}})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	defer ns.Shutdown()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	opt, err := nats.NkeyOptionFromSeed(writeFile(t, dir, "seed", string(seed)))
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(ns.ClientURL(), opt)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	natsGot := make(chan []byte, 10)
	nc.Subscribe("herald.>", func(m *nats.Msg) { ev.add("nats payload", m.Data); natsGot <- m.Data })
	nc.Flush()

	t.Setenv("HERALD_TEST_WEBHOOK_SECRET", webhookSecret)
	t.Setenv("HERALD_TEST_AM_TOKEN", amToken)
	cfg := fmt.Sprintf(`
rules:
  - {name: crash, kind: Pod, detector: crashloop, sinks: [chat, hook, bus, page, cards, am]}
sinks:
  - name: chat
    slack: {channel: "#alerts", apiURL: %q, token: {file: %s}, insecure: true}
  - name: hook
    webhook:
      urlFrom: {file: %s}
      headersFrom: {X-Api-Key: {file: %s}}
      secrets: [{env: HERALD_TEST_WEBHOOK_SECRET}]
  - name: bus
    nats: {url: %q, nkeySeed: {file: %s}}
  - name: page
    pagerduty: {routingKey: {file: %s}, url: %q}
  - name: cards
    teams: {urlFrom: {file: %s}}
  - name: am
    alertmanager: {urls: [%q], bearerToken: {env: HERALD_TEST_AM_TOKEN}, insecure: true}
`, slackSrv.URL+"/api/", writeFile(t, dir, "token", slackToken), writeFile(t, dir, "url", hookSrv.URL+"/hook/"+urlToken), writeFile(t, dir, "hook-key", hookKey),
		ns.ClientURL(), writeFile(t, dir, "seed", string(seed)), writeFile(t, dir, "routing-key", routingKey), pd.URL,
		writeFile(t, dir, "teams-url", teams.URL), amSrv.URL)
	cfgPath := writeFile(t, dir, "herald.yaml", cfg)

	var out, errOut bytes.Buffer
	if code := runMain(context.Background(), []string{"validate", "--config", cfgPath}, &out, &errOut); code != 0 {
		t.Fatalf("validate: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	ev.add("herald validate", append(out.Bytes(), errOut.Bytes()...))
	// Offline, with one secret in the config body too: listed by where
	// it comes from, never by value.
	inline := writeFile(t, dir, "inline.yaml", strings.Replace(cfg, "secrets: [{env: HERALD_TEST_WEBHOOK_SECRET}]",
		fmt.Sprintf("secrets: [{env: HERALD_TEST_WEBHOOK_SECRET}, {value: %q, allowPlaintext: true}]", webhookSecret), 1))
	for _, file := range []string{cfgPath, inline} {
		out.Reset()
		errOut.Reset()
		if code := runMain(context.Background(), []string{"validate", "--offline", "--config", file}, &out, &errOut); code != 0 {
			t.Fatalf("validate --offline: exit %d\n%s%s", code, out.String(), errOut.String())
		}
		if !strings.Contains(out.String(), "sinks[1].webhook.secrets[0]: env HERALD_TEST_WEBHOOK_SECRET") || !strings.Contains(out.String(), "sinks[0].slack.token: file ") {
			t.Errorf("validate --offline does not list the secrets:\n%s", out.String())
		}
		ev.add("herald validate --offline", append(out.Bytes(), errOut.Bytes()...))
	}
	out.Reset()
	errOut.Reset()
	broken := writeFile(t, dir, "broken.yaml", cfg+"workers: many\n")
	runMain(context.Background(), []string{"validate", "--config", broken}, &out, &errOut)
	ev.add("config error", append(out.Bytes(), errOut.Bytes()...))

	env := controlPlanes.Get(t)
	client, _ := env.Client()
	h := startedHerald(t, env, cfg, "--log-level", "debug")
	defer h.stop()
	ctx := context.Background()
	if _, err := client.CoreV1().Pods("default").Create(ctx, newPod("leaky"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	setStatus(t, client, "leaky", crashLooping, 4)
	select {
	case <-natsGot:
	case <-time.After(30 * time.Second):
		t.Fatal("no NATS message: the nkey seed was not used")
	}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		return hookVerified.Load() >= 1 && slackCalls.Load() >= 2 && len(pd.Events()) >= 1 && len(teams.Cards()) >= 1 && amCalls.Load() >= 2, nil
	})
	if err != nil {
		t.Fatalf("not every sink recovered: slack calls %d, signed webhooks verified %d, PagerDuty events %d, Teams cards %d, Alertmanager posts %d",
			slackCalls.Load(), hookVerified.Load(), len(pd.Events()), len(teams.Cards()), amCalls.Load())
	}
	if hookKeyed.Load() != hookCalls.Load() {
		t.Errorf("%d of %d webhook calls carried the header from headersFrom", hookKeyed.Load(), hookCalls.Load())
	}
	if pd.Events()[0].RoutingKey != routingKey || amAuthorised.Load() != amCalls.Load() {
		t.Errorf("the PagerDuty routing key or the Alertmanager token was not used")
	}
	for _, c := range teams.Cards() {
		b, _ := json.Marshal(c)
		ev.add("teams card", b)
	}
	if slackAuthorised.Load() != slackCalls.Load() {
		t.Errorf("%d of %d Slack calls carried the token", slackAuthorised.Load(), slackCalls.Load())
	}

	addr := regexp.MustCompile(`msg="serving metrics and health" addr=(\S+)`).FindStringSubmatch(h.logs.String())
	if addr == nil {
		t.Fatalf("no metrics address in the logs:\n%s", h.logs)
	}
	for _, path := range []string{"/metrics", "/healthz", "/readyz"} {
		resp, err := http.Get("http://" + addr[1] + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		ev.add(path, body)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		cms, err := client.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=herald-ledger"})
		if err != nil || len(cms.Items) == 0 {
			return false, nil
		}
		for _, cm := range cms.Items {
			for _, v := range cm.Data {
				ev.add("ledger", []byte(v))
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatal("no ledger ConfigMap was written")
	}
	h.stop()
	ev.add("logs", []byte(h.logs.String()))
	if !strings.Contains(h.logs.String(), "level=DEBUG") || !strings.Contains(h.logs.String(), "503") || !strings.Contains(h.logs.String(), "HTTP 429") || !strings.Contains(h.logs.String(), "HTTP 502") {
		t.Errorf("the logs have no debug lines or no sink failure; the search below would prove little")
	}

	ev.mu.Lock()
	defer ev.mu.Unlock()
	for _, where := range []string{"herald validate", "herald validate --offline", "config error", "logs", "/metrics", "/healthz", "/readyz", "slack message", "webhook payload", "nats payload", "ledger", "teams card", "alertmanager alerts"} {
		text := ev.parts[where].String()
		if len(text) < 2 {
			t.Errorf("nothing collected from %s", where)
		}
		for what, secret := range secrets {
			if strings.Contains(text, secret) {
				t.Errorf("the %s appears in %s", what, where)
			}
		}
	}
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestInsecureTLSIsAWarning: certificate verification is on unless a sink
// turns it off, and turning it off is logged as a warning naming the sink.
func TestInsecureTLSIsAWarning(t *testing.T) {
	beside(t)
	for _, insecure := range []bool{false, true} {
		cfg, _, err := loadConfig(writeFile(t, t.TempDir(), "herald.yaml", fmt.Sprintf(`
rules:
  - {name: crash, kind: Pod, detector: crashloop, sinks: [hook, bus]}
sinks:
  - {name: hook, webhook: {url: "https://127.0.0.1:1/", tls: {insecureSkipVerify: %v}}}
  - {name: bus, nats: {url: "tls://127.0.0.1:1", tls: {insecureSkipVerify: %v}}}
`, insecure, insecure)))
		if err != nil {
			t.Fatal(err)
		}
		var logs bytes.Buffer
		logger, _ := newLogger(&logs, "text", "info")
		_, closeSinks, err := buildSinks(cfg, io.Discard, nil, "", logger)
		if err != nil {
			t.Fatal(err)
		}
		closeSinks()
		warnings := strings.Count(logs.String(), "level=WARN msg=\"TLS certificate verification is OFF for this sink")
		if insecure && (warnings != 2 || !strings.Contains(logs.String(), "sink=hook") || !strings.Contains(logs.String(), "sink=bus")) {
			t.Errorf("insecureSkipVerify gave %d warnings:\n%s", warnings, logs.String())
		}
		if !insecure && warnings != 0 {
			t.Errorf("verification on, yet warned:\n%s", logs.String())
		}
	}
}
