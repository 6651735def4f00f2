package rules

import (
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func warningEvent(ns string, regarding corev1.ObjectReference) *eventsv1.Event {
	return &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: ns, UID: "e-1"},
		EventTime:  metav1.NewMicroTime(now.Add(-1e9)), Type: "Warning", Reason: "BackOff", Note: "back-off",
		ReportingController: "kubelet", Regarding: regarding,
	}
}

// TestRegardingTrust: which Events the warning-events detector believes.
// An Event speaks for objects of its own namespace only; for a
// cluster-scoped object only from default or kube-system, where
// Kubernetes' recorders put those Events; and only for kinds herald
// knows, in their own API group.
func TestRegardingTrust(t *testing.T) {
	ref := func(apiVersion, kind, ns, name string) corev1.ObjectReference {
		return corev1.ObjectReference{APIVersion: apiVersion, Kind: kind, Namespace: ns, Name: name, UID: "u-1"}
	}
	for _, tt := range []struct {
		name, ns  string
		regarding corev1.ObjectReference
		want      string
	}{
		{"pod in its own namespace", "team-a", ref("v1", "Pod", "team-a", "web"), ""},
		{"no apiVersion", "team-a", ref("", "Pod", "team-a", "web"), ""},
		{"deployment", "team-a", ref("apps/v1", "Deployment", "team-a", "web"), ""},
		{"cronjob", "team-a", ref("batch/v1", "CronJob", "team-a", "nightly"), ""},
		{"node from default", "default", ref("v1", "Node", "", "node-1"), ""},
		{"node from kube-system", "kube-system", ref("v1", "Node", "", "node-1"), ""},
		{"custom kind watched by a rule", "team-a", ref("example.com/v1", "Widget", "team-a", "w"), ""},
		{"pod in another namespace", "team-a", ref("v1", "Pod", "team-b", "web"), IgnoredForeignNamespace},
		{"pod with no namespace", "team-a", ref("v1", "Pod", "", "web"), IgnoredForeignNamespace},
		{"pod regarded from default", "default", ref("v1", "Pod", "team-b", "web"), IgnoredForeignNamespace},
		{"node from a tenant's namespace", "team-a", ref("v1", "Node", "", "node-1"), IgnoredForeignNamespace},
		{"node with a namespace", "default", ref("v1", "Node", "default", "node-1"), IgnoredForeignNamespace},
		{"custom kind in another namespace", "team-a", ref("example.com/v1", "Widget", "team-b", "w"), IgnoredForeignNamespace},
		{"kind named after a label", "team-a", ref("v1", "Severity", "team-a", "info"), IgnoredUnknownKind},
		{"kind named Team", "team-a", ref("v1", "Team", "team-a", "payments"), IgnoredUnknownKind},
		{"pod of another group", "team-a", ref("evil.example.com/v1", "Pod", "team-a", "web"), IgnoredUnknownKind},
		{"deployment of the core group", "team-a", ref("v1", "Deployment", "team-a", "web"), IgnoredUnknownKind},
		{"custom kind without apiVersion", "team-a", ref("", "Widget", "team-a", "w"), IgnoredUnknownKind},
		{"bad apiVersion", "team-a", ref("a/b/c", "Pod", "team-a", "web"), IgnoredUnknownKind},
		{"no kind", "team-a", ref("v1", "", "team-a", "web"), IgnoredUnknownKind},
		{"no name", "team-a", ref("v1", "Pod", "team-a", ""), IgnoredUnknownKind},
		{"a name no object can have", "team-a", ref("v1", "Pod", "team-a", "Web Server!"), IgnoredInvalidReference},
		{"a megabyte of name", "team-a", ref("v1", "Pod", "team-a", strings.Repeat("a", 1<<20)), IgnoredInvalidReference},
		{"a node named too long", "default", ref("v1", "Node", "", strings.Repeat("n", 254)), IgnoredInvalidReference},
		{"a megabyte of uid", "team-a", func() corev1.ObjectReference {
			r := ref("v1", "Pod", "team-a", "web")
			r.UID = types.UID(strings.Repeat("u", 1<<20))
			return r
		}(), IgnoredInvalidReference},
	} {
		t.Run(tt.name, func(t *testing.T) {
			set := compile(t, `
rules:
  - {name: events, kind: Event, detector: warning-events, sinks: [out]}
  - {name: widgets, kind: Widget, apiVersion: example.com/v1, condition: 'true', sinks: [out]}
sinks: [{name: out, stdout: {}}]
`)
			var told []string
			set.OnIgnoredEvent(func(why string, ev *eventsv1.Event) { told = append(told, why) })
			found, errs := set.Evaluate("Event", warningEvent(tt.ns, tt.regarding), now, nil)
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			if tt.want == "" {
				if len(found) != 1 || found[0].Object.Name != tt.regarding.Name || found[0].Object.Namespace != tt.regarding.Namespace || len(told) != 0 {
					t.Fatalf("findings %+v, told %v; want one about %s", found, told, tt.regarding.Name)
				}
				return
			}
			if len(found) != 0 || len(told) != 1 || told[0] != tt.want {
				t.Fatalf("findings %+v, told %v; want none, told %s", found, told, tt.want)
			}
			// The detector alone (without the set's check) believes no
			// more than the set does.
			d, err := detectWarningEvents(warningEvent(tt.ns, tt.regarding), Params{Threshold: 1, Window: 15 * time.Minute}, now)
			if err != nil || len(d) != 0 {
				t.Errorf("the detector alone found %+v (%v)", d, err)
			}
		})
	}
}

