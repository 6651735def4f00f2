package pagerduty

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/oncalltest"
)

// TestChangedDetails: a trigger's custom details say what changed just
// before the incident began (whatChanged, one change a line) and how to
// undo the rollouts (undo), each bounded like every detail; a section
// that rules a change out offers no undo.
func TestChangedDetails(t *testing.T) {
	s := newSink(t, "http://127.0.0.1:1", routingKey)
	n := notification(incident.Firing, 1)
	n.Changes = &incident.Changes{Rollouts: make([]incident.Rollout, 1),
		Undo:  "kubectl rollout undo deployment/api -n shop --to-revision=6",
		Lines: []string{"Rolled out 4 min before (revision 7, by argocd): image app: shop/api:1.8.2 → 1.9.0", "ConfigMap app-config changed 2 min before"}}
	d := s.Event(n).Payload.CustomDetails
	if d["whatChanged"] != strings.Join(n.Changes.Lines, "\n") || d["undo"] != n.Changes.Undo {
		t.Errorf("whatChanged %q, undo %q", d["whatChanged"], d["undo"])
	}

	n.Changes = oncalltest.HostileChanges(n.Time)
	n.Changes.Lines = append(n.Changes.Lines, strings.Repeat("\xff\"é", 10000))
	n.Changes.Undo = strings.Repeat("€", 10000)
	d = s.Event(n).Payload.CustomDetails
	for _, k := range []string{"whatChanged", "undo"} {
		if v := d[k]; len(v) > maxDetail || !utf8.ValidString(v) || !strings.HasSuffix(v, "…") {
			t.Errorf("%s: %d bytes, valid UTF-8 %v, cut marked %v", k, len(v), utf8.ValidString(v), strings.HasSuffix(v, "…"))
		}
	}

	n.Changes = &incident.Changes{Undo: "kubectl rollout undo deployment/api", Lines: []string{"No change to this workload in the last 30 min"}}
	d = s.Event(n).Payload.CustomDetails
	if _, ok := d["undo"]; ok || d["whatChanged"] != "No change to this workload in the last 30 min" {
		t.Errorf("nothing changed: %v", d)
	}
}
