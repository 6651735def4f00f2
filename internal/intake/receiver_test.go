package intake

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/herald-k8s/herald/config"
	"github.com/herald-k8s/herald/internal/rules"
	"github.com/herald-k8s/herald/watcher"
)

const testToken = "s3cr3t-intake-token"

// fixture is a receiver on a loopback HTTP server, leading, whose
// ledger records what it is asked to unless told to fail.
type fixture struct {
	url      string
	recv     *Receiver
	store    *Store
	metrics  *Metrics
	mu       sync.Mutex
	recorded []watcher.Key
	fail     error
}

func newFixture(t *testing.T, lead bool) *fixture {
	t.Helper()
	cfg := &config.AlertmanagerIntake{Listen: ":0", MaxBodyBytes: 4 << 10}
	f := &fixture{store: NewStore(), metrics: NewMetrics(nil)}
	f.recv = NewReceiver(Options{Config: cfg, Token: testToken, Store: f.store, Metrics: f.metrics, Sinks: []string{"chat"},
		Watched: func(kind string) bool { return kind == "Pod" || kind == "Deployment" },
		Logger:  slog.New(slog.DiscardHandler)})
	srv := httptest.NewServer(f.recv)
	t.Cleanup(srv.Close)
	f.url = srv.URL
	if lead {
		ctx, cancel := context.WithCancel(context.Background())
		led := make(chan struct{})
		go func() {
			defer close(led)
			f.recv.Lead(ctx, Term{Record: func(ctx context.Context, keys []watcher.Key) error {
				f.mu.Lock()
				defer f.mu.Unlock()
				if f.fail != nil {
					return f.fail
				}
				f.recorded = append(f.recorded, keys...)
				return nil
			}})
		}()
		t.Cleanup(func() { cancel(); <-led })
		// Lead stores the term before it blocks: wait for it.
		for f.recv.term.Load() == nil {
			time.Sleep(time.Millisecond)
		}
	}
	return f
}

// taken is what the ledger was asked to record so far.
func (f *fixture) taken() []watcher.Key {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]watcher.Key(nil), f.recorded...)
}

// send sends a request to url with the test's token, header replacing
// or (with "") removing headers, and returns the status, the raw body
// and the headers of the answer.
func send(t *testing.T, method, url string, body io.Reader, header map[string]string) (int, []byte, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	for k, v := range header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, raw, resp.Header
}

// post sends body to the fixture and reads its answer.
func (f *fixture) post(t *testing.T, body string, header map[string]string) (int, answer, http.Header) {
	t.Helper()
	status, raw, h := send(t, http.MethodPost, f.url+"/alerts", strings.NewReader(body), header)
	var a answer
	if err := json.Unmarshal(raw, &a); err != nil {
		t.Fatalf("answer %q is not JSON: %v", raw, err)
	}
	return status, a, h
}

// message is a webhook message with the given alerts (JSON objects).
func message(status string, alerts ...string) string {
	return `{"version":"4","groupKey":"{}:{alertname=\"x\"}","status":"` + status + `","receiver":"herald","alerts":[` + strings.Join(alerts, ",") + `]}`
}

func crashAlert(status, fp string) string {
	return `{"status":"` + status + `","fingerprint":"` + fp + `","startsAt":"2026-11-29T10:00:00Z",
	"labels":{"alertname":"KubePodCrashLooping","namespace":"shop","pod":"web-1","container":"app","severity":"warning","job":"kube-state-metrics"},
	"annotations":{"summary":"Pod is crash looping.","description":"Pod shop/web-1 (app) is in waiting state (reason: \"CrashLoopBackOff\").","runbook_url":"https://runbooks.example/KubePodCrashLooping"}}`
}

