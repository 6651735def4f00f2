package slack

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// call is one request the fake Slack API received.
type call struct {
	Method   string
	At       time.Time
	Channel  string
	TS       string
	ThreadTS string
	Text     string
	Blocks   json.RawMessage
	Metadata struct {
		EventType    string         `json:"event_type"`
		EventPayload map[string]any `json:"event_payload"`
	}
}

// fakeSlack speaks chat.postMessage and chat.update as Slack's Web API
// does (form-encoded requests, JSON answers), and can answer 429 with
// Retry-After for the first rateLimited calls.
type fakeSlack struct {
	*httptest.Server
	t *testing.T

	mu          sync.Mutex
	calls       []call
	nextTS      int
	rateLimited int
	retryAfter  string
	// refuse answers chat.postMessage to these channels with Slack's
	// error code (channel_not_found, not_in_channel, ...).
	refuse map[string]string
}

func newFakeSlack(t *testing.T) *fakeSlack {
	f := &fakeSlack{t: t}
	mux := http.NewServeMux()
	mux.HandleFunc("/chat.postMessage", f.handle("chat.postMessage"))
	mux.HandleFunc("/chat.update", f.handle("chat.update"))
	f.Server = httptest.NewServer(mux)
	t.Cleanup(f.Close)
	return f
}

func (f *fakeSlack) handle(method string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			f.t.Errorf("bad form: %v", err)
		}
		// Slack accepts the token as a bearer header or a form field.
		if r.Header.Get("Authorization") != "Bearer xoxb-test-token" && r.Form.Get("token") != "xoxb-test-token" {
			json.NewEncoder(w).Encode(map[string]any{"ok": false, "error": "invalid_auth"})
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.rateLimited > 0 {
			f.rateLimited--
			w.Header().Set("Retry-After", f.retryAfter)
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		if code, ok := f.refuse[r.Form.Get("channel")]; ok && method == "chat.postMessage" {
			json.NewEncoder(w).Encode(map[string]any{"ok": false, "error": code})
			return
		}
		c := call{Method: method, At: time.Now(), Channel: r.Form.Get("channel"), TS: r.Form.Get("ts"),
			ThreadTS: r.Form.Get("thread_ts"), Text: r.Form.Get("text"), Blocks: json.RawMessage(r.Form.Get("blocks"))}
		if m := r.Form.Get("metadata"); m != "" {
			json.Unmarshal([]byte(m), &c.Metadata)
		}
		ts := c.TS
		if method == "chat.postMessage" {
			f.nextTS++
			ts = fmt.Sprintf("1763769600.%06d", f.nextTS)
		}
		f.calls = append(f.calls, c)
		json.NewEncoder(w).Encode(map[string]any{"ok": true, "channel": "C024BE91L", "ts": ts})
	}
}

func (f *fakeSlack) snapshot() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]call(nil), f.calls...)
}
