package teams

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/oncalltest"
)

// changedSection is the card's "What changed" section: the facts under
// its title (nil: none), and whether the card's own facts that follow
// are set apart.
func changedSection(t *testing.T, c map[string]any) (facts []map[string]any, separated bool) {
	t.Helper()
	raw, err := json.Marshal(c["body"])
	if err != nil {
		t.Fatal(err)
	}
	var body []map[string]any
	json.Unmarshal(raw, &body)
	for i, b := range body {
		if b["text"] != "What changed" {
			continue
		}
		if i+1 == len(body) || body[i+1]["type"] != "FactSet" {
			t.Fatalf("no fact set under the title: %v", body[i+1:])
		}
		for _, f := range body[i+1]["facts"].([]any) {
			facts = append(facts, f.(map[string]any))
		}
		if i+2 < len(body) && body[i+2]["type"] == "FactSet" {
			separated = body[i+2]["separator"] == true
		}
		return facts, separated
	}
	return nil, false
}

func rolledOut() *incident.Changes {
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	return &incident.Changes{Workload: "Deployment/checkout", At: at,
		Rollouts: []incident.Rollout{{Revision: "7", At: at.Add(-4 * time.Minute), By: "argocd", Known: true}},
		Undo:     "kubectl rollout undo deployment/checkout -n shop --to-revision=6",
		Objects:  []incident.ObjectChange{{Kind: "ConfigMap", Name: "app-config", At: at.Add(-2 * time.Minute), AlsoFailing: []string{"Deployment/cart"}}},
		Lines: []string{"Rolled out 4 min before (revision 7, by argocd): image app: shop/checkout:1.8.2 → 1.9.0",
			"ConfigMap app-config changed 2 min before; Deployment/cart, which reads it too, fails since"}}
}

// TestChangedSection: an open incident's card says what changed just
// before as facts under a title, the card's own facts set apart below;
// a resolved or muted card does not.
func TestChangedSection(t *testing.T) {
	want := []map[string]any{
		{"title": "Rollout", "value": "4 min before (revision 7, by argocd): image app: shop/checkout:1.8.2 → 1.9.0"},
		{"title": "ConfigMap app-config", "value": "changed 2 min before; Deployment/cart, which reads it too, fails since"},
		{"title": "Undo", "value": "kubectl rollout undo deployment/checkout -n shop --to-revision=6"},
	}
	for _, tr := range []incident.Transition{incident.Firing, incident.Updated, incident.Repeat, incident.Resolved, incident.Silenced} {
		n := notification(tr)
		n.Changes = rolledOut()
		facts, separated := changedSection(t, card(n, "prod-eu", full, n.Time))
		if tr == incident.Resolved || tr == incident.Silenced {
			if facts != nil {
				t.Errorf("%s: shown: %v", tr, facts)
			}
			continue
		}
		if !reflect.DeepEqual(facts, want) || !separated {
			t.Errorf("%s: facts %q (own facts set apart: %v)\nwant %q", tr, facts, separated, want)
		}
	}
}

// TestChangedEscaped: every title and value of the section (ConfigMap,
// image, env var and field manager names, change-cause, the undo
// command) escapes what Markdown reads, and the plain line that rules a
// change out does too. It fails if the section's escaping is removed.
func TestChangedEscaped(t *testing.T) {
	n := notification(incident.Firing)
	n.Changes = oncalltest.HostileChanges(n.Time)
	facts, _ := changedSection(t, card(n, "prod-eu", full, n.Time))
	if len(facts) != 3 {
		t.Fatalf("%d facts, want a rollout, a ConfigMap and the undo: %v", len(facts), facts)
	}
	for _, f := range facts {
		checkEscaped(t, f["title"].(string))
		checkEscaped(t, f["value"].(string))
	}
	if title := facts[1]["title"].(string); !strings.HasPrefix(title, `ConfigMap app-config \<!channel\>`) {
		t.Errorf("ConfigMap's title %q", title)
	}
	n.Changes = &incident.Changes{Lines: []string{"No change to " + oncalltest.HostileText}}
	body, err := json.Marshal(card(n, "prod-eu", full, n.Time))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(body), `No change to \\\u003c!channel\\\u003e`) {
		t.Errorf("the plain line is not there, escaped: %s", body)
	}
	checkMarkdownText(t, body)
}

// TestChangedWithinBudget: a huge section gives way with the facts, and
// the card stays a valid Teams message.
func TestChangedWithinBudget(t *testing.T) {
	n := notification(incident.Firing)
	c := rolledOut()
	c.Undo = strings.Repeat("*", 10000)
	c.Lines = nil
	for range 50 {
		c.Lines = append(c.Lines, strings.Repeat("_<", 5000))
	}
	n.Changes = c
	body, err := Render(n, "prod-eu", n.Time)
	if err != nil {
		t.Fatal(err)
	}
	if _, problems := oncalltest.CheckTeamsMessage(body); len(problems) > 0 {
		t.Fatal(problems)
	}
}
