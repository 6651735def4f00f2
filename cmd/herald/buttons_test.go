package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/herald-k8s/herald/internal/oncalltest"
	"github.com/herald-k8s/herald/internal/silence"
	"github.com/herald-k8s/herald/internal/slackstandin"
	"github.com/herald-k8s/herald/internal/testenv"
)

// buttonsConfig: a crash loop goes to Slack, with buttons, and to
// PagerDuty, through two routes (the first has continue: true). On the
// first route, in default, ana may silence and the on-call group (bob)
// may acknowledge; anyone may read more logs. (Were the allow entry not
// to match an incident that went through several routes, anyone could
// acknowledge and nobody could silence.)
const buttonsConfig = `
incidents: {resolveHoldDown: 0s, flapping: {starts: 0}, updateInterval: 0s}
context:
  redact: ['customer-[0-9]+']
rules:
  - {name: crash, kind: Pod, detector: crashloop, severity: critical, restartStep: 2, settle: 0s, sinks: [slack, pd]}
routes:
  - {name: payments-page, match: {namespaces: [default]}, to: [{sink: pd}], continue: true}
  - {name: audit, match: {namespaces: [default]}, to: [{sink: slack}]}
sinks:
  - name: slack
    slack:
      token: {value: xoxb-buttons-test, allowPlaintext: true}
      channel: "#alerts"
      apiURL: %q
      insecure: true
      interactive:
        appToken: {value: xapp-1-A0STANDIN-1-0123abcd, allowPlaintext: true}
        allow:
          - namespaces: [default]
            routes: [payments-page]
            silence: [U0ANA1]
            acknowledge: [S0ONCALL]
  - name: pd
    pagerduty: {routingKey: {value: R0123456789012345678901234567890, allowPlaintext: true}, url: %q}
`