// TestRefusals: each bad request gets a 4xx (or a follower's 503) with a
// reason, is counted by it, and leaves nothing taken or recorded.
func TestRefusals(t *testing.T) {
	f := newFixture(t, true)
	follower := newFixture(t, false)
	big := message("firing", crashAlert("firing", "aaaaaaaaaaaaaaaa")) + strings.Repeat(" ", 5<<10)
	tests := []struct {
		name   string
		f      *fixture
		method string
		body   string
		header map[string]string
		chunk  bool
		status int
		reason string
		says   string
	}{
		{name: "no token", body: message("firing", crashAlert("firing", "aaaaaaaaaaaaaaaa")), header: map[string]string{"Authorization": ""}, status: 401, reason: "unauthorized", says: "no bearer token"},
		{name: "wrong token", body: message("firing", crashAlert("firing", "aaaaaaaaaaaaaaaa")), header: map[string]string{"Authorization": "Bearer guess"}, status: 401, reason: "unauthorized", says: "wrong bearer token"},
		{name: "token of another scheme", body: message("firing", crashAlert("firing", "aaaaaaaaaaaaaaaa")), header: map[string]string{"Authorization": "Basic " + testToken}, status: 401, reason: "unauthorized", says: "wrong bearer token"},
		{name: "GET", method: http.MethodGet, status: 405, reason: "method", says: "only POST"},
		{name: "oversize body", body: big, status: 413, reason: "too_large", says: "at most 4096"},
		{name: "oversize body without a length", body: big, chunk: true, status: 413, reason: "too_large", says: "over 4096"},
		{name: "malformed JSON", body: `{"version":"4",`, status: 400, reason: "malformed", says: "not a webhook message in JSON"},
		{name: "unknown version", body: strings.Replace(message("firing", crashAlert("firing", "aaaaaaaaaaaaaaaa")), `"version":"4"`, `"version":"5"`, 1), status: 400, reason: "version", says: `version "5" is not supported`},
		{name: "no fingerprint", body: message("firing", crashAlert("firing", "")), status: 400, reason: "schema", says: "alerts[0]: fingerprint"},
		{name: "no alertname", body: message("firing", strings.Replace(crashAlert("firing", "aaaaaaaaaaaaaaaa"), `"alertname":"KubePodCrashLooping",`, "", 1)), status: 400, reason: "schema", says: "labels need alertname"},
		{name: "bad label name", body: message("firing", strings.Replace(crashAlert("firing", "aaaaaaaaaaaaaaaa"), `"job":`, `"jo b":`, 1)), status: 400, reason: "schema", says: "not a Prometheus label name"},
		{name: "unknown alert status", body: message("firing", crashAlert("pending", "aaaaaaaaaaaaaaaa")), status: 400, reason: "schema", says: "status must be firing or resolved"},
		{name: "follower", f: follower, body: message("firing", crashAlert("firing", "aaaaaaaaaaaaaaaa")), status: 503, reason: "not_leader", says: "does not lead"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := f
			if tt.f != nil {
				fx = tt.f
			}
			before := testutil.ToFloat64(fx.metrics.refused.WithLabelValues(tt.reason))
			method := tt.method
			if method == "" {
				method = http.MethodPost
			}
			var body io.Reader = strings.NewReader(tt.body)
			if tt.chunk {
				body = io.MultiReader(strings.NewReader(tt.body)) // no length: sent chunked
			}
			status, raw, h := send(t, method, fx.url+"/alerts", body, tt.header)
			if status != tt.status {
				t.Errorf("status %d, want %d (%s)", status, tt.status, raw)
			}
			var a answer
			if err := json.Unmarshal(raw, &a); err != nil || !strings.Contains(a.Error, tt.says) {
				t.Errorf("answer %s does not say %q", raw, tt.says)
			}
			if tt.status == 503 && h.Get("Retry-After") == "" {
				t.Error("a 503 without Retry-After")
			}
			if got := testutil.ToFloat64(fx.metrics.refused.WithLabelValues(tt.reason)) - before; got != 1 {
				t.Errorf("refusals with reason %s counted %v, want 1", tt.reason, got)
			}
			if n := fx.store.Firing(); n != 0 {
				t.Errorf("%d alerts taken from a refused request", n)
			}
			if len(fx.taken()) != 0 {
				t.Errorf("recorded %v for a refused request", fx.taken())
			}
		})
	}
}

// TestTakesFiringAndResolved: a firing alert is taken under its pod's
// key and recorded before the answer; a repeat is counted as such; its
// resolution takes it out.
func TestTakesFiringAndResolved(t *testing.T) {
	f := newFixture(t, true)
	pod := watcher.Key{Kind: "Pod", Namespace: "shop", Name: "web-1"}
	status, a, _ := f.post(t, message("firing", crashAlert("firing", "0123456789abcdef")), nil)
	if status != 200 || a.Accepted != 1 {
		t.Fatalf("status %d, answer %+v", status, a)
	}
	if got := f.taken(); len(got) != 1 || got[0] != pod {
		t.Fatalf("recorded %v, want [%v]", got, pod)
	}
	if got := testutil.ToFloat64(f.metrics.alerts.WithLabelValues("mapped")); got != 1 {
		t.Errorf("mapped = %v, want 1", got)
	}
	// Alertmanager's repeat of the same group: taken, not new.
	f.post(t, message("firing", crashAlert("firing", "0123456789abcdef")), nil)
	if got := testutil.ToFloat64(f.metrics.alerts.WithLabelValues("deduplicated")); got != 1 {
		t.Errorf("deduplicated = %v, want 1", got)
	}
	if got := f.taken(); len(got) != 2 {
		t.Errorf("a repeat is confirmed in the ledger too: recorded %v", got)
	}
	if f.store.Firing() != 1 {
		t.Fatalf("firing = %d, want 1", f.store.Firing())
	}
	status, _, _ = f.post(t, message("resolved", crashAlert("resolved", "0123456789abcdef")), nil)
	if status != 200 || f.store.Firing() != 0 {
		t.Fatalf("status %d, firing %d after the resolution", status, f.store.Firing())
	}
	if got := testutil.ToFloat64(f.metrics.alerts.WithLabelValues("resolved")); got != 1 {
		t.Errorf("resolved = %v, want 1", got)
	}
}

