package oncalltest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

// OpsgenieCall is one Alert API request the stand-in accepted.
type OpsgenieCall struct {
	Action string // create, acknowledge, unacknowledge, close or note
	Alias  string
	Create *OpsgenieCreate
	User   string
	Note   string
	Source string
}

// OpsgenieCreate is a create-alert request's body, as documented.
type OpsgenieCreate struct {
	Message     string            `json:"message"`
	Alias       string            `json:"alias"`
	Description string            `json:"description"`
	Responders  []map[string]any  `json:"responders"`
	VisibleTo   []map[string]any  `json:"visibleTo"`
	Actions     []string          `json:"actions"`
	Tags        []string          `json:"tags"`
	Details     map[string]string `json:"details"`
	Entity      string            `json:"entity"`
	Source      string            `json:"source"`
	Priority    string            `json:"priority"`
	User        string            `json:"user"`
	Note        string            `json:"note"`
}

type opsgenieAction struct {
	User   string `json:"user"`
	Source string `json:"source"`
	Note   string `json:"note"`
}

// OpsgenieAlert is an alert as the stand-in keeps it.
type OpsgenieAlert struct {
	Alias                string
	Count                int // creates folded into it (Opsgenie's deduplication)
	Acknowledged, Closed bool
	AcknowledgedBy       string
	Notes                []string
	Message, Priority    string
}

// Opsgenie is an Alert API v2 stand-in (Opsgenie's, which Jira Service
// Management's operations share) at URL, the API's base address. It
// checks each request against the documented API — the GenieKey
// header, the fields and their limits, identifierType=alias — answers
// 202 as the real one does (the work is asynchronous), and keeps the
// alerts: a create with an open alert's alias folds into it; a
// request about an alias no alert has is recorded as failed, as
// Opsgenie's request status would report it.
type Opsgenie struct {
	URL string
	Key string

	mu       sync.Mutex
	calls    []OpsgenieCall
	invalid  []string
	failed   []string
	alerts   map[string]*OpsgenieAlert
	throttle int
}

// NewOpsgenie starts a stand-in that takes key.
func NewOpsgenie(t testing.TB, key string) *Opsgenie {
	o := &Opsgenie{Key: key, alerts: map[string]*OpsgenieAlert{}}
	srv := httptest.NewServer(http.HandlerFunc(o.serve))
	t.Cleanup(srv.Close)
	o.URL = srv.URL
	return o
}

// Throttle answers the next n requests 429.
func (o *Opsgenie) Throttle(n int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.throttle = n
}

// Calls returns the accepted requests, in order.
func (o *Opsgenie) Calls() []OpsgenieCall {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.calls)
}

// Invalid returns why each refused request was refused.
func (o *Opsgenie) Invalid() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.invalid)
}

// Failed returns the accepted requests about an alias no alert had.
func (o *Opsgenie) Failed() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.failed)
}

// Alert returns the alert of alias (nil: none).
func (o *Opsgenie) Alert(alias string) *OpsgenieAlert {
	o.mu.Lock()
	defer o.mu.Unlock()
	if a, ok := o.alerts[alias]; ok {
		c := *a
		c.Notes = slices.Clone(a.Notes)
		return &c
	}
	return nil
}