// buttonsSlack starts the Slack stand-in with the test's people: ana,
// bob (of the on-call group), eve (of nobody).
func buttonsSlack(t *testing.T) *slackstandin.Server {
	t.Helper()
	sl, err := slackstandin.Start(slackstandin.Options{Logf: t.Logf,
		Users:  map[string]string{"U0ANA1": "ana", "U0BOB1": "bob", "U0EVE1": "eve"},
		Groups: map[string][]string{"S0ONCALL": {"U0BOB1"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sl.Close)
	return sl
}

// alertWith waits for herald's top-level message whose blocks contain
// every one of want, and returns it.
func alertWith(t *testing.T, sl *slackstandin.Server, want ...string) slackstandin.Message {
	t.Helper()
	var found slackstandin.Message
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := sl.WaitFor(ctx, func(s *slackstandin.Server) bool {
		for _, m := range s.Messages() {
			if m.ThreadTS != "" || m.Ephemeral || !containsAll(string(m.Blocks), want...) {
				continue
			}
			found = m
			return true
		}
		return false
	})
	if err != nil {
		t.Fatalf("no Slack message with %q: %v\nmessages: %+v", want, err, sl.Messages())
	}
	return found
}

func containsAll(s string, want ...string) bool {
	for _, w := range want {
		if !strings.Contains(s, w) {
			return false
		}
	}
	return true
}

// press presses a button of msg as user and waits until herald has
// acknowledged the press (it acknowledges after acting).
func press(t *testing.T, sl *slackstandin.Server, msg slackstandin.Message, action, user string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cur, _ := sl.Message(msg.Channel, msg.TS)
	env, err := sl.Press(ctx, slackstandin.Press{Channel: cur.Channel, TS: cur.TS, ActionID: action, User: user})
	if err != nil {
		t.Fatalf("pressing %s: %v", action, err)
	}
	if err := sl.WaitAcked(ctx, env); err != nil {
		t.Fatalf("herald did not acknowledge the %s press: %v", action, err)
	}
	return env
}

func slackSilences(t *testing.T, dyn dynamic.Interface, ns string) []unstructured.Unstructured {
	t.Helper()
	list, err := dyn.Resource(silence.Resource).Namespace(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "herald.io/created-via=slack"})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

func eventsWithReason(t *testing.T, env *testenv.Env, reason string) []corev1.Event {
	t.Helper()
	client, _ := env.Client()
	list, err := client.CoreV1().Events("").List(context.Background(), metav1.ListOptions{FieldSelector: "reason=" + reason})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

func pdActions(pd *oncalltest.PagerDuty, action string) int {
	n := 0
	for _, e := range pd.Events() {
		if e.EventAction == action {
			n++
		}
	}
	return n
}

// TestSlackButtons: the buttons of a Slack alert, pressed through the
// Socket Mode stand-in, against the real API server:
//   - eve may not silence: she alone is told so, and nothing changes;
//   - More logs answers in the thread with the crashed container's
//     lines, redacted;
//   - Acknowledge (bob, by his user group) edits the message, reaches
//     PagerDuty as acknowledge, and survives a restart of herald;
//   - Silence 1 h (ana) creates a Silence that mutes exactly this
//     incident, read back from the API server, edits the message to say
//     who and until when, mutes the next notification, and its end
//     unmutes it;
//   - Unsilence deletes the silence a button made;
//   - Opsgenie (a route's second sink) has one alert under the incident's
//     ID as alias: created, acknowledged as bob by his press (once,
//     across the restart), closed when the pod is ready.
func TestSlackButtons(t *testing.T) {
	beside(t)
	env := controlPlanes.Get(t)
	client, _ := env.Client()
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := env.InstallCRDs(ctx, silenceCRDs); err != nil {
		t.Fatal(err)
	}
	startCrashKubelet(t, client)
	sl, pd := buttonsSlack(t), oncalltest.NewPagerDuty(t)
	const ogKey = "0c8f3a1e-7b2d-4c5e-9f60-a1b2c3d4e5f6"
	og := oncalltest.NewOpsgenie(t, ogKey)
	cfg := strings.Replace(fmt.Sprintf(buttonsConfig, sl.URL()+"/api/", pd.URL), "to: [{sink: pd}]", "to: [{sink: pd}, {sink: og}]", 1) +
		fmt.Sprintf("  - name: og\n    opsgenie: {apiKey: {value: %s, allowPlaintext: true}, url: %q, insecure: true, responders: [{type: team, name: payments}]}\n", ogKey, og.URL)
	metrics := freeAddr(t)
	h := startedHerald(t, env, cfg, "--log-level", "debug")
	t.Cleanup(func() { h.stop() }) // whichever herald runs last

	podOnNode(t, client, "shop", "node-1")
	setStatus(t, client, "shop", crashLooping, 3)
	alert := alertWith(t, sl, "herald_silence_1h", "herald_ack", "herald_more_logs")

	t.Run("NotAllowed", func(t *testing.T) {
		before, _ := sl.Message(alert.Channel, alert.TS)
		press(t, sl, alert, "herald_silence_1h", "U0EVE1")
		eph := sl.Ephemerals("U0EVE1")
		if len(eph) != 1 || !strings.Contains(eph[0].Text, "You may not silence or unsilence incidents in namespace default") || !strings.Contains(eph[0].Text, "Nothing was changed") {
			t.Fatalf("eve's refusal: %+v", eph)
		}
		if got := slackSilences(t, dyn, "default"); len(got) != 0 {
			t.Errorf("a refused press created %d silences", len(got))
		}
		if after, _ := sl.Message(alert.Channel, alert.TS); after.Updates != before.Updates {
			t.Errorf("a refused press edited the message (%d → %d edits)", before.Updates, after.Updates)
		}
		if !strings.Contains(h.logs.String(), `msg="Slack press refused"`) {
			t.Errorf("the refusal is not logged")
		}
		if n := len(eventsWithReason(t, env, "Silenced")); n != 0 {
			t.Errorf("a refused press recorded %d Silenced Events", n)
		}
		// Acknowledge is the allow entry's too, though the incident went
		// through two routes: eve is refused it (told once a minute at
		// most: this second refusal is only logged).
		press(t, sl, alert, "herald_ack", "U0EVE1")
		if err := waitFor(10*time.Second, func() bool {
			return slices.ContainsFunc(strings.Split(h.logs.String(), "\n"), func(l string) bool {
				return strings.Contains(l, "Slack press refused") && strings.Contains(l, "action=acknowledge") && strings.Contains(l, "You may not acknowledge incidents in namespace default")
			})
		}); err != nil {
			t.Fatalf("eve's Acknowledge on an incident sent through routes payments-page and audit was not refused:\n%s", grepLines(h.logs.String(), "press"))
		}
		if eph := sl.Ephemerals("U0EVE1"); len(eph) != 1 {
			t.Errorf("eve was answered %d times for two refused presses within a minute, want once", len(eph))
		}
		if n := len(eventsWithReason(t, env, "Acknowledged")); n != 0 {
			t.Errorf("a refused Acknowledge recorded %d Acknowledged Events", n)
		}
	})

	t.Run("MoreLogs", func(t *testing.T) {
		press(t, sl, alert, "herald_more_logs", "U0EVE1")
		replies := sl.Replies(alert.Channel, alert.TS)
		var reply string
		for _, r := range replies {
			if strings.Contains(r.Text, "log lines") {
				reply = r.Text
			}
		}
		if !strings.Contains(reply, "FATAL panic: cannot reach the database") || !strings.Contains(reply, "step 1\n") {
			t.Fatalf("More logs replied %q; want every line of the crashed instance's log", reply)
		}
		for what, secret := range logSecrets {
			if strings.Contains(reply, secret) {
				t.Errorf("More logs shows the %s %q", what, secret)
			}
		}
	})

	t.Run("Acknowledge", func(t *testing.T) {
		press(t, sl, alert, "herald_ack", "U0BOB1")
		edited := alertWith(t, sl, "Acknowledged by")
		if strings.Contains(string(edited.Blocks), "herald_ack") {
			t.Errorf("the acknowledged message still offers Acknowledge: %s", edited.Blocks)
		}
		if err := waitFor(20*time.Second, func() bool { return pdActions(pd, "acknowledge") == 1 }); err != nil {
			t.Fatalf("PagerDuty acknowledge events: %d, want 1 (events %+v)", pdActions(pd, "acknowledge"), pd.Events())
		}
		if n := len(eventsWithReason(t, env, "Acknowledged")); n != 1 {
			t.Errorf("%d Acknowledged Events, want 1", n)
		}
		if err := waitFor(20*time.Second, func() bool { return ogActions(og, "acknowledge") == 1 }); err != nil {
			t.Fatalf("Opsgenie acknowledgements: %d, want 1 (calls %+v, refused %v)", ogActions(og, "acknowledge"), og.Calls(), og.Invalid())
		}
		if a := og.Alert(og.Calls()[0].Alias); a == nil || !a.Acknowledged || a.AcknowledgedBy != "bob" {
			t.Errorf("the Opsgenie alert: %+v, want acknowledged by bob", a)
		}
	})

	// A restart: the acknowledgement is in the ledger. The next update
	// of the message still says who took it on, and PagerDuty hears
	// nothing twice.
	h.stop()
	h = startedHerald(t, env, cfg, "--log-level", "debug", "--metrics-addr", metrics, "--config-reload-interval", "200ms")

	t.Run("AcknowledgedAfterRestart", func(t *testing.T) {
		setStatus(t, client, "shop", crashLooping, 6)
		if err := waitFor(20*time.Second, func() bool {
			m, _ := sl.Message(alert.Channel, alert.TS)
			return strings.Contains(string(m.Blocks), "Acknowledged by") && strings.Contains(string(m.Blocks), "→ 6")
		}); err != nil {
			m, _ := sl.Message(alert.Channel, alert.TS)
			t.Fatalf("after a restart, the update does not say who acknowledged: %s\n%s", m.Blocks, h.logs.String())
		}
		if n := pdActions(pd, "acknowledge"); n != 1 {
			t.Errorf("PagerDuty acknowledge events after the restart: %d, want 1", n)
		}
		if n := ogActions(og, "acknowledge"); n != 1 {
			t.Errorf("Opsgenie acknowledgements after the restart: %d, want 1", n)
		}
		// herald incidents says who took it on.
		kc := filepath.Join(t.TempDir(), "kubeconfig")
		env.WriteKubeconfig(kc)
		var stdout, stderr bytes.Buffer
		if code := runMain(ctx, []string{"incidents", "--kubeconfig", kc, "--namespace", "default"}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "acknowledged by bob") {
			t.Errorf("herald incidents (exit %d) does not say who acknowledged:\n%s%s", code, stdout.String(), stderr.String())
		}
		// Who may press is read at start: a reload that changes it is
		// refused, saying a restart applies it.
		if err := os.WriteFile(h.config, []byte(strings.Replace(cfg, "silence: [U0ANA1]", "silence: [U0EVE1]", 1)), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := waitFor(10*time.Second, func() bool {
			return strings.Contains(h.logs.String(), "slack.interactive changed: these take effect at a restart")
		}); err != nil {
			t.Errorf("a changed allow list was not refused at reload:\n%s", grepLines(h.logs.String(), "reload"))
		}
		os.WriteFile(h.config, []byte(cfg), 0o600) // as it was: the refusal kept it in force
	})

	t.Run("Silence", func(t *testing.T) {
		press(t, sl, alert, "herald_silence_1h", "U0ANA1")
		got := slackSilences(t, dyn, "default")
		if len(got) != 1 {
			t.Fatalf("%d silences from the press, want 1", len(got))
		}
		s, err := silence.Parse(&got[0])
		if err != nil {
			t.Fatal(err)
		}
		if s.CreatedBy != "slack:U0ANA1 (ana)" || s.Matchers.String() != "namespace=default kind=Pod name=shop rule=crash" ||
			s.EndsAt.Sub(s.StartsAt) != time.Hour || !strings.Contains(s.Comment, "for 1 h") {
			t.Errorf("silence %+v: want one hour of namespace=default kind=Pod name=shop rule=crash, by slack:U0ANA1 (ana)", s)
		}
		if n := len(eventsWithReason(t, env, "Silenced")); n != 1 {
			t.Errorf("%d Silenced Events, want 1", n)
		}
		muted := alertWith(t, sl, "Muted by silence default/"+s.Name, "slack:U0ANA1 (ana)", "herald_unsilence")
		if strings.Contains(string(muted.Blocks), "herald_silence_1h") {
			t.Errorf("a muted message offers Silence: %s", muted.Blocks)
		}
		// The next notification is muted: the message is not edited.
		edits := muted.Updates
		setStatus(t, client, "shop", crashLooping, 9)
		if err := waitFor(20*time.Second, func() bool { return strings.Contains(h.logs.String(), `msg="notification muted"`) }); err != nil {
			t.Fatalf("the update after the silence was not muted:\n%s", h.logs.String())
		}
		if m, _ := sl.Message(alert.Channel, alert.TS); m.Updates != edits {
			t.Errorf("a muted update edited the message: %s", m.Blocks)
		}
		// Its end unmutes it: what was held back is said.
		obj, err := dyn.Resource(silence.Resource).Namespace("default").Get(ctx, s.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		unstructured.SetNestedField(obj.Object, time.Now().Add(2*time.Second).UTC().Format(time.RFC3339), "spec", "endsAt")
		if _, err := dyn.Resource(silence.Resource).Namespace("default").Update(ctx, obj, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		alertWith(t, sl, "No longer muted", "restarted 9 times", "herald_silence_1h")
	})

	t.Run("Unsilence", func(t *testing.T) {
		alert := alertWith(t, sl, "herald_silence_4h")
		press(t, sl, alert, "herald_silence_4h", "U0ANA1")
		muted := alertWith(t, sl, "herald_unsilence", "Muted by silence")
		var name string
		for _, s := range slackSilences(t, dyn, "default") {
			if strings.Contains(fmt.Sprint(s.Object["spec"]), "for 4 h") {
				name = s.GetName()
			}
		}
		if name == "" {
			t.Fatal("no silence from Silence 4 h")
		}
		press(t, sl, muted, "herald_unsilence", "U0ANA1")
		if _, err := dyn.Resource(silence.Resource).Namespace("default").Get(ctx, name, metav1.GetOptions{}); err == nil {
			t.Errorf("silence %s is still there after Unsilence", name)
		}
		alertWith(t, sl, "No longer muted", "herald_silence_1h")
	})

	t.Run("OpsgenieClosedOnResolve", func(t *testing.T) {
		setStatus(t, client, "shop", ready, 9)
		if err := waitFor(20*time.Second, func() bool { return ogActions(og, "close") == 1 }); err != nil {
			t.Fatalf("Opsgenie closes: %d, want 1 (calls %+v)", ogActions(og, "close"), og.Calls())
		}
		calls := og.Calls()
		for _, c := range calls {
			if c.Alias != calls[0].Alias {
				t.Errorf("%s names alias %q, the create %q", c.Action, c.Alias, calls[0].Alias)
			}
		}
		if a := og.Alert(calls[0].Alias); a == nil || !a.Closed || calls[0].Action != "create" {
			t.Errorf("the alert %+v after calls %+v: want created first and closed", a, calls)
		}
		if f, bad := og.Failed(), og.Invalid(); len(f) > 0 || len(bad) > 0 {
			t.Errorf("calls about no alert %v, refused %v", f, bad)
		}
	})

	if !strings.Contains(h.logs.String(), `msg="Slack press"`) {
		t.Errorf("presses are not logged")
	}
	// Counted since the restart: the two silences, the unsilence.
	for sample, want := range map[string]float64{
		`herald_slack_actions_total{action="silence-1h",result="done"}`: 1,
		`herald_slack_actions_total{action="silence-4h",result="done"}`: 1,
		`herald_slack_actions_total{action="unsilence",result="done"}`:  1,
		`herald_slack_socket_connected`:                                 1,
	} {
		if got, err := scrapeMetric(metrics, sample); err != nil || got != want {
			t.Errorf("%s = %v (%v), want %v", sample, got, err, want)
		}
	}
}

// ogActions counts the Opsgenie stand-in's calls of one action.
func ogActions(og *oncalltest.Opsgenie, action string) int {
	n := 0
	for _, c := range og.Calls() {
		if c.Action == action {
			n++
		}
	}
	return n
}
