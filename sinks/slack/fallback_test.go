package slack

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/herald-k8s/herald/internal/incident"
)

// TestRefusedChannelFallsBackToDefault: a routed channel Slack refuses
// (gone, archived, bot not invited) never loses the notification: it goes
// to the default channel with a line naming the channel and why, and the
// sink reports it. Other refusals (a bad token) are not papered over.
func TestRefusedChannelFallsBackToDefault(t *testing.T) {
	for _, code := range []string{"channel_not_found", "not_in_channel", "is_archived"} {
		t.Run(code, func(t *testing.T) {
			api := newFakeSlack(t)
			api.refuse = map[string]string{"#payments": code}
			s := New(Options{Name: "slack", Token: "xoxb-test-token", Channel: "#alerts", APIURL: api.URL})
			var reported []string
			s.OnMisrouted(func(channel, reason string) { reported = append(reported, channel+" "+reason) })
			n := note(incident.Firing, 1, "3")
			n.Incident.Dest = map[string]string{"slack": "#payments"}
			if err := s.Send(context.Background(), n); err != nil {
				t.Fatalf("send: %v", err)
			}
			calls := api.snapshot()
			if len(calls) != 1 || calls[0].Channel != "#alerts" {
				t.Fatalf("want one message in #alerts, got %+v", calls)
			}
			if b := string(calls[0].Blocks); !strings.Contains(b, "Meant for #payments") || !strings.Contains(b, code) {
				t.Errorf("the message does not say where it was meant to go and why: %s", b)
			}
			if len(reported) != 1 || reported[0] != "#payments "+code {
				t.Errorf("reported %v", reported)
			}
		})
	}
	t.Run("a bad token is an error", func(t *testing.T) {
		api := newFakeSlack(t)
		api.refuse = map[string]string{"#payments": "invalid_auth"}
		s := New(Options{Name: "slack", Token: "xoxb-test-token", Channel: "#alerts", APIURL: api.URL})
		n := note(incident.Firing, 1, "3")
		n.Incident.Dest = map[string]string{"slack": "#payments"}
		if err := s.Send(context.Background(), n); err == nil || len(api.snapshot()) != 0 {
			t.Fatalf("invalid_auth was papered over: err %v, calls %+v", err, api.snapshot())
		}
	})
	t.Run("the default channel refusing is an error", func(t *testing.T) {
		api := newFakeSlack(t)
		api.refuse = map[string]string{"#alerts": "channel_not_found"}
		s := New(Options{Name: "slack", Token: "xoxb-test-token", Channel: "#alerts", APIURL: api.URL})
		if err := s.Send(context.Background(), note(incident.Firing, 1, "3")); err == nil || !strings.Contains(err.Error(), "channel_not_found") {
			t.Fatalf("want the refusal as an error, got %v", err)
		}
	})
}

// TestMentionsSurviveLongText: text from the cluster long enough to be
// cut (an image name of '<', which escaping makes four times longer)
// never cuts the mentions off the message; a digest in a storm carries
// its members' mentions too.
func TestMentionsSurviveLongText(t *testing.T) {
	n := note(incident.Firing, 1, "3")
	n.Incident.Text = strings.Repeat("<", 5000)
	n.Incident.Facts = map[string]string{"message": strings.Repeat("<", 5000)}
	n.Incident.Mentions = []string{"S0PAYMENTS1", "U0ALICE01"}
	msg := Render(n, "prod", n.Time)
	b, _ := json.Marshal(msg.Blocks)
	for _, want := range []string{"<!subteam^S0PAYMENTS1>", "<@U0ALICE01>"} {
		if !strings.Contains(string(b), strings.NewReplacer("<", `\u003c`, ">", `\u003e`).Replace(want)) {
			t.Errorf("%s cut off by long text", want)
		}
	}
	d := RenderDigest([]incident.Notification{n, note(incident.Firing, 1, "4")}, "prod")
	b, _ = json.Marshal(d.Blocks)
	if !strings.Contains(string(b), `\u003c!subteam^S0PAYMENTS1\u003e`) {
		t.Errorf("a storm's digest does not mention the team: %s", b)
	}
}
