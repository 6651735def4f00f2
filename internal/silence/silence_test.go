package silence

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func silenceObject(ns, name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "herald.io/v1alpha1", "kind": "Silence",
		"metadata": map[string]any{"name": name, "namespace": ns, "creationTimestamp": "2026-11-23T10:00:00Z"},
		"spec":     spec,
	}}
}

// clusterSilenceObject is a ClusterSilence: cluster-scoped, no namespace.
func clusterSilenceObject(name string, spec map[string]any) *unstructured.Unstructured {
	u := silenceObject("", name, spec)
	u.SetKind("ClusterSilence")
	unstructured.RemoveNestedField(u.Object, "metadata", "namespace")
	return u
}

func TestParse(t *testing.T) {
	s, err := Parse(silenceObject("shop", "api", map[string]any{
		"matchers": map[string]any{"workload": "api", "labelSelector": map[string]any{"matchLabels": map[string]any{"tier": "web"}}},
		"endsAt":   "2026-11-23T12:00:00Z", "comment": "deploying", "createdBy": "alice",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if !s.StartsAt.Equal(time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)) || !s.EndsAt.Equal(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)) {
		t.Errorf("starts %s ends %s: want creation time and endsAt", s.StartsAt, s.EndsAt)
	}
	if s.Ref() != "silence shop/api" || s.Cluster || s.Comment != "deploying" || s.CreatedBy != "alice" || s.selector == nil {
		t.Errorf("parsed %+v", s)
	}
	c, err := Parse(clusterSilenceObject("nightly", map[string]any{"matchers": map[string]any{"namespace": "batch-*"}, "endsAt": "2026-11-23T12:00:00Z"}))
	if err != nil || !c.Cluster || c.Namespace != "" || c.Ref() != "clustersilence nightly" || c.key() != "/nightly" {
		t.Errorf("a ClusterSilence parsed as %+v (%v)", c, err)
	}
	forever, err := Parse(silenceObject("shop", "long", map[string]any{"matchers": map[string]any{"rule": "x"}, "endsAt": "2030-01-01T00:00:00Z"}))
	if err != nil || !forever.EndsAt.Equal(forever.StartsAt.Add(MaxDuration)) || !forever.Requested.Equal(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("a silence without startsAt ending in 2030: ends %s (%v), want creation + 30 days", forever.EndsAt, err)
	}
	if week := forever.Capped(7 * 24 * time.Hour); !week.EndsAt.Equal(forever.StartsAt.Add(7 * 24 * time.Hour)) {
		t.Errorf("capped at 7 days: ends %s", week.EndsAt)
	}
	if short, _ := Parse(silenceObject("shop", "short", map[string]any{"matchers": map[string]any{"rule": "x"}, "endsAt": "2026-11-23T12:00:00Z"})); !short.Capped(time.Hour).EndsAt.Equal(short.StartsAt.Add(time.Hour)) ||
		!short.Capped(MaxDuration).EndsAt.Equal(short.Requested) {
		t.Errorf("capping a 2-hour silence: at 1h %s, at 30 days %s", short.Capped(time.Hour).EndsAt, short.Capped(MaxDuration).EndsAt)
	}
	for name, spec := range map[string]map[string]any{
		"no endsAt": {"matchers": map[string]any{"rule": "x"}},
		"bad glob":  {"matchers": map[string]any{"name": "api-["}, "endsAt": "2026-11-23T12:00:00Z"},
		"bad selector": {"matchers": map[string]any{"labelSelector": map[string]any{"matchExpressions": []any{
			map[string]any{"key": "tier", "operator": "Sometimes"}}}}, "endsAt": "2026-11-23T12:00:00Z"},
	} {
		if _, err := Parse(silenceObject("shop", "bad", spec)); err == nil {
			t.Errorf("%s: parsed without an error", name)
		}
	}
}

func TestState(t *testing.T) {
	s := Silence{StartsAt: time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC), EndsAt: time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)}
	for at, want := range map[time.Time]string{
		s.StartsAt.Add(-time.Second): "pending", s.StartsAt: "active", s.EndsAt.Add(-time.Nanosecond): "active", s.EndsAt: "expired",
	} {
		if got := s.State(at); got != want {
			t.Errorf("at %s: %s, want %s", at, got, want)
		}
	}
}

