package sinks

import (
	"testing"
	"time"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/rules"
)

// TestDetail: the one sentence of a message is the text without the
// title it repeats — the incident's own title, or for a grouped incident
// the default title of the pod whose text it carries — and a rule's own
// text as it is.
func TestDetail(t *testing.T) {
	for _, c := range []struct {
		reason, title, text, want string
		grouped                   bool
	}{
		{"CrashLoopBackOff", "CrashLoopBackOff: Pod shop/web container app", "CrashLoopBackOff: Pod shop/web container app: restarted 5 times", "restarted 5 times", false},
		{"CrashLoopBackOff", "CrashLoopBackOff: Deployment shop/web: 3/10 pods (container app)", "CrashLoopBackOff: Pod shop/web-1 container app: restarted 2 times", "web-1: restarted 2 times", true},
		{"NodeNotReady", "NodeNotReady: Node n1", "NodeNotReady: Node n1", "", false},
		{"WidgetBroken", "Widget w is broken", "The widget w lost its spring: replace it", "The widget w lost its spring: replace it", false},
	} {
		inc := incident.Incident{Reason: c.reason, Title: c.title, Text: c.text, Grouped: c.grouped}
		if got := Detail(inc); got != c.want {
			t.Errorf("Detail(%q) = %q, want %q", c.text, got, c.want)
		}
	}
}

// TestHeadline: the push text leads with the cluster (when there is one)
// and the object, then what happened; a resolved one says how long it
// lasted, a cluster-scoped object has no namespace.
func TestHeadline(t *testing.T) {
	start := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	inc := incident.Incident{Reason: "CrashLoopBackOff", Object: rules.ObjectRef{Kind: "Deployment", Namespace: "shop", Name: "checkout"},
		Grouped: true, MemberCount: 3, Total: 10, FirstSeen: start}
	node := incident.Incident{Reason: "NodeNotReady", Object: rules.ObjectRef{Kind: "Node", Name: "n1"}, FirstSeen: start,
		ResolvedAt: start.Add(42 * time.Minute), Ended: incident.EndedRecovered}
	for _, c := range []struct {
		n       incident.Notification
		cluster string
		want    string
	}{
		{incident.Notification{Incident: inc, Transition: incident.Firing}, "prod-eu", "prod-eu · shop/checkout: CrashLoopBackOff (3/10 pods)"},
		{incident.Notification{Incident: inc, Transition: incident.Firing}, "", "shop/checkout: CrashLoopBackOff (3/10 pods)"},
		{incident.Notification{Incident: inc, Transition: incident.Repeat}, "prod-eu", "prod-eu · shop/checkout: CrashLoopBackOff (3/10 pods) for 3 h 20 min"},
		{incident.Notification{Incident: node, Transition: incident.Resolved}, "prod-eu", "prod-eu · n1: resolved after 42 min (was NodeNotReady)"},
	} {
		if got := Headline(c.n, c.cluster, start.Add(200*time.Minute)); got != c.want {
			t.Errorf("Headline = %q, want %q", got, c.want)
		}
	}
	if got := Resolution(incident.Notification{Incident: node, Transition: incident.Resolved}, start.Add(time.Hour)); got != "Resolved after 42 min: the node is Ready" {
		t.Errorf("Resolution = %q", got)
	}
}

// TestMuted: a muted message says by what and until when, or while an
// inhibiting incident lasts.
func TestMuted(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 20, 0, 0, time.UTC)
	n := incident.Notification{Incident: incident.Incident{MutedBy: "silence shop/deploy", MutedUntil: now.Add(100 * time.Minute)}}
	if got := Muted(n, now); got != "Muted by silence shop/deploy until 2026-11-22 12:00 UTC (in 1 h 40 min)" {
		t.Errorf("Muted = %q", got)
	}
	n.Incident.MutedBy, n.Incident.MutedUntil = incident.InhibitedBy+"node-notready Node/n1", time.Time{}
	if got := Muted(n, now); got != "Muted: explained by node-notready Node/n1, while that lasts" {
		t.Errorf("Muted by an inhibition = %q", got)
	}
}

// TestEndedByReason: a resolved message says how each detector's problem
// ends in the words of its kind, not the fallback "no longer has it".
func TestEndedByReason(t *testing.T) {
	for reason, want := range map[string]string{
		"AtMaxReplicas":       "the autoscaler no longer wants more than its maximum",
		"MissedSchedule":      "a run started, or the CronJob was suspended",
		"JobRunningLong":      "the Job finished or was suspended",
		"CertificateExpiring": "the certificate was renewed",
		"NoReadyEndpoints":    "the Service has a ready endpoint",
		"PVCPending":          "the claim is bound",
	} {
		inc := incident.Incident{Reason: reason, Ended: incident.EndedRecovered, Object: rules.ObjectRef{Kind: "Thing"}}
		if got := Ended(inc); got != want {
			t.Errorf("%s: %q, want %q", reason, got, want)
		}
	}
}

// TestLocator: where on-call tools place an incident's object, a
// cluster-scoped one without a namespace.
func TestLocator(t *testing.T) {
	pod := incident.Incident{Object: rules.ObjectRef{Kind: "Pod", Namespace: "shop", Name: "api-1"}}
	node := incident.Incident{Object: rules.ObjectRef{Kind: "Node", Name: "node-7"}}
	if got := Locator(pod); got != "shop/pod/api-1" {
		t.Errorf("pod: %q", got)
	}
	if got := Locator(node); got != "node/node-7" {
		t.Errorf("node: %q", got)
	}
}

// TestVolumeEnded: a volume's resolution says the rule's figures (from
// its facts), and stays true without them.
func TestVolumeEnded(t *testing.T) {
	inc := func(reason string, facts map[string]string) incident.Incident {
		return incident.Incident{Reason: reason, Ended: incident.EndedRecovered, Facts: facts, Object: rules.ObjectRef{Kind: "PersistentVolumeClaim", Name: "data"}}
	}
	for _, tt := range []struct {
		inc  incident.Incident
		want string
	}{
		{inc("VolumeFillingUp", map[string]string{"threshold": "80", "horizon": "24 h"}), "the volume is less than 80% full and not forecast to be full within 24 h"},
		{inc("VolumeFillingUp", map[string]string{"threshold": "80"}), "the volume is less than 80% full"},
		{inc("VolumeAlmostFull", map[string]string{"critical": "90"}), "the volume is less than 90% full"},
		{inc("VolumeAlmostFull", nil), "the volume is below its critical threshold"},
	} {
		if got := Ended(tt.inc); got != tt.want {
			t.Errorf("%s %v: %q, want %q", tt.inc.Reason, tt.inc.Facts, got, tt.want)
		}
	}
}
