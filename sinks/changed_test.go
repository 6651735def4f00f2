package sinks

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/oncalltest"
)

func rollout() *incident.Changes {
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	return &incident.Changes{Workload: "Deployment/checkout", Since: at.Add(-30 * time.Minute), At: at,
		Rollouts: []incident.Rollout{{Revision: "7", At: at.Add(-4 * time.Minute), By: "argocd", Known: true}},
		Undo:     "kubectl rollout undo deployment/checkout -n shop --to-revision=6",
		Objects: []incident.ObjectChange{{Kind: "ConfigMap", Name: "app-config", At: at.Add(-2 * time.Minute), AlsoFailing: []string{"Deployment/cart"}},
			{Kind: "Secret", Name: "db", At: at.Add(-time.Minute), MetaToo: true}},
		Lines: []string{
			"Rolled out 4 min before (revision 7, by argocd): image app: shop/checkout:1.8.2 → 1.9.0; env DB_POOL changed",
			"ConfigMap app-config changed 2 min before; Deployment/cart, which reads it too, fails since",
			"Secret db changed (its labels or annotations too: the data may not have) 1 min before",
			"Changes to 3 referenced ConfigMaps or Secrets are unknown: herald tracks a bounded number and more exist",
		}}
}

// TestChangedOnOpenNotifications: the section shows where the crash
// context does, on an open incident's notifications, never on a resolved,
// muted or digest one, nor when it has nothing to say.
func TestChangedOnOpenNotifications(t *testing.T) {
	for tr, want := range map[incident.Transition]bool{incident.Firing: true, incident.Updated: true, incident.Repeat: true,
		incident.Acknowledged: true, incident.Resolved: false, incident.Silenced: false, incident.Digest: false} {
		n := incident.Notification{Transition: tr, Changes: rollout()}
		if got := Changed(n) != nil; got != want {
			t.Errorf("%s: shown %v, want %v", tr, got, want)
		}
	}
	for _, c := range []*incident.Changes{nil, {Workload: "Deployment/x"}} {
		if Changed(incident.Notification{Transition: incident.Firing, Changes: c}) != nil {
			t.Errorf("%+v: a section with no line is shown", c)
		}
	}
}

// TestChangeFacts: each line is titled by what it is about, an object's
// title taken off its value, the undo last; a line that does not start
// with its object's name keeps a neutral title.
func TestChangeFacts(t *testing.T) {
	c := rollout()
	want := []Fact{
		{"Rollout", "4 min before (revision 7, by argocd): image app: shop/checkout:1.8.2 → 1.9.0; env DB_POOL changed"},
		{"ConfigMap app-config", "changed 2 min before; Deployment/cart, which reads it too, fails since"},
		{"Secret db", "changed (its labels or annotations too: the data may not have) 1 min before"},
		{"Note", "Changes to 3 referenced ConfigMaps or Secrets are unknown: herald tracks a bounded number and more exist"},
		{"Undo", "kubectl rollout undo deployment/checkout -n shop --to-revision=6"},
	}
	if got := ChangeFacts(c); !reflect.DeepEqual(got, want) {
		t.Errorf("facts\n%q\nwant\n%q", got, want)
	}
	c.Objects[0].Name = "other"
	if got := ChangeFacts(c)[1]; got.Title != "Note" {
		t.Errorf("a line not about its object is titled %q", got.Title)
	}
}

// TestChangeLinesBounded: however many lines, a message shows at most
// MaxChangeLines, the last saying how many were left out.
func TestChangeLinesBounded(t *testing.T) {
	c := &incident.Changes{}
	for i := range 25 {
		c.Lines = append(c.Lines, fmt.Sprintf("Rolled out %d min before", i))
	}
	c.Rollouts = make([]incident.Rollout, 25)
	got := ChangeLines(c)
	if len(got) != MaxChangeLines || got[MaxChangeLines-1] != "… and 16 more" {
		t.Errorf("%d lines, last %q", len(got), got[len(got)-1])
	}
	facts := ChangeFacts(c)
	if f := facts[MaxChangeLines-1]; f.Title != "" || f.Value != "… and 16 more" {
		t.Errorf("the count of the lines cut reads %+v", f)
	}
	if len(c.Lines) != 25 {
		t.Error("ChangeLines changed the section")
	}
}

// TestNothingChangedHasNoUndo: a section that rules a change out is not
// a change: no undo, even if one were set.
func TestNothingChangedHasNoUndo(t *testing.T) {
	c := &incident.Changes{Undo: "kubectl rollout undo deployment/x", Lines: []string{"No change to this workload in the last 30 min"}}
	if !NothingChanged(c) {
		t.Fatal("no rollout and no object, yet a change")
	}
	for _, f := range ChangeFacts(c) {
		if f.Title == "Undo" {
			t.Errorf("undo offered when nothing changed: %+v", f)
		}
	}
}

// TestPayloadCarriesChanges: the payload says the section as it is, and
// a hostile one (markup, quotes, control characters, line separators)
// comes back from its JSON unchanged.
func TestPayloadCarriesChanges(t *testing.T) {
	n := crashNotification()
	n.Changes = oncalltest.HostileChanges(n.Time)
	p := NewPayload(n)
	if p.Changes != n.Changes {
		t.Fatal("NewPayload dropped the section")
	}
	b, err := p.AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(b) || strings.ContainsAny(string(b), "\x00\u2028<>") {
		t.Fatalf("not JSON, or raw characters left: %s", b)
	}
	var back Payload
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	// Invalid UTF-8 would come back as U+FFFD; HostileChanges has none.
	if !reflect.DeepEqual(back.Changes, n.Changes) {
		t.Errorf("round trip:\n got %+v\nwant %+v", back.Changes, n.Changes)
	}
	if q := NewPayload(incident.Notification{Transition: incident.Firing}); q.Changes != nil {
		t.Error("a section out of nothing")
	}
}
