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
	tr := NewTracker(Options{Now: func() time.Time { clock = clock.Add(time.Second); return clock }})
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
		notes, _ := tr.Reconcile(key, st.findings)
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

func TestForWaitsBeforeFiring(t *testing.T) {
	clock := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	tr := NewTracker(Options{Now: func() time.Time { return clock }})
	pending := finding("u1", "", false, "0")
	pending.Reason, pending.For = "PodPending", 5*time.Minute

	notes, recheck := tr.Reconcile("k", []rules.Finding{pending})
	if len(notes) != 0 || recheck != 5*time.Minute {
		t.Fatalf("first sight: %v, recheck %s; want nothing, recheck in 5m", notes, recheck)
	}
	clock = clock.Add(3 * time.Minute)
	notes, recheck = tr.Reconcile("k", []rules.Finding{pending})
	if len(notes) != 0 || recheck != 2*time.Minute {
		t.Fatalf("after 3m: %v, recheck %s; want nothing, recheck in 2m", notes, recheck)
	}
	clock = clock.Add(2 * time.Minute)
	notes, _ = tr.Reconcile("k", []rules.Finding{pending})
	if len(notes) != 1 || notes[0].Transition != Firing {
		t.Fatalf("after 5m: %v, want firing", notes)
	}

	// A finding that goes away before its for: starts the clock again.
	other := pending
	other.Object.UID = "u2"
	tr.Reconcile("k2", []rules.Finding{other})
	clock = clock.Add(4 * time.Minute)
	tr.Reconcile("k2", nil)
	clock = clock.Add(2 * time.Minute)
	if notes, _ := tr.Reconcile("k2", []rules.Finding{other}); len(notes) != 0 {
		t.Fatalf("the for: clock did not restart: %v", notes)
	}

	// Since from the object counts instead of first sight (restart-proof).
	since := pending
	since.Object.UID, since.Since = "u3", clock.Add(-10*time.Minute)
	if notes, _ := tr.Reconcile("k3", []rules.Finding{since}); len(notes) != 1 {
		t.Fatalf("a finding older than for: (by the object) did not fire at once: %v", notes)
	}
}
