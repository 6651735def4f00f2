package slack

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/oncalltest"
	"github.com/herald-k8s/herald/internal/rules"
)

// buttons are the action_ids of the message's actions block, its
// buttons' values and their styles by action_id, and whether the block is
// the last before the footer; nil when it has none.
func buttons(t *testing.T, m Message) (ids, values []string, styles map[string]string, lastBeforeFooter bool) {
	t.Helper()
	styles = map[string]string{}
	for i, b := range m.Blocks {
		a, ok := b.(*slack.ActionBlock)
		if !ok {
			continue
		}
		if a.BlockID != ActionsBlockID {
			t.Errorf("block_id %q, want %q", a.BlockID, ActionsBlockID)
		}
		_, footer := m.Blocks[len(m.Blocks)-1].(*slack.ContextBlock)
		lastBeforeFooter = i == len(m.Blocks)-2 && footer
		for _, e := range a.Elements.ElementSet {
			btn := e.(*slack.ButtonBlockElement)
			ids, values = append(ids, btn.ActionID), append(values, btn.Value)
			styles[btn.ActionID] = string(btn.Style)
		}
	}
	return ids, values, styles, lastBeforeFooter
}

// TestButtons: with buttons on, an open incident's message ends (above
// its footer) with Silence 1 h, Silence 4 h, Silence until resolved,
// Acknowledge until someone has, and More logs when it names a container
// of a pod or of a grouped workload's pods; a muted one's with Unsilence;
// a resolved one, a digest and every message with buttons off have none.
// Every value is the incident's ID.
func TestButtons(t *testing.T) {
	silences := []string{ActionSilence1h, ActionSilence4h, ActionSilenceResolved}
	all := append(slices.Clone(silences), ActionAck, ActionMoreLogs)
	acked := &incident.Ack{By: "slack:U0ANA", Name: "ana", At: t0}
	for _, c := range []struct {
		name  string
		tr    incident.Transition
		edit  func(*incident.Notification)
		want  []string
		noAck bool // the Acknowledge button is not there
	}{
		{name: "firing", tr: incident.Firing, want: all},
		{name: "updated", tr: incident.Updated, want: all},
		{name: "repeat", tr: incident.Repeat, want: all},
		{name: "unmuted", tr: incident.Updated, edit: func(n *incident.Notification) { n.Unmuted = "silence shop/x" }, want: all},
		{name: "acknowledged", tr: incident.Acknowledged, edit: func(n *incident.Notification) { n.Incident.Ack = acked }, want: append(slices.Clone(silences), ActionMoreLogs)},
		{name: "updated after ack", tr: incident.Updated, edit: func(n *incident.Notification) { n.Incident.Ack = acked }, want: append(slices.Clone(silences), ActionMoreLogs)},
		{name: "no container", tr: incident.Firing, edit: func(n *incident.Notification) { n.Incident.Container = "" }, want: append(slices.Clone(silences), ActionAck)},
		{name: "a node", tr: incident.Firing, edit: func(n *incident.Notification) {
			n.Incident.Object, n.Incident.Container = rules.ObjectRef{Kind: "Node", Name: "n1"}, ""
		}, want: append(slices.Clone(silences), ActionAck)},
		{name: "a Deployment's condition, container named", tr: incident.Firing, edit: func(n *incident.Notification) {
			n.Incident.Object = rules.ObjectRef{Kind: "Deployment", Namespace: "shop", Name: "api"}
		}, want: append(slices.Clone(silences), ActionAck)},
		{name: "grouped workload", tr: incident.Firing, edit: func(n *incident.Notification) {
			n.Incident.Object, n.Incident.Grouped = rules.ObjectRef{Kind: "Deployment", Namespace: "shop", Name: "api"}, true
		}, want: all},
		{name: "silenced", tr: incident.Silenced, want: []string{ActionUnsilence}},
		{name: "acknowledged while muted", tr: incident.Acknowledged, edit: func(n *incident.Notification) {
			n.Incident.Ack, n.Incident.MutedBy = acked, "silence shop/x"
		}, want: []string{ActionUnsilence}},
		{name: "silenced after ack", tr: incident.Silenced, edit: func(n *incident.Notification) { n.Incident.Ack = acked }, want: []string{ActionUnsilence}},
		{name: "resolved", tr: incident.Resolved},
		{name: "no incident ID", tr: incident.Firing, edit: func(n *incident.Notification) { n.Incident.ID = "" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := note(c.tr, 2, "5")
			if c.edit != nil {
				c.edit(&n)
			}
			ids, values, styles, last := buttons(t, RenderWith(n, t0, RenderOptions{Buttons: true}))
			if !slices.Equal(ids, c.want) {
				t.Fatalf("buttons %v, want %v", ids, c.want)
			}
			if len(ids) > 0 && !last {
				t.Errorf("the actions block is not the last before the footer")
			}
			for _, v := range values {
				if v != n.Incident.ID {
					t.Errorf("value %q, want the incident ID %q", v, n.Incident.ID)
				}
			}
			for id, style := range styles {
				if want := map[bool]string{true: "primary"}[id == ActionAck]; style != want {
					t.Errorf("%s styled %q, want %q", id, style, want)
				}
			}
			if ids, _, _, _ := buttons(t, Render(n, "", t0)); ids != nil {
				t.Errorf("buttons off: %v", ids)
			}
		})
	}
	// Nobody may silence: no Silence or Unsilence button to be refused.
	for tr, want := range map[incident.Transition][]string{incident.Firing: {ActionAck, ActionMoreLogs}, incident.Silenced: nil} {
		ids, _, _, _ := buttons(t, RenderWith(note(tr, 2, "5"), t0, RenderOptions{Buttons: true, NoSilence: true}))
		if !slices.Equal(ids, want) {
			t.Errorf("%s without silence rights: %v, want %v", tr, ids, want)
		}
	}
	d := note(incident.Firing, 1, "5")
	if ids, _, _, _ := buttons(t, RenderDigest([]incident.Notification{d, d}, "")); ids != nil {
		t.Errorf("a digest has buttons: %v", ids)
	}
}