func TestMatches(t *testing.T) {
	pod := Subject{Rule: "pod-crashloop", Reason: "CrashLoopBackOff", Severity: "critical", Namespace: "shop",
		Objects: []Object{{Kind: "Pod", Name: "api-7d9f-x2x", Workload: "Deployment/api", Labels: map[string]string{"tier": "web"}}}}
	grouped := Subject{Rule: "pod-crashloop", Reason: "CrashLoopBackOff", Severity: "critical", Namespace: "shop",
		Objects: []Object{{Kind: "Deployment", Name: "api", Workload: "Deployment/api"}, {Kind: "Pod", Name: "api-1", Workload: "Deployment/api", Labels: map[string]string{"tier": "web"}}}}
	node := Subject{Rule: "node-notready", Reason: "NotReady", Severity: "critical", Objects: []Object{{Kind: "Node", Name: "n1"}}}
	occurrence := pod
	occurrence.Incident = "3f9a0c1d2e4b5a69-2"
	cases := []struct {
		name     string
		ns       string // "": a ClusterSilence
		matchers map[string]any
		subj     Subject
		want     bool
	}{
		{"workload by name", "shop", map[string]any{"workload": "api"}, pod, true},
		{"workload by kind and name", "shop", map[string]any{"workload": "Deployment/api"}, pod, true},
		{"another workload", "shop", map[string]any{"workload": "web"}, pod, false},
		{"another namespace cannot mute", "other", map[string]any{"workload": "api"}, pod, false},
		{"nor can herald's own namespace", "herald", map[string]any{"workload": "api"}, pod, false},
		{"nor herald's own namespace naming another", "herald", map[string]any{"namespace": "shop", "workload": "api"}, pod, false},
		{"a ClusterSilence mutes any namespace", "", map[string]any{"workload": "api"}, pod, true},
		{"a ClusterSilence's namespace glob", "", map[string]any{"namespace": "sh*", "rule": "pod-crashloop"}, pod, true},
		{"a ClusterSilence's namespace glob misses", "", map[string]any{"namespace": "dev-*", "rule": "pod-crashloop"}, pod, false},
		{"a namespaced silence names no other namespace", "shop", map[string]any{"namespace": "other", "rule": "pod-crashloop"}, pod, false},
		{"a namespaced silence naming its own namespace", "shop", map[string]any{"namespace": "shop", "rule": "pod-crashloop"}, pod, true},
		{"name glob", "shop", map[string]any{"name": "api-*"}, pod, true},
		{"name glob on a grouped incident's pods", "shop", map[string]any{"name": "api-?"}, grouped, true},
		{"kind", "shop", map[string]any{"kind": "Pod", "rule": "pod-crashloop"}, pod, true},
		{"kind mismatch", "shop", map[string]any{"kind": "Job"}, pod, false},
		{"rule, reason and severity", "shop", map[string]any{"rule": "pod-crashloop", "reason": "CrashLoopBackOff", "severity": "critical"}, pod, true},
		{"one matcher off", "shop", map[string]any{"rule": "pod-crashloop", "severity": "warning"}, pod, false},
		{"labels", "shop", map[string]any{"labelSelector": map[string]any{"matchLabels": map[string]any{"tier": "web"}}}, grouped, true},
		{"labels mismatch", "shop", map[string]any{"labelSelector": map[string]any{"matchLabels": map[string]any{"tier": "db"}}}, pod, false},
		{"a node not from a namespace", "shop", map[string]any{"kind": "Node"}, node, false},
		{"a node not from herald's namespace", "herald", map[string]any{"kind": "Node"}, node, false},
		{"one incident", "shop", map[string]any{"incident": "3f9a0c1d2e4b5a69-2", "rule": "pod-crashloop"}, occurrence, true},
		{"not its next occurrence", "shop", map[string]any{"incident": "3f9a0c1d2e4b5a69-1", "rule": "pod-crashloop"}, occurrence, false},
		{"a node from a ClusterSilence", "", map[string]any{"kind": "Node", "name": "n*"}, node, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec := map[string]any{"matchers": c.matchers, "endsAt": "2026-11-23T12:00:00Z"}
			obj := silenceObject(c.ns, "s", spec)
			if c.ns == "" {
				obj = clusterSilenceObject("s", spec)
			}
			s, err := Parse(obj)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Matches(c.subj); got != c.want {
				t.Errorf("Matches = %v, want %v", got, c.want)
			}
		})
	}
}
