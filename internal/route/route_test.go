package route

import (
	"slices"
	"strings"
	"testing"

	"github.com/herald-k8s/herald/config"
)

const cfgText = `rules:
  - {name: crash, kind: Pod, detector: crashloop, sinks: [slack], channel: "#crash"}
  - {name: oom, kind: Pod, detector: oomkilled, sinks: [slack]}
sinks:
  - name: slack
    slack: {token: {value: xoxb-1, allowPlaintext: true}, channel: "#alerts"}
  - name: pd
    pagerduty:
      routingKey: {value: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa, allowPlaintext: true}
      destinations: {payments: {routingKey: {value: bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb, allowPlaintext: true}}}
routes:
  - name: payments
    match: {teams: [payments]}
    to: [{sink: slack, channel: "#payments", mention: [S0PAYMENTS1]}, {sink: pd, destination: payments}]
  - name: shop-critical
    match: {namespaceLabels: "team=shop", severities: [critical]}
    to: [{sink: slack, channel: "#shop", mention: [U0SHOPONE1]}]
    continue: true
  - name: shop-pager
    match: {namespaces: ["shop-*"], labels: "tier=web"}
    to: [{sink: pd}, {sink: slack, channel: "#ignored-second", mention: [U0PAGERONE1]}]
`

func table(t *testing.T) *Table {
	t.Helper()
	cfg, err := config.Parse("routes.yaml", []byte(cfgText))
	if err != nil {
		t.Fatal(err)
	}
	tab, errs := Compile(cfg)
	if errs != nil {
		t.Fatal(errs)
	}
	return tab
}

func TestDecide(t *testing.T) {
	tab := table(t)
	base := Subject{Namespace: "shop-eu", Rule: "crash", Severity: "critical", Reason: "CrashLoopBackOff", RuleSinks: []string{"slack"}, RuleChannel: "#crash"}
	for _, tc := range []struct {
		name     string
		edit     func(*Subject)
		routes   string
		sinks    string
		dest     map[string]string
		channel  string
		mentions string
	}{
		{"team annotation", func(s *Subject) { s.Team = "payments" }, "payments", "slack,pd", map[string]string{"slack": "#payments", "pd": "payments"}, "#crash", "S0PAYMENTS1"},
		{"continue adds the next route; the first channel stands", func(s *Subject) {
			s.NamespaceLabels = map[string]string{"team": "shop"}
			s.Labels = map[string]string{"tier": "web"}
		}, "shop-critical,shop-pager", "slack,pd", map[string]string{"slack": "#shop"}, "#crash", "U0SHOPONE1"}, // not U0PAGERONE1: its Slack target was not taken
		{"continue with nothing after it", func(s *Subject) { s.NamespaceLabels = map[string]string{"team": "shop"} }, "shop-critical", "slack", map[string]string{"slack": "#shop"}, "#crash", "U0SHOPONE1"},
		{"severity not matched", func(s *Subject) {
			s.Severity = "warning"
			s.NamespaceLabels = map[string]string{"team": "shop"}
		}, "", "slack", nil, "#crash", ""},
		{"no route: the rule's sinks and channel", func(s *Subject) {}, "", "slack", nil, "#crash", ""},
		{"namespace labels unknown never match a selector", func(s *Subject) { s.NamespaceLabels = nil }, "", "slack", nil, "#crash", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := base
			tc.edit(&s)
			d := tab.Decide(s)
			if got := strings.Join(d.Routes, ","); got != tc.routes {
				t.Errorf("routes %q, want %q", got, tc.routes)
			}
			if got := strings.Join(d.Sinks, ","); got != tc.sinks {
				t.Errorf("sinks %q, want %q", got, tc.sinks)
			}
			if len(d.Dest) != len(tc.dest) {
				t.Errorf("dest %v, want %v", d.Dest, tc.dest)
			}
			for k, v := range tc.dest {
				if d.Dest[k] != v {
					t.Errorf("dest %v, want %v", d.Dest, tc.dest)
				}
			}
			if d.Channel != tc.channel || strings.Join(d.Mentions, ",") != tc.mentions {
				t.Errorf("channel %q mentions %v, want %q %q", d.Channel, d.Mentions, tc.channel, tc.mentions)
			}
		})
	}
}