// TestParseAction: every button herald renders is one ParseAction reads
// back, with what it asks; nothing else is; and each is within Slack's
// limits (action_id 255, text 75, 25 elements a block).
func TestParseAction(t *testing.T) {
	for _, c := range []struct {
		id   string
		want Action
	}{
		{ActionSilence1h, Action{ID: ActionSilence1h, Label: "Silence 1 h", Op: OpSilence, For: 3600e9}},
		{ActionSilence4h, Action{ID: ActionSilence4h, Label: "Silence 4 h", Op: OpSilence, For: 4 * 3600e9}},
		{ActionSilenceResolved, Action{ID: ActionSilenceResolved, Label: "Silence until resolved", Op: OpSilence, UntilResolved: true}},
		{ActionAck, Action{ID: ActionAck, Label: "Acknowledge", Op: OpAck}},
		{ActionMoreLogs, Action{ID: ActionMoreLogs, Label: "More logs", Op: OpMoreLogs}},
		{ActionUnsilence, Action{ID: ActionUnsilence, Label: "Unsilence", Op: OpUnsilence}},
	} {
		got, ok := ParseAction(c.id)
		if !ok || got != c.want {
			t.Errorf("ParseAction(%q) = %+v, %v; want %+v", c.id, got, ok, c.want)
		}
		if len(got.ID) > maxActionID || utf8.RuneCountInString(got.Label) > maxButtonText {
			t.Errorf("%s beyond Slack's limits", c.id)
		}
	}
	for _, id := range []string{"", "herald_silence", "HERALD_ACK", "herald_ack ", "herald_actions"} {
		if a, ok := ParseAction(id); ok {
			t.Errorf("ParseAction(%q) = %+v, want none", id, a)
		}
	}
	if len(actions) > maxElements {
		t.Errorf("%d buttons, Slack takes %d in a block", len(actions), maxElements)
	}
	long := note(incident.Firing, 1, "5")
	long.Incident.ID = strings.Repeat("x", maxButtonValue+1)
	if ids, _, _, _ := buttons(t, RenderWith(long, t0, RenderOptions{Buttons: true})); ids != nil {
		t.Errorf("a value beyond Slack's %d characters: %v", maxButtonValue, ids)
	}
}

// TestSendButtonsOnlyInteractive: the sink puts buttons on its messages
// only with Interactive and a bot token (an incoming webhook's message
// has none: its presses would reach no one), and never otherwise.
func TestSendButtonsOnlyInteractive(t *testing.T) {
	var mu sync.Mutex
	var hooked []string
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		hooked = append(hooked, string(b))
		mu.Unlock()
	}))
	defer hook.Close()
	for _, c := range []struct {
		name        string
		interactive bool
		webhook     bool
		want        bool
	}{
		{"bot token, interactive", true, false, true},
		{"bot token", false, false, false},
		{"incoming webhook, interactive", true, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			api := newFakeSlack(t)
			opts := Options{Name: "slack", Token: "xoxb-test-token", Channel: "#alerts", APIURL: api.URL, Refs: &refs{m: map[string]string{}}, Interactive: c.interactive}
			if c.webhook {
				opts.Token, opts.WebhookURL = "", hook.URL
			}
			if err := New(opts).Send(context.Background(), note(incident.Firing, 1, "5")); err != nil {
				t.Fatal(err)
			}
			var sent string
			if c.webhook {
				mu.Lock()
				sent = hooked[len(hooked)-1]
				mu.Unlock()
			} else {
				sent = string(api.snapshot()[0].Blocks)
			}
			if got := strings.Contains(sent, `"block_id":"`+ActionsBlockID+`"`); got != c.want {
				t.Errorf("buttons sent: %v, want %v:\n%s", got, c.want, sent)
			}
		})
	}
}

