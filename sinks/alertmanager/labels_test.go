package alertmanager

import (
	"maps"
	"testing"
	"time"
)

// TestObjectCannotRewriteLabels: the label named after the object's kind
// is set only for kinds herald knows and never replaces a label herald or
// the configuration set, so an object (an Event's regarding kind of
// "Severity" or "Team") cannot re-route its alert.
func TestObjectCannotRewriteLabels(t *testing.T) {
	s, err := New(Options{Name: "am", URLs: []string{"http://127.0.0.1:1"}, ClusterName: "prod-eu",
		Labels: map[string]string{"team": "platform", "pod": "configured"}, RuleLabels: map[string]map[string]string{"pod-crashloop": {"page": "true"}}})
	if err != nil {
		t.Fatal(err)
	}
	base := map[string]string{"alertname": "CrashLoopBackOff", "severity": "critical", "namespace": "shop", "container": "api",
		"rule": "pod-crashloop", "cluster": "prod-eu", "team": "platform", "pod": "configured", "page": "true"}
	with := func(k, v string) map[string]string {
		m := maps.Clone(base)
		m[k] = v
		return m
	}
	for _, tt := range []struct {
		kind, name string
		want       map[string]string
	}{
		{"Pod", "api-1", base}, // pod is configured: the configuration wins
		{"Deployment", "api", with("deployment", "api")},
		{"Node", "node-1", with("node", "node-1")},
		{"Severity", "info", with("object", "Severity/info")},
		{"Team", "attacker", with("object", "Team/attacker")},
		{"Alertname", "Fake", with("object", "Alertname/Fake")},
		{"Widget", "w-1", with("object", "Widget/w-1")},
	} {
		t.Run(tt.kind, func(t *testing.T) {
			n := crashLoop(time.Now())
			n.Incident.Object.Kind, n.Incident.Object.Name = tt.kind, tt.name
			if got := s.alert(n).Labels; !maps.Equal(got, tt.want) {
				t.Errorf("labels %v\nwant   %v", got, tt.want)
			}
		})
	}
}