func (o *Opsgenie) serve(w http.ResponseWriter, r *http.Request) {
	o.mu.Lock()
	defer o.mu.Unlock()
	answer := func(code int, body map[string]any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(body)
	}
	refuse := func(code int, why string) {
		o.invalid = append(o.invalid, why)
		answer(code, map[string]any{"message": why, "took": 0.001, "requestId": "refused"})
	}
	if o.throttle > 0 {
		o.throttle--
		answer(http.StatusTooManyRequests, map[string]any{"message": "You are making too many requests! To avoid errors, we recommend you limit requests.", "took": 0.001})
		return
	}
	if got := r.Header.Get("Authorization"); got != "GenieKey "+o.Key {
		refuse(http.StatusUnauthorized, "Could not authenticate")
		return
	}
	if r.Method != http.MethodPost || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		refuse(http.StatusBadRequest, "want a POST of application/json")
		return
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	rest, ok := strings.CutPrefix(r.URL.Path, "/v2/alerts")
	if !ok {
		refuse(http.StatusNotFound, "no such endpoint "+r.URL.Path)
		return
	}
	accepted := func() {
		answer(http.StatusAccepted, map[string]any{"result": "Request will be processed", "took": 0.002, "requestId": fmt.Sprintf("req-%d", len(o.calls))})
	}
	if rest == "" {
		var c OpsgenieCreate
		if err := dec.Decode(&c); err != nil {
			refuse(http.StatusUnprocessableEntity, "create: "+err.Error())
			return
		}
		if bad := checkCreate(c); len(bad) > 0 {
			refuse(http.StatusUnprocessableEntity, "create: "+strings.Join(bad, "; "))
			return
		}
		o.calls = append(o.calls, OpsgenieCall{Action: "create", Alias: c.Alias, Create: &c, Source: c.Source})
		if a, ok := o.alerts[c.Alias]; ok && !a.Closed {
			a.Count++
		} else {
			o.alerts[c.Alias] = &OpsgenieAlert{Alias: c.Alias, Count: 1, Message: c.Message, Priority: c.Priority}
		}
		accepted()
		return
	}
	parts := strings.Split(strings.TrimPrefix(rest, "/"), "/")
	if len(parts) != 2 || !slices.Contains([]string{"acknowledge", "unacknowledge", "close", "notes"}, parts[1]) {
		refuse(http.StatusNotFound, "no such endpoint "+r.URL.Path)
		return
	}
	if r.URL.Query().Get("identifierType") != "alias" {
		refuse(http.StatusUnprocessableEntity, "herald names alerts by alias: identifierType=alias wanted")
		return
	}
	alias, err := url.PathUnescape(parts[0])
	if err != nil {
		refuse(http.StatusBadRequest, "bad identifier")
		return
	}
	var a opsgenieAction
	if err := dec.Decode(&a); err != nil {
		refuse(http.StatusUnprocessableEntity, parts[1]+": "+err.Error())
		return
	}
	var bad []string
	bad = append(bad, limited("user", a.User, 100)...)
	bad = append(bad, limited("source", a.Source, 100)...)
	bad = append(bad, limited("note", a.Note, 25000)...)
	if parts[1] == "notes" && a.Note == "" {
		bad = append(bad, "note is required")
	}
	if len(bad) > 0 {
		refuse(http.StatusUnprocessableEntity, parts[1]+": "+strings.Join(bad, "; "))
		return
	}
	action := map[string]string{"acknowledge": "acknowledge", "unacknowledge": "unacknowledge", "close": "close", "notes": "note"}[parts[1]]
	o.calls = append(o.calls, OpsgenieCall{Action: action, Alias: alias, User: a.User, Note: a.Note, Source: a.Source})
	alert, ok := o.alerts[alias]
	if !ok || alert.Closed {
		o.failed = append(o.failed, action+" "+alias+": Alert does not exist")
		accepted() // Opsgenie answers 202 and fails the request later
		return
	}
	switch action {
	case "acknowledge":
		alert.Acknowledged, alert.AcknowledgedBy = true, a.User
	case "unacknowledge":
		alert.Acknowledged, alert.AcknowledgedBy = false, ""
	case "close":
		alert.Closed = true
	}
	if a.Note != "" {
		alert.Notes = append(alert.Notes, a.Note)
	}
	accepted()
}

// checkCreate holds a create request to the documented fields and limits.
func checkCreate(c OpsgenieCreate) (bad []string) {
	if strings.TrimSpace(c.Message) == "" {
		bad = append(bad, "message is required")
	}
	bad = append(bad, limited("message", c.Message, 130)...)
	bad = append(bad, limited("alias", c.Alias, 512)...)
	bad = append(bad, limited("description", c.Description, 15000)...)
	bad = append(bad, limited("entity", c.Entity, 512)...)
	bad = append(bad, limited("source", c.Source, 100)...)
	bad = append(bad, limited("user", c.User, 100)...)
	bad = append(bad, limited("note", c.Note, 25000)...)
	if c.Priority != "" && !slices.Contains([]string{"P1", "P2", "P3", "P4", "P5"}, c.Priority) {
		bad = append(bad, fmt.Sprintf("priority %q is not P1 to P5", c.Priority))
	}
	if len(c.Tags) > 20 {
		bad = append(bad, fmt.Sprintf("%d tags, at most 20", len(c.Tags)))
	}
	for _, t := range c.Tags {
		bad = append(bad, limited("tag", t, 50)...)
	}
	total := 0
	for k, v := range c.Details {
		total += utf8.RuneCountInString(k) + utf8.RuneCountInString(v)
	}
	if total > 8000 {
		bad = append(bad, fmt.Sprintf("details of %d characters, at most 8000", total))
	}
	for _, r := range c.Responders {
		typ, _ := r["type"].(string)
		if !slices.Contains([]string{"team", "user", "escalation", "schedule"}, typ) {
			bad = append(bad, fmt.Sprintf("responder type %q", typ))
		}
		if r["id"] == nil && r["name"] == nil && r["username"] == nil {
			bad = append(bad, "a responder needs an id, a name or a username")
		}
		if typ == "user" && r["username"] == nil && r["id"] == nil {
			bad = append(bad, "a user responder is named by username")
		}
	}
	return bad
}

func limited(field, s string, limit int) []string {
	if !utf8.ValidString(s) {
		return []string{field + " is not UTF-8"}
	}
	if n := utf8.RuneCountInString(s); n > limit {
		return []string{fmt.Sprintf("%s of %d characters, at most %d", field, n, limit)}
	}
	return nil
}