// TestIgnoredEventToldOnce: an Event that two rules would read is counted
// once per evaluation; a CEL rule on Events (about the Event itself) still
// sees it; a Normal Event is not counted; the hook may be called from
// many workers at once.
func TestIgnoredEventToldOnce(t *testing.T) {
	set := compile(t, `
rules:
  - {name: a, kind: Event, detector: warning-events, sinks: [out]}
  - {name: b, kind: Event, detector: warning-events, reasons: [BackOff], sinks: [out]}
  - {name: c, kind: Event, condition: 'object.reason == "BackOff"', sinks: [out]}
sinks: [{name: out, stdout: {}}]
`)
	var mu sync.Mutex
	told := 0
	set.OnIgnoredEvent(func(string, *eventsv1.Event) { mu.Lock(); told++; mu.Unlock() })
	forged := warningEvent("team-a", corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: "team-b", Name: "web"})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			found, _ := set.Evaluate("Event", forged, now, nil)
			if len(found) != 1 || found[0].Rule != "c" || found[0].Object.Namespace != "team-a" {
				t.Errorf("findings %+v; want only rule c's, about the Event in team-a", found)
			}
		})
	}
	wg.Wait()
	normal := forged.DeepCopy()
	normal.Type = "Normal"
	set.Evaluate("Event", normal, now, nil)
	if told != 8 {
		t.Errorf("told %d times; want 8 (once per evaluation of the Warning Event)", told)
	}
}

// TestEventReasonIsBounded: an old-style Event's reason is not bounded by
// the API server; it names the incident (its reason, its Alertmanager
// alertname, a NATS subject token), so the finding carries at most
// MaxEventReason characters of it.
func TestEventReasonIsBounded(t *testing.T) {
	ev := warningEvent("team-a", corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: "team-a", Name: "web", UID: "u-1"})
	ev.Reason = strings.Repeat("R", 1<<20)
	d, err := detectWarningEvents(ev, Params{Threshold: 1, Window: 15 * time.Minute}, now)
	if err != nil || len(d) != 1 {
		t.Fatalf("detections %+v (%v), want one", d, err)
	}
	if n := len([]rune(d[0].Reason)); n > MaxEventReason {
		t.Errorf("a reason of %d characters, want at most %d", n, MaxEventReason)
	}
}

func TestWindowReadsAsPeopleSayIt(t *testing.T) {
	for d, want := range map[time.Duration]string{30 * time.Second: "30 s", 15 * time.Minute: "15 min", time.Hour: "1 h", 90 * time.Minute: "1 h 30 min"} {
		if got := window(d); got != want {
			t.Errorf("window(%s) = %q, want %q", d, got, want)
		}
	}
}

// TestEvictionWindow: an evicted pod (which stays until it is
// garbage-collected) is reported for the window after its eviction, then
// no more; one that does not say when it was evicted, while it is there.
func TestEvictionWindow(t *testing.T) {
	evicted := func(ago time.Duration) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"}, Status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", Message: "low on memory"}}
		if ago > 0 {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-ago))}}
		}
		return p
	}
	for _, tc := range []struct {
		ago   time.Duration
		fires bool
	}{{10 * time.Minute, true}, {2 * time.Hour, false}, {0, true}} {
		ds, err := detectEvicted(evicted(tc.ago), Params{Window: time.Hour}, now)
		if err != nil || (len(ds) == 1) != tc.fires {
			t.Errorf("evicted %s ago: %d detections (%v), want fires=%v", tc.ago, len(ds), err, tc.fires)
		}
		if tc.fires && tc.ago > 0 && (ds[0].RecheckAfter <= 0 || ds[0].RecheckAfter > time.Hour) {
			t.Errorf("evicted %s ago: recheck after %s, want when the window ends", tc.ago, ds[0].RecheckAfter)
		}
	}
}
