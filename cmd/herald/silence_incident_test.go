package main

import (
	"strings"
	"testing"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/rules"
)

// TestSilenceForIsNeverWide: silence create --incident mutes one object
// (or workload) and one rule; a ledger entry that names no object, or a
// glob, is refused rather than turned into a silence of a whole rule.
func TestSilenceForIsNeverWide(t *testing.T) {
	beside(t)
	ok := incident.Incident{ID: "a-1", Rule: "crash", Object: rules.ObjectRef{Kind: "Pod", Namespace: "shop", Name: "web-1"}}
	ns, cluster := "", false
	m, err := silenceFor(ok, &ns, &cluster)
	if err != nil || m.Kind != "Pod" || m.Name != "web-1" || m.Rule != "crash" || ns != "shop" {
		t.Fatalf("a plain incident: %+v in %q, %v", m, ns, err)
	}
	for _, bad := range []incident.Incident{
		{ID: "b-1", Rule: "crash", Object: rules.ObjectRef{Kind: "Pod", Namespace: "shop"}},
		{ID: "b-2", Rule: "crash", Object: rules.ObjectRef{Namespace: "shop", Name: "web-1"}},
		{ID: "b-3", Rule: "crash", Object: rules.ObjectRef{Kind: "Pod", Namespace: "shop", Name: "*"}},
		{ID: "b-4", Object: rules.ObjectRef{Kind: "Pod", Namespace: "shop", Name: "web-1"}},
	} {
		ns, cluster := "", false
		if m, err := silenceFor(bad, &ns, &cluster); err == nil || !strings.Contains(err.Error(), "names no single object and rule") {
			t.Errorf("%s: silenced with %+v (%v)", bad.ID, m, err)
		}
	}
}
