package config

import (
	"strings"
	"testing"
)

const routesBase = `clusterName: prod-eu
rules:
  - name: crash
    kind: Pod
    detector: crashloop
    sinks: [slack]
sinks:
  - name: slack
    slack: {token: {value: xoxb-1, allowPlaintext: true}, channel: "#alerts"}
  - name: pd
    pagerduty:
      routingKey: {value: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa, allowPlaintext: true}
      destinations:
        payments: {routingKey: {value: bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb, allowPlaintext: true}}
  - name: teams
    teams:
      url: https://example.invalid/a
      destinations:
        payments: {url: https://example.invalid/b}
`

func TestRoutes(t *testing.T) {
	good := routesBase + `routes:
  - name: payments
    match: {teams: [payments], namespaces: ["pay-*"], severities: [critical], rules: [crash]}
    to:
      - {sink: slack, channel: "#payments", mention: [S0123ABCDE, U0456FGHIJ]}
      - {sink: pd, destination: payments}
      - {sink: teams, destination: payments}
    continue: true
  - name: everything-else
    to: [{sink: slack}]
`
	cfg, err := Parse("good.yaml", []byte(good))
	if err != nil {
		t.Fatalf("a good routes block is refused: %v", err)
	}
	if len(cfg.Routes) != 2 || cfg.Routes[0].To[2].Destination != "payments" || !cfg.Routes[0].Continue || !cfg.HasCatchAll() {
		t.Fatalf("routes decoded wrong: %+v", cfg.Routes)
	}
	if cfg.Sinks[0].Slack.ClusterName != "prod-eu" || cfg.Sinks[1].PagerDuty.ClusterName != "prod-eu" {
		t.Errorf("the top-level clusterName did not reach the sinks: %q %q", cfg.Sinks[0].Slack.ClusterName, cfg.Sinks[1].PagerDuty.ClusterName)
	}

	for _, tc := range []struct{ name, routes, want string }{
		{"unknown sink", `[{name: a, to: [{sink: mail}]}]`, `routes[0].to[0].sink: unknown sink "mail"`},
		{"no name", `[{to: [{sink: slack}]}]`, `routes[0]: a route needs a name`},
		{"twice", `[{name: a, to: [{sink: slack}]}, {name: a, to: [{sink: slack}]}]`, `routes[1].name: route name "a" is used twice`},
		{"no targets", `[{name: a}]`, `routes[0]: a route needs to: at least one sink`},
		{"channel on pagerduty", `[{name: a, to: [{sink: pd, channel: "#x"}]}]`, `routes[0].to[0].channel: channel applies to a slack sink`},
		{"bad channel", `[{name: a, to: [{sink: slack, channel: "alerts"}]}]`, `is not a Slack channel`},
		{"mention by handle", `[{name: a, to: [{sink: slack, mention: ["@ana"]}]}]`, `routes[0].to[0].mention[0]: "@ana" is not a Slack ID`},
		{"unknown destination", `[{name: a, to: [{sink: pd, destination: shop}]}]`, `sink "pd" has no destination "shop"; its destinations: payments`},
		{"destination on slack", `[{name: a, to: [{sink: slack, destination: x}]}]`, `sink "slack" (slack) has no destinations`},
		{"unknown rule", `[{name: a, match: {rules: [oom]}, to: [{sink: slack}]}]`, `routes[0].match.rules[0]: unknown rule "oom"; rules: crash`},
		{"bad severity", `[{name: a, match: {severities: [page]}, to: [{sink: slack}]}]`, `must be one of info, warning, critical`},
		{"bad glob", `[{name: a, match: {namespaces: ["pay-["]}, to: [{sink: slack}]}]`, `bad namespace pattern "pay-["`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("bad.yaml", []byte(routesBase+"routes: "+tc.routes+"\n"))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want an error containing %q, got %v", tc.want, err)
			}
			if !strings.Contains(err.Error(), "bad.yaml:") {
				t.Errorf("the error does not say where: %v", err)
			}
		})
	}
}

