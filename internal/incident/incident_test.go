package incident

import (
	"testing"
	"time"

	"github.com/herald-k8s/herald/internal/rules"
)

func finding(uid, container string, sustaining bool, restarts string) rules.Finding {
	return rules.Finding{
		Rule: "pod-crashloop", Reason: "CrashLoopBackOff", Severity: "critical",
		Object:    rules.ObjectRef{Kind: "Pod", Namespace: "shop", Name: "web", UID: uid},
		Container: container, Facts: map[string]string{"restartCount": restarts},
		Sinks: []string{"out"}, Sustaining: sustaining,
	}
}

func TestLifecycle(t *testing.T) {
	clock := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	tr := NewTracker(func() time.Time { clock = clock.Add(time.Second); return clock })
	const key = "Pod/shop/web"

	steps := []struct {
		name     string
		findings []rules.Finding
		want     []Transition
	}{
		{"healthy", nil, nil},
		{"sustaining alone opens nothing", []rules.Finding{finding("u1", "app", true, "1")}, nil},
		{"crash loop fires", []rules.Finding{finding("u1", "app", false, "3")}, []Transition{Firing}},
		{"same loop again is quiet", []rules.Finding{finding("u1", "app", false, "4")}, nil},
		{"between crashes is quiet", []rules.Finding{finding("u1", "app", true, "5")}, nil},
		{"second container fires on its own", []rules.Finding{finding("u1", "app", false, "6"), finding("u1", "sidecar", false, "1")}, []Transition{Firing}},
		{"both recover", nil, []Transition{Resolved, Resolved}},
		{"fires again later as a new incident", []rules.Finding{finding("u1", "app", false, "9")}, []Transition{Firing}},
		{"pod replaced (new UID) resolves the old, fires the new", []rules.Finding{finding("u2", "app", false, "1")}, []Transition{Firing, Resolved}},
		{"deleted", nil, []Transition{Resolved}},
	}
	seqs := map[string]int{}
	ids := map[string]bool{}
	for _, st := range steps {
		notes := tr.Reconcile(key, st.findings)
		if len(notes) != len(st.want) {
			t.Fatalf("%s: got %d notifications %+v, want %v", st.name, len(notes), notes, st.want)
		}
		for i, n := range notes {
			if n.Transition != st.want[i] {
				t.Errorf("%s: notification %d is %s, want %s", st.name, i, n.Transition, st.want[i])
			}
			if n.Seq != seqs[n.Incident.ID]+1 {
				t.Errorf("%s: seq %d after %d", st.name, n.Seq, seqs[n.Incident.ID])
			}
			seqs[n.Incident.ID] = n.Seq
			if ids[n.ID()] {
				t.Errorf("%s: idempotency key %s used twice", st.name, n.ID())
			}
			ids[n.ID()] = true
		}
	}
	if open := tr.Open(); open != 0 {
		t.Errorf("%d incidents still open after delete", open)
	}
}

func TestFingerprintStable(t *testing.T) {
	a := finding("u1", "app", false, "1")
	b := finding("u1", "app", true, "7") // facts and sustaining do not matter
	if Fingerprint(a) != Fingerprint(b) {
		t.Error("fingerprint depends on facts")
	}
	c := finding("u1", "sidecar", false, "1")
	if Fingerprint(a) == Fingerprint(c) {
		t.Error("fingerprint ignores the container")
	}
	if got := Fingerprint(a); len(got) != 16 {
		t.Errorf("fingerprint %q is not 16 hex digits", got)
	}
}
