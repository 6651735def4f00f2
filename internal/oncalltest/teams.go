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
)

// TeamsMessageLimit is Teams' documented limit on a message, card
// included.
const TeamsMessageLimit = 28 << 10

// Teams is a Workflows webhook stand-in at URL (with a sig= query, as
// real ones have).
type Teams struct {
	URL string

	mu      sync.Mutex
	cards   []map[string]any
	invalid []string
	fail    int
}

// Fail answers the next n posts 503, as Workflows does when a flow
// cannot run.
func (tm *Teams) Fail(n int) {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	tm.fail = n
}

// NewTeams starts a stand-in for the test.
func NewTeams(t testing.TB) *Teams {
	tm := &Teams{}
	srv := httptest.NewServer(http.HandlerFunc(tm.serve))
	t.Cleanup(srv.Close)
	tm.URL = srv.URL + "/workflows/abc/triggers/manual/paths/invoke?api-version=1&sig=SECRET-SIGNATURE"
	return tm
}

// Cards returns the Adaptive Cards accepted, in order.
func (tm *Teams) Cards() []map[string]any {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return append([]map[string]any(nil), tm.cards...)
}

// Invalid returns why each rejected request was rejected.
func (tm *Teams) Invalid() []string {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return append([]string(nil), tm.invalid...)
}

func (tm *Teams) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	var problems []string
	if r.URL.Query().Get("sig") != "SECRET-SIGNATURE" {
		problems = append(problems, "wrong or missing sig")
	}
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		problems = append(problems, "Content-Type is not application/json")
	}
	card, more := CheckTeamsMessage(body)
	problems = append(problems, more...)
	tm.mu.Lock()
	defer tm.mu.Unlock()
	if tm.fail > 0 {
		tm.fail--
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	if len(problems) > 0 {
		tm.invalid = append(tm.invalid, strings.Join(problems, "; "))
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	tm.cards = append(tm.cards, card)
	w.WriteHeader(http.StatusAccepted) // Workflows runs the flow later
}

// CheckTeamsMessage checks a message for Workflows' "post card" flow: the
// size limit, the message envelope with one Adaptive Card attachment, and
// the card's required fields (Adaptive Cards schema: a version; body
// elements with a type; TextBlocks with text; FactSets with title/value
// facts; OpenUrl actions with a url). It returns the card.
func CheckTeamsMessage(body []byte) (map[string]any, []string) {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if len(body) > TeamsMessageLimit {
		bad("message of %d bytes is over Teams' 28 KB", len(body))
	}
	var msg struct {
		Type        string `json:"type"`
		Attachments []struct {
			ContentType string         `json:"contentType"`
			Content     map[string]any `json:"content"`
		} `json:"attachments"`
	}
	if err := json.Unmarshal(body, &msg); err != nil {
		bad("not JSON: %v", err)
		return nil, problems
	}
	if msg.Type != "message" {
		bad("type %q, want message", msg.Type)
	}
	if len(msg.Attachments) != 1 {
		bad("%d attachments, want one card", len(msg.Attachments))
		return nil, problems
	}
	a := msg.Attachments[0]
	if a.ContentType != "application/vnd.microsoft.card.adaptive" {
		bad("attachment contentType %q", a.ContentType)
	}
	c := a.Content
	if c["type"] != "AdaptiveCard" {
		bad("content type %v, want AdaptiveCard", c["type"])
	}
	if v, _ := c["version"].(string); v == "" {
		bad("the card has no version")
	}
	items, _ := c["body"].([]any)
	if len(items) == 0 {
		bad("the card has no body")
	}
	for i, it := range items {
		el, _ := it.(map[string]any)
		switch el["type"] {
		case "TextBlock":
			if s, _ := el["text"].(string); s == "" {
				bad("body[%d]: a TextBlock needs text", i)
			}
		case "FactSet":
			facts, _ := el["facts"].([]any)
			for j, f := range facts {
				fm, _ := f.(map[string]any)
				if _, ok := fm["title"].(string); !ok {
					bad("body[%d].facts[%d] has no title", i, j)
				}
				if _, ok := fm["value"].(string); !ok {
					bad("body[%d].facts[%d] has no value", i, j)
				}
			}
		default:
			bad("body[%d]: element type %v", i, el["type"])
		}
	}
	actions, _ := c["actions"].([]any)
	for i, it := range actions {
		act, _ := it.(map[string]any)
		if act["type"] == "Action.OpenUrl" {
			if u, _ := act["url"].(string); u == "" {
				bad("actions[%d]: Action.OpenUrl needs a url", i)
			}
		}
	}
	return c, problems
}