func TestRuleWithoutSinksNeedsACatchAllRoute(t *testing.T) {
	noSinks := strings.Replace(routesBase, "    sinks: [slack]\n", "", 1)
	if _, err := Parse("x.yaml", []byte(noSinks)); err == nil || !strings.Contains(err.Error(), "a rule needs at least one sink") {
		t.Fatalf("a rule without sinks and no routes is accepted: %v", err)
	}
	if _, err := Parse("x.yaml", []byte(noSinks+"routes: [{name: all, to: [{sink: slack}]}]\n")); err != nil {
		t.Fatalf("a catch-all route should carry a rule without sinks: %v", err)
	}
	if _, err := Parse("x.yaml", []byte(noSinks+"routes: [{name: all, to: [{sink: slack}], continue: true}]\n")); err == nil {
		t.Fatal("a route that continues is no catch-all; the rule's notifications would have nowhere to go")
	}
}

func TestSinkDestinationsAreChecked(t *testing.T) {
	bad := strings.Replace(routesBase, "payments: {routingKey: {value: bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb, allowPlaintext: true}}", "payments: {routingKey: {value: short, allowPlaintext: true}}", 1)
	bad = strings.Replace(bad, "payments: {url: https://example.invalid/b}", "Payments: {url: ftp://x}", 1)
	_, err := Parse("d.yaml", []byte(bad))
	for _, want := range []string{
		`sinks[1].pagerduty.destinations.payments.routingKey: a PagerDuty integration key is 32 characters; the one read has 5`,
		`sinks[2].teams.destinations.Payments: "Payments" is not a valid destination name`,
		`URL must start with http:// or https://`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want %q in %v", want, err)
		}
	}
}

// TestDestinationCredentialsOverHTTP: a webhook destination gets the
// sink's headers, so an Authorization header is refused over http:// to
// a destination as to the sink's own URL.
func TestDestinationCredentialsOverHTTP(t *testing.T) {
	cfg := `rules: [{name: r, kind: Pod, detector: crashloop, sinks: [hook]}]
sinks:
  - name: hook
    webhook:
      url: https://example.invalid/a
      headers: {Authorization: "Bearer x"}
      destinations: {team: {url: "http://example.invalid/b"}}
`
	_, err := Parse("c.yaml", []byte(cfg))
	if err == nil || !strings.Contains(err.Error(), "sinks[0].webhook.destinations.team.url: sends the Authorization header over plain http://") {
		t.Fatalf("want the destination's plain http refused, got %v", err)
	}
}

// TestDestinationOnAnotherHostWithHeaders: a webhook destination gets the
// sink's headers, so one on another host would receive credentials meant
// for the sink's receiver: refused; on the same host, or without
// headers, fine.
func TestDestinationOnAnotherHostWithHeaders(t *testing.T) {
	cfg := func(headers, dest string) string {
		return `rules: [{name: r, kind: Pod, detector: crashloop, sinks: [hook]}]
sinks:
  - name: hook
    webhook:
      url: https://a.example.invalid/hook
` + headers + `      destinations: {team: {url: "` + dest + `"}}
`
	}
	const auth = "      headers: {X-Api-Key: k}\n"
	if _, err := Parse("c.yaml", []byte(cfg(auth, "https://b.example.invalid/hook"))); err == nil || !strings.Contains(err.Error(), "sinks[0].webhook.destinations.team.url: this destination is on another host") {
		t.Fatalf("want another host refused, got %v", err)
	}
	for _, ok := range []string{cfg(auth, "https://a.example.invalid/other"), cfg("", "https://b.example.invalid/hook")} {
		if _, err := Parse("c.yaml", []byte(ok)); err != nil {
			t.Errorf("refused: %v\n%s", err, ok)
		}
	}
}
