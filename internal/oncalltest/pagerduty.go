// Package oncalltest has stand-ins for the on-call services that have no
// local server, PagerDuty's Events API v2 and Microsoft Teams' Workflows
// webhooks: httptest servers that check each request against the
// service's documented schema and limits and answer with its documented
// statuses (202, 400, 429 with Retry-After).
package oncalltest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// PagerDutyEvent is one event the stand-in accepted.
type PagerDutyEvent struct {
	RoutingKey  string `json:"routing_key"`
	EventAction string `json:"event_action"`
	DedupKey    string `json:"dedup_key"`
	Payload     *struct {
		Summary       string            `json:"summary"`
		Source        string            `json:"source"`
		Severity      string            `json:"severity"`
		Timestamp     string            `json:"timestamp"`
		Component     string            `json:"component"`
		Group         string            `json:"group"`
		Class         string            `json:"class"`
		CustomDetails map[string]string `json:"custom_details"`
	} `json:"payload"`
	Links []struct {
		Href string `json:"href"`
		Text string `json:"text"`
	} `json:"links"`
	Client    string           `json:"client"`
	ClientURL string           `json:"client_url"`
	Images    []map[string]any `json:"images"`
	// At is when it arrived.
	At time.Time `json:"-"`
}

// PagerDuty is an Events API v2 stand-in at URL (the enqueue address).
type PagerDuty struct {
	URL string

	mu       sync.Mutex
	events   []PagerDutyEvent
	invalid  []string
	attempts []time.Time
	throttle int
	after    string
}

// NewPagerDuty starts a stand-in for the test.
func NewPagerDuty(t testing.TB) *PagerDuty {
	p := &PagerDuty{}
	srv := httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(srv.Close)
	p.URL = srv.URL + "/v2/enqueue"
	return p
}

// Throttle answers the next n requests 429 with Retry-After: after.
func (p *PagerDuty) Throttle(n int, after string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.throttle, p.after = n, after
}

// Events returns the accepted events, in order.
func (p *PagerDuty) Events() []PagerDutyEvent {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]PagerDutyEvent(nil), p.events...)
}

// Invalid returns why each rejected request was rejected.
func (p *PagerDuty) Invalid() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.invalid...)
}

// Attempts returns when every request arrived, throttled ones included.
func (p *PagerDuty) Attempts() []time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]time.Time(nil), p.attempts...)
}

func (p *PagerDuty) serve(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.attempts = append(p.attempts, time.Now())
	if p.throttle > 0 {
		p.throttle--
		w.Header().Set("Retry-After", p.after)
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"status":"throttle event","message":"Requests for this service are arriving too quickly. Please retry later."}`)
		return
	}
	e, problems := checkPagerDuty(r)
	if len(problems) > 0 {
		p.invalid = append(p.invalid, strings.Join(problems, "; "))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(map[string]any{"status": "invalid event", "message": "Event object is invalid", "errors": problems})
		return
	}
	e.At = time.Now()
	p.events = append(p.events, e)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	json.NewEncoder(w).Encode(map[string]string{"status": "success", "message": "Event processed", "dedup_key": e.DedupKey})
}

// checkPagerDuty checks a request against the Events API v2's documented
// schema and limits.
func checkPagerDuty(r *http.Request) (PagerDutyEvent, []string) {
	var e PagerDutyEvent
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if r.Method != http.MethodPost || r.URL.Path != "/v2/enqueue" {
		bad("POST /v2/enqueue expected, got %s %s", r.Method, r.URL.Path)
	}
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		bad("Content-Type %q is not application/json", r.Header.Get("Content-Type"))
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if len(body) > 512<<10 {
		bad("event of %d bytes is over 512 KB", len(body))
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields() // catches misspelt fields
	if err := dec.Decode(&e); err != nil {
		bad("not an event: %v", err)
		return e, problems
	}
	if len(e.RoutingKey) != 32 {
		bad("routing_key must be the 32-character integration key")
	}
	if len(e.DedupKey) > 255 {
		bad("dedup_key is %d characters, over 255", len(e.DedupKey))
	}
	switch e.EventAction {
	case "trigger":
		if e.Payload == nil {
			bad("a trigger needs a payload")
			break
		}
		pl := e.Payload
		if pl.Summary == "" || utf8.RuneCountInString(pl.Summary) > 1024 {
			bad("payload.summary must be 1–1024 characters, is %d", utf8.RuneCountInString(pl.Summary))
		}
		if pl.Source == "" {
			bad("payload.source is required")
		}
		switch pl.Severity {
		case "critical", "error", "warning", "info":
		default:
			bad("payload.severity %q is not critical, error, warning or info", pl.Severity)
		}
		if pl.Timestamp != "" {
			if _, err := time.Parse(time.RFC3339, pl.Timestamp); err != nil {
				bad("payload.timestamp %q is not ISO 8601", pl.Timestamp)
			}
		}
	case "acknowledge", "resolve":
		if e.DedupKey == "" {
			bad("%s needs the dedup_key of the alert", e.EventAction)
		}
	default:
		bad("event_action %q is not trigger, acknowledge or resolve", e.EventAction)
	}
	for _, l := range e.Links {
		if l.Href == "" {
			bad("a link needs an href")
		}
	}
	return e, problems
}
