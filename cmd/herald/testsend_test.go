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
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/herald-k8s/herald/internal/natstest"
	"github.com/herald-k8s/herald/internal/oncalltest"
)

// standIn is an HTTP destination that accepts a request carrying the
// right credential and refuses others the way its real service does,
// recording the bodies it accepted.
type standIn struct {
	*httptest.Server
	mu       sync.Mutex
	accepted []string
}

func newStandIn(t *testing.T, ok func(*http.Request) bool, refuse func(http.ResponseWriter)) *standIn {
	s := &standIn{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm() // Slack's Web API: a form; the others: JSON, left in the body
		body, _ := io.ReadAll(r.Body)
		if !ok(r) {
			refuse(w)
			return
		}
		s.mu.Lock()
		s.accepted = append(s.accepted, string(body)+r.Form.Get("text")+r.Form.Get("blocks"))
		s.mu.Unlock()
		if strings.HasSuffix(r.URL.Path, "chat.postMessage") {
			fmt.Fprint(w, `{"ok":true,"channel":"C1","ts":"1700000000.000100"}`)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *standIn) got() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.accepted, "\n")
}

// TestSendTestNotification: herald test --send SINK sends one test
// notification through each kind of sink, built from the configuration
// as herald run builds it, exits 0 when the destination accepts it and 1
// with the destination's own reason when it refuses the credential, and
// never prints the credential.
func TestSendTestNotification(t *testing.T) {
	beside(t)
	bearer := func(token string) func(*http.Request) bool {
		return func(r *http.Request) bool { return r.Header.Get("Authorization") == "Bearer "+token }
	}
	slackAPI := newStandIn(t, func(r *http.Request) bool {
		return r.Form.Get("token") == "xoxb-good-token" || bearer("xoxb-good-token")(r)
	}, func(w http.ResponseWriter) {
		fmt.Fprint(w, `{"ok":false,"error":"invalid_auth"}`) // Slack answers 200 with ok:false
	})
	hook := newStandIn(t, bearer("good-hook-token"), func(w http.ResponseWriter) {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"message":"token rejected for /hooks/PATH-SECRET-42"}`)
	})
	am := newStandIn(t, bearer("good-am-token"), func(w http.ResponseWriter) {
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, "forbidden: unknown bearer token\n")
	})
	pd := oncalltest.NewPagerDuty(t)
	// The Events API refuses a well-formed key it does not know so.
	pdRefusing := newStandIn(t, func(*http.Request) bool { return false }, func(w http.ResponseWriter) {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"status":"invalid event","message":"Event object is invalid","errors":["Invalid routing key"]}`)
	})
	tm := oncalltest.NewTeams(t)
	js := natstest.Start(t, t.TempDir(), 0)
	guarded, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, Authorization: "right-nats-token", NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go guarded.Start()
	if !guarded.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	t.Cleanup(guarded.Shutdown)
	natsMsgs := make(chan *nats.Msg, 4)
	nc, err := nats.Connect(js.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	if _, err := nc.ChanSubscribe("herald.>", natsMsgs); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	guardedURL := strings.Replace(guarded.ClientURL(), "nats://", "nats://%s@", 1)

	sinksYAML := fmt.Sprintf(`
  - {name: chat, slack: {channel: "#alerts", apiURL: %[1]q, clusterName: prod-eu, insecure: true, token: {value: xoxb-good-token, allowPlaintext: true}}}
  - {name: chat-bad, slack: {channel: "#alerts", apiURL: %[1]q, insecure: true, token: {value: xoxb-revoked-token, allowPlaintext: true}}}
  - {name: hook, webhook: {url: %[2]q, insecure: true, headersFrom: {Authorization: {value: "Bearer good-hook-token", allowPlaintext: true}}}}
  - {name: hook-bad, webhook: {url: %[2]q, insecure: true, headersFrom: {Authorization: {value: "Bearer stale-hook-token", allowPlaintext: true}}}}
  - {name: am, alertmanager: {urls: [%[3]q], insecure: true, bearerToken: {value: good-am-token, allowPlaintext: true}}}
  - {name: am-bad, alertmanager: {urls: [%[3]q], insecure: true, bearerToken: {value: stale-am-token, allowPlaintext: true}}}
  - {name: page, pagerduty: {url: %[4]q, clusterName: prod-eu, routingKey: {value: R0UT1NGK3Y0123456789abcdefABCDEF, allowPlaintext: true}}}
  - {name: page-bad, pagerduty: {url: %[9]q, routingKey: {value: R3V0K3DK3Y0123456789abcdefABCDEF, allowPlaintext: true}}}
  - {name: teams, teams: {url: %[5]q}}
  - {name: teams-bad, teams: {url: %[6]q}}
  - {name: bus, nats: {url: %[7]q, subject: herald.test}}
  - {name: bus-bad, nats: {url: %[8]q, subject: herald.test}}
`, slackAPI.URL+"/api/", hook.URL+"/hooks/PATH-SECRET-42", am.URL, pd.URL, tm.URL, strings.Replace(tm.URL, "SECRET-SIGNATURE", "WRONG-SIGNATURE-7", 1),
		js.ClientURL(), fmt.Sprintf(guardedURL, "wrong-nats-token"), pdRefusing.URL+"/v2/enqueue")
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(sinksYAML), "\n") {
		name, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "- {name: "), ",")
		names = append(names, name)
	}
	path := filepath.Join(t.TempDir(), "herald.yaml")
	cfg := fmt.Sprintf("rules:\n  - {name: crash, kind: Pod, detector: crashloop, sinks: [%s]}\nsinks:%s", strings.Join(names, ", "), sinksYAML)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}

	for _, tt := range []struct {
		sink string
		code int
		says string // on stdout when accepted, stderr when refused
		// received checks the destination got the test notification.
		received func() string
	}{
		{"chat", 0, `sink "chat" (slack) accepted the test notification herald-test-`, slackAPI.got},
		{"chat-bad", 1, `sink "chat-bad" (slack) refused the test notification: slack chat.postMessage: invalid_auth`, nil},
		{"hook", 0, `sink "hook" (webhook) accepted`, hook.got},
		{"hook-bad", 1, `HTTP 401: {"message":"token rejected for <redacted>"}`, nil},
		{"am", 0, `sink "am" (alertmanager) accepted`, am.got},
		{"am-bad", 1, "HTTP 403: forbidden: unknown bearer token", nil},
		{"page", 0, `sink "page" (pagerduty) accepted`, func() string { b, _ := json.Marshal(pd.Events()); return string(b) }},
		{"page-bad", 1, `HTTP 400: {"status":"invalid event","message":"Event object is invalid","errors":["Invalid routing key"]}`, nil},
		{"teams", 0, `sink "teams" (teams) accepted`, func() string { return fmt.Sprint(tm.Cards()) }},
		{"teams-bad", 1, `sink "teams-bad" (teams) refused the test notification: teams teams-bad (http://127.0.0.1`, nil},
		{"bus", 0, `sink "bus" (nats) accepted`, func() string {
			select {
			case m := <-natsMsgs:
				return string(m.Data)
			case <-time.After(5 * time.Second):
				return ""
			}
		}},
		{"bus-bad", 1, "nats: Authorization Violation", nil},
	} {
		t.Run(tt.sink, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := runMain(context.Background(), []string{"test", "--send", tt.sink, "-f", path, "--timeout", "3s"}, &stdout, &stderr)
			said := stdout.String()
			if tt.code != 0 {
				said = stderr.String()
			}
			if code != tt.code || !strings.Contains(said, tt.says) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want %d saying %q", code, stdout.String(), stderr.String(), tt.code, tt.says)
			}
			for _, secret := range []string{"good-token", "revoked-token", "hook-token", "am-token", "PATH-SECRET", "R0UT1NGK3Y", "R3V0K3DK3Y", "SIGNATURE", "nats-token"} {
				if strings.Contains(stdout.String()+stderr.String(), secret) {
					t.Errorf("the report shows a secret (%s): %q %q", secret, stdout.String(), stderr.String())
				}
			}
			if tt.received == nil {
				return
			}
			got := tt.received()
			if !strings.Contains(got, "Test notification from herald") || !strings.Contains(got, "herald test --send "+tt.sink) {
				t.Errorf("the destination got %q; want the test notification, marked as such", got)
			}
			if tt.sink == "page" && !strings.Contains(got, `"event_action":"resolve"`) {
				t.Errorf("the test page was left open (no resolve): %q", got)
			}
			if tt.sink == "chat" && !strings.Contains(got, "in cluster prod-eu") {
				t.Errorf("the Slack message does not name the configured cluster: %q", got)
			}
		})
	}
	if code := runMain(context.Background(), []string{"test", "--send", "chat"}, io.Discard, io.Discard); code == 0 {
		t.Errorf("--send without a configuration: exit 0")
	}
	var stderr bytes.Buffer
	if code := runMain(context.Background(), []string{"test", "-f", path, "--send", "pager"}, io.Discard, &stderr); code != 2 ||
		!strings.Contains(stderr.String(), `no sink "pager" in the configuration; its sinks are: chat, chat-bad, hook`) {
		t.Errorf("an unknown sink: exit %d, %q; want 2 and the configured sinks", code, stderr.String())
	}
}