// TestNotRecordedIsRetried: when the ledger does not have the alerts in
// time the answer is 503, so that Alertmanager sends them again; the
// retry is taken.
func TestNotRecordedIsRetried(t *testing.T) {
	f := newFixture(t, true)
	f.fail = errors.New("ledger write timed out")
	status, a, h := f.post(t, message("firing", crashAlert("firing", "0123456789abcdef")), nil)
	if status != 503 || h.Get("Retry-After") == "" || !strings.Contains(a.Error, "not in the ledger") {
		t.Fatalf("status %d, answer %+v: want 503 with Retry-After", status, a)
	}
	f.mu.Lock()
	f.fail = nil
	f.mu.Unlock()
	if status, _, _ := f.post(t, message("firing", crashAlert("firing", "0123456789abcdef")), nil); status != 200 {
		t.Fatalf("retry: status %d", status)
	}
	if got := f.taken(); len(got) != 1 {
		t.Errorf("recorded %v after the retry", got)
	}
}

// TestOwnAlertsAreDropped: an alert herald's alertmanager sink posted,
// come back through a receiver, is dropped and counted.
func TestOwnAlertsAreDropped(t *testing.T) {
	f := newFixture(t, true)
	own := strings.Replace(crashAlert("firing", "0123456789abcdef"), `"summary"`, `"`+LoopAnnotation+`":"4b1e0c2d9a3f7e61-1","summary"`, 1)
	status, a, _ := f.post(t, message("firing", own, crashAlert("firing", "fedcba9876543210")), nil)
	if status != 200 || a.Looped != 1 || a.Accepted != 1 {
		t.Fatalf("status %d, answer %+v: want 1 accepted, 1 looped", status, a)
	}
	if f.store.Firing() != 1 {
		t.Errorf("firing = %d, want only the foreign alert", f.store.Firing())
	}
	if got := testutil.ToFloat64(f.metrics.alerts.WithLabelValues("looped")); got != 1 {
		t.Errorf("looped = %v, want 1", got)
	}
}

// TestTokenNeverInAnswers: neither a refusal nor an acceptance quotes
// the token.
func TestTokenNeverInAnswers(t *testing.T) {
	f := newFixture(t, true)
	for _, h := range []map[string]string{nil, {"Authorization": "Bearer " + testToken + "x"}} {
		_, raw, _ := send(t, http.MethodPost, f.url, strings.NewReader(message("firing", crashAlert("firing", "0123456789abcdef"))), h)
		if bytes.Contains(raw, []byte(testToken)) {
			t.Errorf("answer %s quotes the token", raw)
		}
	}
}

// TestFullStoreRefusesNewAlerts: with MaxFiring alerts firing, a new one
// is not taken: the answer is 503 (Alertmanager retries), it is counted,
// and alerts already firing still are.
func TestFullStoreRefusesNewAlerts(t *testing.T) {
	f := newFixture(t, true)
	for i := range MaxFiring {
		fp := fmt.Sprintf("%016x", i)
		if _, _, err := f.store.put(watcher.Key{Kind: DetachedKind, Name: fp}, rules.Alert{Name: "Filler", Fingerprint: fp}, ""); err != nil {
			t.Fatal(err)
		}
	}
	status, a, _ := f.post(t, message("firing", crashAlert("firing", "fedcba9876543210")), nil)
	if status != 503 || !strings.Contains(a.Error, "1 alerts not taken") {
		t.Fatalf("status %d, answer %+v: want 503, not taken", status, a)
	}
	if f.store.Firing() != MaxFiring {
		t.Errorf("firing = %d, want %d", f.store.Firing(), MaxFiring)
	}
	if got := testutil.ToFloat64(f.metrics.alerts.WithLabelValues("over_cap")); got != 1 {
		t.Errorf("over_cap = %v, want 1", got)
	}
}

// TestNoAuthenticationTakesNothing: a receiver given neither a token nor
// client certificates (a configuration that validation refuses) refuses
// every request rather than take them unauthenticated.
func TestNoAuthenticationTakesNothing(t *testing.T) {
	store := NewStore()
	recv := NewReceiver(Options{Config: &config.AlertmanagerIntake{MaxBodyBytes: 1 << 20}, Token: "  \n", Store: store,
		Watched: func(string) bool { return true }, Logger: slog.New(slog.DiscardHandler)})
	recv.term.Store(&Term{Record: func(context.Context, []watcher.Key) error { return nil }})
	srv := httptest.NewServer(recv)
	defer srv.Close()
	for _, auth := range []string{"", "Bearer ", "Bearer   "} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(message("firing", crashAlert("firing", "0123456789abcdef"))))
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 401 || store.Firing() != 0 {
			t.Errorf("Authorization %q: status %d, %d firing; want 401 and nothing taken", auth, resp.StatusCode, store.Firing())
		}
	}
}
