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
	if s.Ref() != "silence shop/api" || s.Comment != "deploying" || s.CreatedBy != "alice" || s.selector == nil {
		t.Errorf("parsed %+v", s)
	}
	forever, err := Parse(silenceObject("shop", "long", map[string]any{"matchers": map[string]any{"rule": "x"}, "endsAt": "2030-01-01T00:00:00Z"}))
	if err != nil || !forever.EndsAt.Equal(forever.StartsAt.Add(MaxDuration)) {
		t.Errorf("a silence without startsAt ending in 2030: ends %s (%v), want creation + 30 days", forever.EndsAt, err)
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
	cases := []struct {
		name        string
		ns          string
		matchers    map[string]any
		clusterWide bool
		subj        Subject
		want        bool
	}{
		{"workload by name", "shop", map[string]any{"workload": "api"}, false, pod, true},
		{"workload by kind and name", "shop", map[string]any{"workload": "Deployment/api"}, false, pod, true},
		{"another workload", "shop", map[string]any{"workload": "web"}, false, pod, false},
		{"another namespace cannot mute", "other", map[string]any{"workload": "api"}, false, pod, false},
		{"cluster-wide mutes any namespace", "herald", map[string]any{"workload": "api"}, true, pod, true},
		{"cluster-wide namespace glob", "herald", map[string]any{"namespace": "sh*", "rule": "pod-crashloop"}, true, pod, true},
		{"cluster-wide namespace glob misses", "herald", map[string]any{"namespace": "dev-*", "rule": "pod-crashloop"}, true, pod, false},
		{"a namespaced silence names no other namespace", "shop", map[string]any{"namespace": "other", "rule": "pod-crashloop"}, false, pod, false},
		{"name glob", "shop", map[string]any{"name": "api-*"}, false, pod, true},
		{"name glob on a grouped incident's pods", "shop", map[string]any{"name": "api-?"}, false, grouped, true},
		{"kind", "shop", map[string]any{"kind": "Pod", "rule": "pod-crashloop"}, false, pod, true},
		{"kind mismatch", "shop", map[string]any{"kind": "Job"}, false, pod, false},
		{"rule, reason and severity", "shop", map[string]any{"rule": "pod-crashloop", "reason": "CrashLoopBackOff", "severity": "critical"}, false, pod, true},
		{"one matcher off", "shop", map[string]any{"rule": "pod-crashloop", "severity": "warning"}, false, pod, false},
		{"labels", "shop", map[string]any{"labelSelector": map[string]any{"matchLabels": map[string]any{"tier": "web"}}}, false, grouped, true},
		{"labels mismatch", "shop", map[string]any{"labelSelector": map[string]any{"matchLabels": map[string]any{"tier": "db"}}}, false, pod, false},
		{"a node only from herald's namespace", "shop", map[string]any{"kind": "Node"}, false, node, false},
		{"a node, cluster-wide", "herald", map[string]any{"kind": "Node", "name": "n*"}, true, node, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := Parse(silenceObject(c.ns, "s", map[string]any{"matchers": c.matchers, "endsAt": "2026-11-23T12:00:00Z"}))
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Matches(c.subj, c.clusterWide); got != c.want {
				t.Errorf("Matches = %v, want %v", got, c.want)
			}
		})
	}
}
