package intake

import (
	"testing"
	"time"

	"github.com/herald-k8s/herald/config"
	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/rules"
	"github.com/herald-k8s/herald/watcher"
)

func ruleSet(t *testing.T) *rules.Set {
	t.Helper()
	cfg, err := config.Parse("herald.yaml", []byte("sinks:\n  - name: chat\n    stdout: {}\nrules:\n  - name: crashloop\n    kind: Pod\n    detector: crashloop\n    sinks: [chat]\n"))
	if err != nil {
		t.Fatal(err)
	}
	set, err := rules.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// openAll and noneOpen answer whether herald's own incident is open.
func openAll(string) bool  { return true }
func noneOpen(string) bool { return false }

var webPod = watcher.Key{Kind: "Pod", Namespace: "shop", Name: "web-1"}

func crashLooping() rules.Finding {
	return rules.Finding{Rule: "crashloop", Reason: "CrashLoopBackOff", Severity: "warning", Object: rules.ObjectRef{Kind: "Pod", Namespace: "shop", Name: "web-1", UID: "u1"},
		Container: "app", Facts: map[string]string{"restartCount": "7"}}
}

func podAlert(fp string) rules.Alert {
	return rules.Alert{Name: "KubePodCrashLooping", Fingerprint: fp, Severity: "info", Mapped: true,
		Object: rules.ObjectRef{Kind: "Pod", Namespace: "shop", Name: "web-1"}, Container: "app",
		Summary: "Pod is crash looping.", Labels: map[string]string{"alertname": "KubePodCrashLooping", "pod": "web-1"}}
}

// TestJoinHeraldFirst: herald's own check saw the crash loop first; the
// alert joins it (one finding, herald's, saying Prometheus agrees), and
// stays joined while herald's finding comes and goes.
func TestJoinHeraldFirst(t *testing.T) {
	set, s := ruleSet(t), NewStore()
	s.put(webPod, podAlert("0123456789abcdef"), "CrashLoopBackOff")
	got := s.Join(webPod, []rules.Finding{crashLooping()}, set, openAll)
	if len(got) != 1 || got[0].Rule != "crashloop" || got[0].Facts["agrees"] != "Prometheus (KubePodCrashLooping)" {
		t.Fatalf("joined findings = %+v, want herald's one saying Prometheus agrees", got)
	}
	if got := s.Join(webPod, nil, set, noneOpen); len(got) != 0 {
		t.Errorf("herald sees it no more: %d findings, want none (herald's check speaks for both)", len(got))
	}
}

// TestJoinAlertFirst: the alert came first and made its incident;
// herald's own finding joins it, so no second incident opens.
func TestJoinAlertFirst(t *testing.T) {
	set, s := ruleSet(t), NewStore()
	s.put(webPod, podAlert("0123456789abcdef"), "CrashLoopBackOff")
	first := s.Join(webPod, nil, set, noneOpen)
	if len(first) != 1 || first[0].Rule != rules.AlertRule {
		t.Fatalf("findings = %+v, want the alert's", first)
	}
	if !first[0].NoContext {
		t.Error("an alert alone reads the pod's log: on its word alone, no crash context")
	}
	got := s.Join(webPod, []rules.Finding{crashLooping()}, set, noneOpen)
	if len(got) != 1 || got[0].Rule != rules.AlertRule || got[0].Facts["agrees"] != "herald (CrashLoopBackOff)" {
		t.Fatalf("findings = %+v, want the alert's alone, saying herald agrees", got)
	}
	if incident.Fingerprint(got[0]) != incident.Fingerprint(first[0]) {
		t.Error("the alert's incident changed identity when herald's finding joined it")
	}
	if got[0].NoContext || got[0].Facts["restartCount"] != "7" || got[0].Facts["problem"] != "CrashLoopBackOff" {
		t.Errorf("with herald seeing the crash loop, the alert's finding has crash context %v, facts %v", !got[0].NoContext, got[0].Facts)
	}
}

// TestUnrelatedFindingsStay: an alert joins only the finding of the
// reason that agrees with it, on its container.
func TestUnrelatedFindingsStay(t *testing.T) {
	set, s := ruleSet(t), NewStore()
	s.put(webPod, podAlert("0123456789abcdef"), "CrashLoopBackOff")
	other := crashLooping()
	other.Container = "sidecar"
	oom := crashLooping()
	oom.Reason = "OOMKilled"
	got := s.Join(webPod, []rules.Finding{other, oom}, set, noneOpen)
	if len(got) != 3 {
		t.Fatalf("%d findings, want the two of herald's (another container, another reason) and the alert's", len(got))
	}
}

// TestSeedFromLedger: a new leader's store holds the alerts the ledger
// has open, under the keys of their incidents, so their reconcile
// continues them rather than resolving them.
func TestSeedFromLedger(t *testing.T) {
	set, s := ruleSet(t), NewStore()
	s.put(webPod, podAlert("0123456789abcdef"), "CrashLoopBackOff")
	f := s.Join(webPod, nil, set, noneOpen)[0]
	inc := incident.Incident{Rule: f.Rule, Reason: f.Reason, Severity: f.Severity, Object: f.Object, Container: f.Container,
		Facts: f.Facts, Title: f.Title, Text: f.Text, FirstSeen: time.Now(), Members: []string{webPod.String()}}
	resolved := inc
	resolved.Facts = map[string]string{"alertFingerprint": "fedcba9876543210"}
	resolved.ResolvedAt = time.Now()
	own := incident.Incident{Rule: "crashloop", Members: []string{webPod.String()}}

	next := NewStore()
	if n := next.Seed([]incident.Incident{inc, resolved, own}, config.DefaultAgreeFor); n != 1 {
		t.Fatalf("seeded %d alerts, want the one open", n)
	}
	g := next.Join(webPod, []rules.Finding{crashLooping()}, set, noneOpen)
	if len(g) != 1 || incident.Fingerprint(g[0]) != incident.Fingerprint(f) {
		t.Fatalf("after the failover the findings are %+v; want the alert's incident, herald's joined to it", g)
	}
	if g[0].Title != f.Title || g[0].Text != f.Text {
		t.Errorf("the alert's message changed across the failover: %q/%q, was %q/%q", g[0].Title, g[0].Text, f.Title, f.Text)
	}
}

// TestJoinHeraldStillWaiting: herald's check sees the problem but its
// rule's for: has not passed, so it has not spoken: the alert speaks
// (Prometheus waited already), and herald's finding joins it.
func TestJoinHeraldStillWaiting(t *testing.T) {
	set, s := ruleSet(t), NewStore()
	s.put(webPod, podAlert("0123456789abcdef"), "CrashLoopBackOff")
	own := crashLooping()
	own.Severity = "critical"
	got := s.Join(webPod, []rules.Finding{own}, set, noneOpen)
	if len(got) != 1 || got[0].Rule != rules.AlertRule || got[0].Facts["agrees"] != "herald (CrashLoopBackOff)" {
		t.Fatalf("findings = %+v, want the alert's alone, saying herald agrees", got)
	}
	// An alert (a forged one: severity info) never makes herald's own
	// finding less severe by taking it over.
	if got[0].Severity != "critical" {
		t.Errorf("severity %q, want herald's critical", got[0].Severity)
	}
}
