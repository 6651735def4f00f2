package watcher

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSilenceUntilIsBounded: a pod's herald.io/silence-until is kept in
// the cache only as long as herald's own annotations may be (a time is
// 25 bytes): a pod's author cannot make every cached pod carry 256 KB.
// Both decoders agree.
func TestSilenceUntilIsBounded(t *testing.T) {
	for _, tc := range []struct {
		value string
		kept  bool
	}{
		{"2026-11-26T08:00:00Z", true},
		{strings.Repeat("9", 256<<10), false},
	} {
		pod := crashingPod("shop-0")
		pod.Annotations = map[string]string{SilenceUntilAnnotation: tc.value}
		typed, wire := bothDecodings(t, pod)
		for name, c := range map[string]*CompactPod{"compactPod": typed, "decodeCompactPod": wire} {
			if _, kept := c.Annotations[SilenceUntilAnnotation]; kept != tc.kept {
				t.Errorf("%s: a silence-until of %d bytes kept %v, want %v", name, len(tc.value), kept, tc.kept)
			}
		}
	}
}

// TestTeamIsKeptAndBounded: a pod's herald.io/team (routes match it) is
// kept in the compact cache, one copy per team name, up to a name's
// length; both decoders agree.
func TestTeamIsKeptAndBounded(t *testing.T) {
	for _, tc := range []struct {
		value string
		kept  bool
	}{
		{"payments", true},
		{strings.Repeat("p", maxTeam), true},
		{strings.Repeat("p", maxTeam+1), false},
		{"", false},
	} {
		pod := crashingPod("shop-0")
		pod.Annotations = map[string]string{TeamAnnotation: tc.value, "unrelated": "x"}
		typed, wire := bothDecodings(t, pod)
		for name, c := range map[string]*CompactPod{"compactPod": typed, "decodeCompactPod": wire} {
			if got, kept := c.Annotations[TeamAnnotation]; kept != tc.kept || (kept && got != tc.value) {
				t.Errorf("%s: team of %d bytes kept %v (%q), want %v", name, len(tc.value), kept, got, tc.kept)
			}
			if _, ok := c.Annotations["unrelated"]; ok {
				t.Errorf("%s: an unrelated annotation was cached", name)
			}
		}
	}
}

// TestOwningTeamNamespaceDecides: a pod's author cannot claim another
// team where the namespace names one; only in a namespace without a team
// do the workload's, then the object's annotations count.
func TestOwningTeamNamespaceDecides(t *testing.T) {
	withTeam := func(name, team string) metav1.Object {
		m := &metav1.ObjectMeta{Name: name}
		if team != "" {
			m.Annotations = map[string]string{TeamAnnotation: team}
		}
		return m
	}
	pod := withTeam("web-1", "payments")
	for _, tc := range []struct {
		name         string
		workload, ns metav1.Object
		team, from   string
	}{
		{"the namespace's wins over a pod's claim", withTeam("web", "payments"), withTeam("sandbox", "sandbox"), "sandbox", "namespace sandbox"},
		{"no team on the namespace: the workload's", withTeam("web", "search"), withTeam("shared", ""), "search", "Pod web-1"},
		{"nothing else: the object's", nil, withTeam("shared", ""), "payments", "the object"},
		{"a cluster-scoped object: its own", nil, nil, "payments", "the object"},
		{"too long is no team", nil, withTeam("ns", strings.Repeat("x", maxTeam+1)), "payments", "the object"},
	} {
		got, from := OwningTeam(pod, tc.workload, tc.ns)
		if got != tc.team || from != tc.from {
			t.Errorf("%s: %q from %q, want %q from %q", tc.name, got, from, tc.team, tc.from)
		}
	}
}
