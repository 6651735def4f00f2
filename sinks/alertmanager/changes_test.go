package alertmanager

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/oncalltest"
)

// TestChangedAnnotations: what changed just before the incident began is
// the what_changed annotation, one change a line, and the command that
// undoes the rollouts is undo; each is bounded like every annotation
// (lines and names come from people herald does not trust), and a
// section that rules a change out offers no undo.
func TestChangedAnnotations(t *testing.T) {
	s, err := New(Options{Name: "am", URLs: []string{"http://127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	n := crashLoop(time.Now())
	n.Changes = &incident.Changes{Rollouts: make([]incident.Rollout, 1), Objects: make([]incident.ObjectChange, 1),
		Undo: "kubectl rollout undo deployment/api -n shop --to-revision=6",
		Lines: []string{"Rolled out 4 min before (revision 7, by argocd): image app: shop/api:1.8.2 → 1.9.0",
			"ConfigMap app-config changed 2 min before; Deployment/cart, which reads it too, fails since"}}
	a := s.alert(n).Annotations
	if got, want := a["what_changed"], strings.Join(n.Changes.Lines, "\n"); got != want {
		t.Errorf("what_changed = %q, want %q", got, want)
	}
	if a["undo"] != n.Changes.Undo {
		t.Errorf("undo = %q", a["undo"])
	}

	n.Changes = oncalltest.HostileChanges(n.Time)
	n.Changes.Lines = append(n.Changes.Lines, strings.Repeat("\xff<é>", 10000))
	n.Changes.Undo = strings.Repeat("ü", 10000)
	a = s.alert(n).Annotations
	for _, k := range []string{"what_changed", "undo"} {
		if v := a[k]; len(v) > maxAnnotation || !utf8.ValidString(v) || !strings.HasSuffix(v, "…") {
			t.Errorf("%s: %d bytes, valid UTF-8 %v, cut marked %v", k, len(v), utf8.ValidString(v), strings.HasSuffix(v, "…"))
		}
	}

	n.Changes = &incident.Changes{Undo: "kubectl rollout undo deployment/api", Lines: []string{"No change to this workload in the last 30 min"}}
	a = s.alert(n).Annotations
	if _, ok := a["undo"]; ok || a["what_changed"] != "No change to this workload in the last 30 min" {
		t.Errorf("nothing changed: %v", a)
	}
	n.Changes = nil
	if a = s.alert(n).Annotations; a["what_changed"] != "" || a["undo"] != "" {
		t.Errorf("no section, yet %v", a)
	}
}
