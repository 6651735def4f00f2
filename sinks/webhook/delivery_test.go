package webhook

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/sinks"
)

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// verifyingReceiver checks every request's Standard Webhooks signature
// and records the payloads it accepted.
type verifyingReceiver struct {
	*httptest.Server
	mu       sync.Mutex
	got      []sinks.Payload
	failFor  time.Duration
	status   int
	started  time.Time
	requests int
}

func newVerifyingReceiver(t *testing.T, status int, failFor time.Duration) *verifyingReceiver {
	key, _ := SigningKey(secret)
	r := &verifyingReceiver{status: status, failFor: failFor, started: time.Now()}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		if err := Verify(key, req.Header.Get("webhook-id"), req.Header.Get("webhook-timestamp"), req.Header.Get("webhook-signature"), body, time.Now(), 5*time.Minute); err != nil {
			t.Errorf("signature: %v", err)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		r.requests++
		if time.Since(r.started) < r.failFor {
			w.WriteHeader(r.status)
			return
		}
		var p sinks.Payload
		json.Unmarshal(body, &p)
		r.got = append(r.got, p)
	}))
	t.Cleanup(r.Close)
	return r
}

func lifecycle(incidentNo int) []incident.Notification {
	var out []incident.Notification
	for seq, tr := range []incident.Transition{incident.Firing, incident.Updated, incident.Resolved} {
		n := note()
		n.Incident.ID = fmt.Sprintf("inc%d-x", incidentNo)
		n.Transition, n.Seq = tr, seq+1
		out = append(out, n)
	}
	return out
}

// TestOutageThenRecovery: the receiver answers 503 for 30 s, then 200:
// every notification arrives, each incident's in order.
func TestOutageThenRecovery(t *testing.T) {
	recv := newVerifyingReceiver(t, http.StatusServiceUnavailable, 30*time.Second)
	s, err := New(Options{Name: "hook", URL: recv.URL, Timeout: time.Second, Secrets: []string{"whsec_b2xkIHNlY3JldA==", secret}})
	if err != nil {
		t.Fatal(err)
	}
	metrics := sinks.NewMetrics(nil)
	d := sinks.NewDispatcher(slog.New(slog.NewTextHandler(io.Discard, nil)), metrics, sinks.LaneOptions{Sink: s, MaxBackoff: 2 * time.Second})
	done := make(chan struct{}, 9)
	d.OnDelivered(func(incident.Notification, string) { done <- struct{}{} })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go d.Run(ctx)
	for i := range 3 {
		for _, n := range lifecycle(i) {
			if err := d.Dispatch(ctx, n); err != nil {
				t.Fatal(err)
			}
		}
	}
	for range 9 {
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			t.Fatal("not all delivered within 60 s")
		}
	}
	recv.mu.Lock()
	defer recv.mu.Unlock()
	last := map[string]int{}
	for _, p := range recv.got {
		if p.Seq != last[p.Incident.ID]+1 {
			t.Errorf("%s seq %d after %d: out of order", p.Incident.ID, p.Seq, last[p.Incident.ID])
		}
		last[p.Incident.ID] = p.Seq
	}
	if len(recv.got) != 9 {
		t.Errorf("receiver accepted %d, want 9", len(recv.got))
	}
	if r := testutil.ToFloat64(metrics.Retries.WithLabelValues("hook")); r < 1 {
		t.Errorf("retries counted: %v", r)
	}
}

// TestBadRequestIsNotRetried: a 400 is final, logged and counted.
func TestBadRequestIsNotRetried(t *testing.T) {
	recv := newVerifyingReceiver(t, http.StatusBadRequest, time.Hour)
	s, _ := New(Options{Name: "hook", URL: recv.URL, Timeout: time.Second, Secrets: []string{secret}})
	metrics := sinks.NewMetrics(nil)
	d := sinks.NewDispatcher(slog.New(slog.NewTextHandler(io.Discard, nil)), metrics, sinks.LaneOptions{Sink: s})
	if err := d.Dispatch(context.Background(), lifecycle(0)[0]); err != nil {
		t.Fatal(err)
	}
	d.Close()
	d.Run(context.Background())
	if recv.requests != 1 {
		t.Errorf("%d requests, want 1 (no retry)", recv.requests)
	}
	if f := testutil.ToFloat64(metrics.Failed.WithLabelValues("hook", "permanent")); f != 1 {
		t.Errorf("permanent failures counted: %v", f)
	}
}

func TestCloudEventsStructuredMode(t *testing.T) {
	var got map[string]any
	var contentType string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		contentType = r.Header.Get("Content-Type")
		json.NewDecoder(r.Body).Decode(&got)
	}))
	defer srv.Close()
	s, _ := New(Options{Name: "hook", URL: srv.URL, Timeout: time.Second, CloudEvents: true})
	if err := s.Send(context.Background(), note()); err != nil {
		t.Fatal(err)
	}
	data, _ := got["data"].(map[string]any)
	if contentType != "application/cloudevents+json" || got["specversion"] != "1.0" || got["type"] != "io.herald.incident.firing" ||
		got["id"] != "abc-1-1" || got["subject"] != "Pod/shop/web" || data["version"] != sinks.PayloadVersion || got["source"] != "herald" {
		t.Errorf("event: %s %v", contentType, got)
	}
	// With a clusterName, the source and the payload say which cluster.
	s, _ = New(Options{Name: "hook", URL: srv.URL, Timeout: time.Second, CloudEvents: true, ClusterName: "prod eu"})
	if err := s.Send(context.Background(), note()); err != nil {
		t.Fatal(err)
	}
	data, _ = got["data"].(map[string]any)
	if got["source"] != "herald/prod%20eu" || data["cluster"] != "prod eu" {
		t.Errorf("event from cluster %q: source %v, payload cluster %v", "prod eu", got["source"], data["cluster"])
	}
}

// TestTLSVerifiedByDefault: a server with an unknown certificate is
// refused (and not retried); its CA makes it work; skipping verification
// works too (herald logs a warning for it).
func TestTLSVerifiedByDefault(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	s, _ := New(Options{Name: "hook", URL: srv.URL, Timeout: time.Second})
	err := s.Send(context.Background(), note())
	if err == nil {
		t.Fatal("a self-signed certificate was accepted by default")
	}
	if retry, _ := sinks.IsRetryable(err); retry {
		t.Errorf("certificate error marked retryable: %v", err)
	}
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600)
	for name, tlsOpts := range map[string]sinks.TLSOptions{"caFile": {CAFile: caFile}, "insecure": {InsecureSkipVerify: true}} {
		s, err := New(Options{Name: "hook", URL: srv.URL, Timeout: time.Second, TLS: tlsOpts})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Send(context.Background(), note()); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
