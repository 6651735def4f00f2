package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/testenv"
	"github.com/herald-k8s/herald/sinks"
)

// Secrets a crashing pod lets out by each path into herald, none of them
// with a character JSON or Slack would escape (so a search of the raw
// bytes means something).
var pathSecrets = map[string]string{
	"termination message: password":   "Tr0ub4dor-3x-77",
	"termination message: key":        "MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi8Zl2ZkR4MxmYcKtQ3bM7nRtWx",
	"termination message: user regex": "customer-48151623",
	"Event message: GitHub token":     "ghp_R2d2C3poL0ngT0kenF0rT3st1ngAbcd12345",
	"log line: bearer token":          "abcDEF123.tok-XYZ9",
	"log line: URL password":          "s3cr3t-in-url-42",
}

// TestSecretsReachNoSinkNorLedger: a secret in a container's termination
// message (a finding's fact), in an Event's message (the warning-events
// finding, and the crash context's events) and in a log line (the crash
// context's tail) reaches no webhook payload, no Slack message, no ledger
// ConfigMap and no line of herald's log — and each says, redacted, what
// was there. So does every secret of internal/redact's corpus, sent as
// termination messages.
func TestSecretsReachNoSinkNorLedger(t *testing.T) {
	beside(t)
	env := controlPlanes.Get(t)
	client, _ := env.Client()
	ctx := context.Background()
	kubelet, err := testenv.StartKubelet(ctx, client, "node-1", func(context.Context, testenv.LogRequest) ([]string, int) {
		return []string{
			"2026-11-22T10:00:01Z INFO starting",
			"2026-11-22T10:00:02Z DEBUG GET /api Authorization: Bearer " + pathSecrets["log line: bearer token"],
			"2026-11-22T10:00:03Z INFO dialing amqp://shop:" + pathSecrets["log line: URL password"] + "@rabbitmq:5672/",
			"2026-11-22T10:00:04Z FATAL cannot reach the broker",
		}, http.StatusOK
	})
	if err != nil {
		t.Fatal(err)
	}
	defer kubelet.Close()
	hook := newRawReceiver(t)
	slackAPI, slackGot := fakeSlackAPI(t)
	h := startedHerald(t, env, fmt.Sprintf(`
context:
  redact: ['customer-[0-9]+']
  rate: 100   # every pod's alert gets its context, the corpus's too
incidents: {ledgerName: herald-ledger}
rules:
  - {name: pod-crashloop, kind: Pod, detector: crashloop, sinks: [hook, chat]}
  - {name: warnings, kind: Event, detector: warning-events, reasons: [FailedMount], sinks: [hook, chat]}
sinks:
  - {name: hook, webhook: {url: %s/herald}}
  - {name: chat, slack: {channel: "#alerts", apiURL: %q, token: {value: xoxb-test, allowPlaintext: true}, insecure: true}}
`, hook.URL, slackAPI.URL+"/api/"))
	defer h.stop()

	podOnNode(t, client, "shop", "node-1")
	podEvent(t, client, "shop", "Warning", "FailedMount",
		"MountVolume.SetUp failed for volume \"git\": clone with token "+pathSecrets["Event message: GitHub token"]+" was refused", 3)
	crashWithMessage(t, client, "shop", strings.Join([]string{
		"connecting with password=" + pathSecrets["termination message: password"] + " for " + pathSecrets["termination message: user regex"],
		"loading key: -----BEGIN RSA PRIVATE KEY-----",
		pathSecrets["termination message: key"],
		"Xy12AbCdEfGhIjKlMnOpQr==",
		"FATAL: x509: failed to parse private key",
	}, "\n"))

	// The redaction corpus, as the termination messages of more pods
	// (each under a fact's 1,024 characters, so nothing is cut away).
	corpus, secrets := redactionCorpus(t)
	var pods []string
	for i, msg := range corpus {
		pod := fmt.Sprintf("corpus-%d", i)
		pods = append(pods, pod)
		podOnNode(t, client, pod, "node-1")
		crashWithMessage(t, client, pod, msg)
	}
	// Both rules fire, at the webhook and at Slack.
	var crash, warning *sinks.Payload
	corpusFired := map[string]sinks.Payload{}
	deadline := time.Now().Add(30 * time.Second)
	for (crash == nil || warning == nil || len(corpusFired) < len(pods)) && time.Now().Before(deadline) {
		for _, p := range hook.payloads() {
			switch {
			case p.Transition != "firing":
			case p.Incident.Rule == "pod-crashloop" && p.Object.Name == "shop" && p.Context != nil && p.Context.Logs != nil:
				crash = &p
			case p.Incident.Rule == "pod-crashloop" && strings.HasPrefix(p.Object.Name, "corpus-"):
				corpusFired[p.Object.Name] = p
			case p.Incident.Rule == "warnings":
				warning = &p
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if crash == nil || warning == nil || len(corpusFired) < len(pods) {
		t.Fatalf("firings: crash loop (with logs) %v, warning %v, corpus pods %d of %d:\n%s", crash != nil, warning != nil, len(corpusFired), len(pods), hook.all())
	}
	var slackText string
	if err := waitFor(10*time.Second, func() bool {
		slackText = slackGot()
		return strings.Contains(slackText, "FailedMount") && strings.Contains(slackText, "FATAL cannot reach the broker")
	}); err != nil {
		t.Fatalf("Slack did not get both alerts with context:\n%s", slackText)
	}
	h.stop() // the ledger is written

	cms, err := client.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{LabelSelector: "herald.io/ledger=herald-ledger"})
	if err != nil || len(cms.Items) == 0 {
		t.Fatalf("no ledger ConfigMaps: %v", err)
	}
	var ledger strings.Builder
	var incidents []incident.Incident
	for _, cm := range cms.Items {
		for k, v := range cm.Data {
			ledger.WriteString(k + ": " + v + "\n")
			var shard []incident.Incident
			if json.Unmarshal([]byte(v), &shard) == nil {
				incidents = append(incidents, shard...)
			}
		}
	}
	for what, secret := range pathSecrets {
		for where, text := range map[string]string{"a webhook payload": hook.all(), "Slack": slackText, "the ledger": ledger.String(), "herald's log": h.logs.String()} {
			if strings.Contains(text, secret) {
				t.Errorf("the %s reaches %s", what, where)
			}
		}
	}
	// The corpus's secrets, in the decoded texts (JSON escapes some of
	// their characters), Slack's (where they have none Slack escapes)
	// and herald's log.
	var decoded strings.Builder
	for _, p := range hook.payloads() {
		decoded.WriteString(p.Title + "\n" + p.Text + "\n")
		for _, v := range p.Facts {
			decoded.WriteString(v + "\n")
		}
	}
	for _, inc := range incidents {
		decoded.WriteString(inc.Title + "\n" + inc.Text + "\n")
		for _, v := range inc.Facts {
			decoded.WriteString(v + "\n")
		}
	}
	for _, secret := range secrets {
		texts := map[string]string{"a webhook payload or the ledger": decoded.String(), "herald's log": h.logs.String()}
		if !strings.ContainsAny(secret, "<>&\"\\") {
			texts["Slack"] = slackText
		}
		for where, text := range texts {
			if strings.Contains(text, secret) {
				t.Errorf("the corpus's %q reaches %s", secret, where)
			}
		}
	}
	if redacted := strings.Count(decoded.String(), "<redacted"); redacted < len(secrets) {
		t.Errorf("%d placeholders in the payloads and the ledger, want at least one per corpus secret (%d)", redacted, len(secrets))
	}

	// What was there is said, redacted: in the payloads, and in the
	// ledger's incidents.
	last := crash.Facts["lastMessage"]
	if !strings.Contains(last, "password=<redacted> for <redacted>") || !strings.Contains(last, "loading key: <redacted private key>\nFATAL: x509: failed to parse private key") {
		t.Errorf("the termination message reads %q", last)
	}
	if !strings.Contains(warning.Facts["note"], "clone with token <redacted GitHub token> was refused") {
		t.Errorf("the Event's note reads %q", warning.Facts["note"])
	}
	logs := strings.Join(crash.Context.Logs.Lines, "\n")
	if !strings.Contains(logs, "Authorization: Bearer <redacted>") || !strings.Contains(logs, "amqp://shop:<redacted>@rabbitmq") {
		t.Errorf("the log tail reads:\n%s", logs)
	}
	var events []string
	for _, e := range crash.Context.Events {
		events = append(events, e.Message)
	}
	if !strings.Contains(strings.Join(events, "\n"), "<redacted GitHub token>") {
		t.Errorf("the crash context's events read %q", events)
	}
	facts := 0
	for _, inc := range incidents {
		for _, v := range inc.Facts {
			if strings.Contains(v, "<redacted") {
				facts++
			}
		}
	}
	if facts < 2 {
		t.Errorf("the ledger's incidents hold %d redacted facts, want the termination message and the note:\n%s", facts, ledger.String())
	}
}

// redactionCorpus reads internal/redact's corpus of secret-bearing lines
// (marked ⟦like this⟧; a line starting "|| " continues the one above) and
// packs it into messages under 900 bytes; it returns them and the
// secrets.
func redactionCorpus(t *testing.T) (messages, secrets []string) {
	t.Helper()
	data, err := os.ReadFile("../../internal/redact/testdata/secrets.txt")
	if err != nil {
		t.Fatal(err)
	}
	var entries []string
	for _, l := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(l, "#") || strings.TrimSpace(l) == "":
		case strings.HasPrefix(l, "|| "):
			entries[len(entries)-1] += "\n" + strings.TrimPrefix(l, "|| ")
		default:
			entries = append(entries, l)
		}
	}
	var msg strings.Builder
	for _, e := range entries {
		for rest := e; ; {
			open := strings.Index(rest, "⟦")
			if open < 0 {
				break
			}
			end := open + strings.Index(rest[open:], "⟧")
			if s := rest[open+len("⟦") : end]; len(s) >= 6 {
				secrets = append(secrets, s)
			}
			rest = rest[end+len("⟧"):]
		}
		e = strings.NewReplacer("⟦", "", "⟧", "").Replace(e)
		if msg.Len() > 0 && msg.Len()+len(e) > 900 {
			messages = append(messages, msg.String())
			msg.Reset()
		}
		msg.WriteString(e + "\n")
	}
	return append(messages, msg.String()), secrets
}

// crashWithMessage writes the pod's status: its app container crash-
// looping, its last termination saying msg (as the kubelet writes
// terminationMessagePath, or the log's end with FallbackToLogsOnError).
func crashWithMessage(t *testing.T, client kubernetes.Interface, name, msg string) {
	t.Helper()
	ctx := context.Background()
	pod, err := client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
		Name: "app", Image: "example.com/app:1", RestartCount: 5,
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: msg, FinishedAt: now}},
	}}}
	if _, err := client.CoreV1().Pods("default").UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// rawReceiver is a webhook endpoint that keeps the bytes it got.
type rawReceiver struct {
	*httptest.Server
	mu     sync.Mutex
	bodies [][]byte
}

func newRawReceiver(t *testing.T) *rawReceiver {
	r := &rawReceiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.bodies = append(r.bodies, body)
		r.mu.Unlock()
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *rawReceiver) all() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return string(bytes.Join(r.bodies, []byte("\n")))
}

func (r *rawReceiver) payloads() []sinks.Payload {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []sinks.Payload
	for _, b := range r.bodies {
		var p sinks.Payload
		if json.Unmarshal(b, &p) == nil {
			out = append(out, p)
		}
	}
	return out
}