// TestAcknowledgedEditsInPlace: an acknowledgement edits the incident's
// message (its Acknowledge button gone, who took it on said) and says so
// in the thread, naming the Slack user as a mention.
func TestAcknowledgedEditsInPlace(t *testing.T) {
	api := newFakeSlack(t)
	s := New(Options{Name: "slack", Token: "xoxb-test-token", Channel: "#alerts", APIURL: api.URL, Refs: &refs{m: map[string]string{}}, Interactive: true})
	acked := note(incident.Acknowledged, 2, "5")
	acked.Incident.Ack = &incident.Ack{By: "slack:U0ANA", Name: "ana", At: t0}
	for _, n := range []incident.Notification{note(incident.Firing, 1, "5"), acked} {
		if err := s.Send(context.Background(), n); err != nil {
			t.Fatalf("%s: %v", n.Transition, err)
		}
	}
	calls := api.snapshot()
	if len(calls) != 3 || calls[1].Method != "chat.update" || calls[2].ThreadTS == "" {
		t.Fatalf("calls %+v, want post, update, thread reply", calls)
	}
	if !strings.Contains(string(calls[0].Blocks), `"action_id":"herald_ack"`) || strings.Contains(string(calls[1].Blocks), `"action_id":"herald_ack"`) {
		t.Errorf("Acknowledge on the firing, not on the edit:\n%s\n%s", calls[0].Blocks, calls[1].Blocks)
	}
	edited := strings.NewReplacer(`\u003c`, "<", `\u003e`, ">").Replace(string(calls[1].Blocks))
	if !strings.Contains(edited, "Acknowledged by <@U0ANA> · ") || !strings.Contains(calls[1].Text, "CrashLoopBackOff, acknowledged") {
		t.Errorf("the edit does not say who took it on: %q\n%s", calls[1].Text, calls[1].Blocks)
	}
	if calls[2].Text != ":raised_hand: Acknowledged by ana." { // a mention would ping who pressed
		t.Errorf("thread note %q", calls[2].Text)
	}
}

// TestAckWho: a Slack user ID (U…, W…) after "slack:" and nothing else
// becomes a mention; anything else is their name (else the actor),
// escaped, one line, never a mention, link or group.
func TestAckWho(t *testing.T) {
	for _, c := range []struct{ by, name, want string }{
		{"slack:U0ANA", "ana", "<@U0ANA>"},
		{"slack:W0BOB", "", "<@W0BOB>"},
		{"slack:S0TEAM", "team", "team"},
		{"slack:U0ANA>", "ana", "ana"},
		{"slack:U0ANA extra", "", "slack:U0ANA extra"},
		{"slack:u0ana", "", "slack:u0ana"},
		{"U0ANA", "", "U0ANA"},
		{"slack:!channel", "<!channel>", "&lt;!channel&gt;"},
		{"cli:alice", "<http://x|y>", "&lt;http://x|y&gt;"},
		{"cli:alice", "ana\n:white_check_mark: Resolved\u202e", "ana :white_check_mark: Resolved"},
		{"cli:alice", "`rm -rf`", "'rm -rf'"},
		{"cli:alice", "   ", "cli:alice"},
	} {
		if got := ackWho(incident.Ack{By: c.by, Name: c.name}); got != c.want {
			t.Errorf("ackWho(%q, %q) = %q, want %q", c.by, c.name, got, c.want)
		}
	}
}

// TestAckLineSurvivesLongText: who took an incident on is said however
// long its text, which is cut instead.
func TestAckLineSurvivesLongText(t *testing.T) {
	n := note(incident.Updated, 3, "9")
	n.Incident.Text = strings.Repeat("x", 10000)
	n.Incident.Ack = &incident.Ack{By: "slack:U0ANA", At: t0}
	m := Render(n, "", t0.Add(180e9))
	lead := m.Blocks[1].(*slack.SectionBlock).Text.Text
	if !strings.HasSuffix(lead, "\n:raised_hand: Acknowledged by <@U0ANA> · "+slackDate(t0)) || utf8.RuneCountInString(lead) > maxSection {
		t.Errorf("lead of %d characters ends %q", utf8.RuneCountInString(lead), lead[max(len(lead)-80, 0):])
	}
	checkMessage(t, m)
}

// TestHostileActedOnGolden: who acknowledged and who asked for a silence
// are names anyone chooses (oncalltest.HostileWho): in the message, its
// buttons and the thread note they mention, link, quote code and break
// lines nowhere.
func TestHostileActedOnGolden(t *testing.T) {
	firing := oncalltest.Hostile()
	now := firing.Time.Add(3 * 60e9)
	acked, silenced := oncalltest.HostileAcked(firing), oncalltest.HostileSilenced(firing)
	later := acked
	later.Transition, later.Seq = incident.Updated, 4
	out := map[string]any{}
	for name, n := range map[string]incident.Notification{"acknowledged": acked, "updatedAfterAck": later, "silenced": silenced} {
		m := RenderWith(n, now, RenderOptions{Cluster: "prod-eu", Buttons: true})
		out[name] = map[string]any{"text": m.Text, "blocks": m.Blocks, "threadNote": ThreadNote(n, now)}
	}
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		t.Fatal(err)
	}
	checkSlackText(t, []byte(buf.String()))
	for _, line := range strings.Split(buf.String(), `\n`) {
		if strings.HasPrefix(line, ":white_check_mark:") {
			t.Errorf("a name forged a line: %q", line)
		}
	}
	checkGolden(t, "testdata/hostile-acted.golden.json", []byte(buf.String()))
}
