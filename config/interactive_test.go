package config

import (
	"slices"
	"strings"
	"testing"
)

const interactiveBase = `rules: [{name: r, kind: Pod, detector: crashloop, sinks: [s]}]
routes: [{name: payments, match: {namespaces: [pay]}, to: [{sink: s, channel: "#pay"}]}]
sinks:
  - name: s
    slack:
      token: {value: xoxb-1-2, allowPlaintext: true}
      channel: "#alerts"
`

// TestInteractiveConfig: buttons are off unless configured; an app token
// of the wrong kind or shape, an allow entry that names a user by name or
// an unknown route are refused where written, without showing the token.
func TestInteractiveConfig(t *testing.T) {
	cfg, err := Parse("c.yaml", []byte(interactiveBase))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Sinks[0].Slack.Interactive != nil {
		t.Fatal("interactive is on without being configured")
	}
	good := "      interactive:\n        appToken: {value: xapp-1-A0123ABCD-4567-0a1b2c3d, allowPlaintext: true}\n"
	if _, err := Parse("c.yaml", []byte(interactiveBase+good)); err != nil {
		t.Fatalf("a good app token: %v", err)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"      interactive:\n        appToken: {value: xoxb-123-456-abc, allowPlaintext: true}\n", "c.yaml:9:19: sinks[0].slack.interactive.appToken: this is a bot or user token"},
		{"      interactive:\n        appToken: {value: not-a-token-at-all, allowPlaintext: true}\n", "interactive.appToken: not an app-level token"},
		{"      interactive: {allow: [{acknowledge: ['*']}]}\n", "interactive: interactive needs appToken"},
		{good + "        allow: [{silence: [ana]}]\n", `interactive.allow[0].silence[0]: "ana" is not a Slack user ID`},
		{good + "        allow: [{routes: [nope], silence: ['*']}]\n", `interactive.allow[0].routes[0]: no route is named "nope"`},
		{good + "        allow: [{namespaces: [shop]}]\n", "interactive.allow[0]: an allow entry must say who may do something"},
		{good + "        allow: [{namespaces: ['[x'], silence: [U0AB12CD]}]\n", "interactive.allow[0].namespaces[0]: bad pattern"},
	} {
		_, err := Parse("c.yaml", []byte(interactiveBase+tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.yaml, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "xoxb-123-456-abc") {
			t.Errorf("the error shows the token: %v", err)
		}
	}
	webhook := strings.Replace(interactiveBase, "token: {value: xoxb-1-2, allowPlaintext: true}\n      channel: \"#alerts\"", "webhookURL: {value: 'https://hooks.example/x', allowPlaintext: true}", 1)
	if _, err := Parse("c.yaml", []byte(webhook+good)); err == nil || !strings.Contains(err.Error(), "buttons need a bot token") {
		t.Errorf("buttons on a webhook: %v", err)
	}
}

// TestAllowed: the first entry that matches the incident's namespace and
// route decides; an action it does not name keeps the default (anyone may
// acknowledge and read logs, nobody may silence).
func TestAllowed(t *testing.T) {
	ids := func(s ...string) *[]string { return &s }
	in := &Interactive{Allow: []AllowRule{
		{Routes: []string{"payments"}, Silence: ids("S0PAYONCALL"), Acknowledge: ids("S0PAYONCALL")},
		{Routes: []string{"payments-page"}, Acknowledge: ids("U0PAGER12")},
		{Namespaces: []string{"shop", "shop-*"}, Silence: ids("U0ANA1234")},
		{Namespaces: []string{"sandbox"}, MoreLogs: ids()},
	}}
	for _, tc := range []struct {
		action, ns string
		routes     []string
		want       []string
	}{
		{"silence", "pay", []string{"payments"}, []string{"S0PAYONCALL"}},
		{"acknowledge", "pay", []string{"payments"}, []string{"S0PAYONCALL"}},
		{"moreLogs", "pay", []string{"payments"}, []string{"*"}},
		// A route with continue: true sends on to the next: the incident
		// went through both, and an entry keyed on either matches.
		{"acknowledge", "pay", []string{"payments-page", "audit"}, []string{"U0PAGER12"}},
		{"acknowledge", "pay", []string{"audit", "payments"}, []string{"S0PAYONCALL"}},
		{"silence", "shop-eu", nil, []string{"U0ANA1234"}},
		{"acknowledge", "shop", nil, []string{"*"}},
		{"moreLogs", "sandbox", nil, []string{}}, // an empty list: nobody
		{"silence", "other", nil, nil},
		{"silence", "", nil, nil},
		{"acknowledge", "other", nil, []string{"*"}},
	} {
		if got := in.Allowed(tc.action, tc.ns, tc.routes); !slices.Equal(got, tc.want) {
			t.Errorf("%s in %q via %q: %q, want %q", tc.action, tc.ns, tc.routes, got, tc.want)
		}
	}
}

// TestInteractiveMistakes: the tokens swapped, two sinks on one Slack
// app, and IDs written as mentions, in lower case or as a channel, are
// refused with what to write instead.
func TestInteractiveMistakes(t *testing.T) {
	good := "      interactive:\n        appToken: {value: xapp-1-A0123ABCD-4567-0a1b2c3d, allowPlaintext: true}\n"
	for _, tc := range []struct{ yaml, want string }{
		{good + "        allow: [{silence: ['<@U0ANA1234>']}]\n", "write the bare ID, U0ANA1234"},
		{good + "        allow: [{silence: ['<!subteam^S0ONCALL>']}]\n", "write the bare ID, S0ONCALL"},
		{good + "        allow: [{silence: [u0ana1234]}]\n", "IDs are upper case: U0ANA1234"},
		{good + "        allow: [{silence: [C0ALERTS1]}]\n", "looks like a channel ID"},
		{good + "  - name: other\n    slack:\n      token: {value: xoxb-3-4, allowPlaintext: true}\n      channel: \"#x\"\n" + strings.ReplaceAll(good, "      ", "      "),
			"sinks[1].slack.interactive.appToken: sink s uses the same Slack app"},
	} {
		_, err := Parse("c.yaml", []byte(interactiveBase+tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.yaml, err, tc.want)
		}
	}
	swapped := strings.Replace(interactiveBase, "xoxb-1-2", "xapp-1-A0123ABCD-4567-0a1b2c3d", 1)
	if _, err := Parse("c.yaml", []byte(swapped)); err == nil || !strings.Contains(err.Error(), "sinks[0].slack.token: this is an app-level token") {
		t.Errorf("an app token as the bot token: %v", err)
	}
}