// TestAnnotationChoosesOnlyConfiguredChannels: a namespace's annotation
// may pick a channel the configuration names, never a new one, and never
// overrides a rule's own channel.
func TestAnnotationChoosesOnlyConfiguredChannels(t *testing.T) {
	tab := table(t)
	oom := Subject{Namespace: "web", Rule: "oom", Severity: "warning", RuleSinks: []string{"slack"}}
	for _, tc := range []struct{ annotated, channel, refused string }{
		{"#payments", "#payments", ""},
		{"#alerts", "#alerts", ""},
		{"#ceo-private", "", "not a channel the configuration names"},
		{"", "", ""},
	} {
		s := oom
		s.AnnotatedChannel = tc.annotated
		d := tab.Decide(s)
		if d.Channel != tc.channel || !strings.Contains(d.Refused, tc.refused) || (tc.refused == "") != (d.Refused == "") {
			t.Errorf("annotation %q: channel %q refused %q; want %q, refusal containing %q", tc.annotated, d.Channel, d.Refused, tc.channel, tc.refused)
		}
	}
	crash := oom
	crash.Rule, crash.RuleChannel, crash.AnnotatedChannel = "crash", "#crash", "#payments"
	if d := tab.Decide(crash); d.Channel != "#crash" {
		t.Errorf("an annotation overrode the rule's own channel: %q", d.Channel)
	}
}

func TestExplain(t *testing.T) {
	tab := table(t)
	lines := tab.Explain(Subject{Namespace: "shop-eu", Rule: "crash", Severity: "critical", Team: "payments", Labels: map[string]string{"tier": "web"}})
	want := []string{
		"route payments: matches",
		"route shop-critical: not reached",
		"route shop-pager: not reached",
	}
	for i, w := range want {
		if i >= len(lines) || !strings.HasPrefix(lines[i], w) {
			t.Fatalf("explain:\n%s\nwant line %d to start %q", strings.Join(lines, "\n"), i, w)
		}
	}
	lines = tab.Explain(Subject{Namespace: "web", Rule: "oom", Severity: "warning"})
	if !slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, "no herald.io/team annotation") }) ||
		!slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, `namespace "web" is not one of shop-*`) }) {
		t.Errorf("explain does not say why:\n%s", strings.Join(lines, "\n"))
	}
}

func TestBadSelectorsArePlaced(t *testing.T) {
	cfg, err := config.Parse("r.yaml", []byte(strings.Replace(cfgText, `"team=shop"`, `"team in (a"`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	_, errs := Compile(cfg)
	if errs == nil || !strings.Contains(errs.Error(), "r.yaml:16:30:") || !strings.Contains(errs.Error(), "routes[1].match.namespaceLabels: bad label selector") {
		t.Fatalf("want a placed selector error, got %v", errs)
	}
}

// BenchmarkDecide: routing runs once per reconcile of an object with
// findings (never for a healthy one); its cost beside a reconcile's.
func BenchmarkDecide(b *testing.B) {
	cfg, err := config.Parse("routes.yaml", []byte(cfgText))
	if err != nil {
		b.Fatal(err)
	}
	tab, _ := Compile(cfg)
	s := Subject{Namespace: "shop-eu", NamespaceLabels: map[string]string{"team": "shop"}, Labels: map[string]string{"tier": "web", "app": "checkout"},
		Rule: "crash", Severity: "critical", Reason: "CrashLoopBackOff", RuleSinks: []string{"slack"}}
	b.ReportAllocs()
	for b.Loop() {
		tab.Decide(s)
	}
}
