package slackstandin

import (
	"context"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"
)

const (
	botToken = "xoxb-standin-test"
	appToken = "xapp-standin-test"
	channel  = "C0ALERTS"
)

func start(t *testing.T, retryAfter time.Duration) *Server {
	t.Helper()
	s, err := Start(Options{
		Logf:       t.Logf,
		Users:      map[string]string{"U1": "alice", "U2": "bob"},
		Groups:     map[string][]string{"S1": {"U1", "U2"}},
		BotToken:   botToken,
		AppToken:   appToken,
		RetryAfter: retryAfter,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func client(s *Server, bot, app string) *slack.Client {
	return slack.New(bot, slack.OptionAPIURL(s.URL()+"/api/"), slack.OptionAppLevelToken(app))
}

// socket runs slack-go's Socket Mode client against s until the test ends
// and hands the test every interactive event it receives.
func socket(t *testing.T, api *slack.Client) (*socketmode.Client, <-chan socketmode.Event) {
	t.Helper()
	smc := socketmode.New(api)
	ctx, cancel := context.WithCancel(context.Background())
	events := make(chan socketmode.Event, 16)
	done := make(chan struct{}, 2)
	go func() {
		defer func() { done <- struct{}{} }()
		_ = smc.RunContext(ctx)
	}()
	go func() {
		defer func() { done <- struct{}{} }()
		for {
			select {
			case <-ctx.Done():
				return
			case evt := <-smc.Events:
				if evt.Type == socketmode.EventTypeInteractive {
					select {
					case events <- evt:
					case <-ctx.Done():
						return
					}
				}
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done; <-done })
	return smc, events
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func recv(t *testing.T, ctx context.Context, events <-chan socketmode.Event) (socketmode.Event, slack.InteractionCallback) {
	t.Helper()
	select {
	case evt := <-events:
		cb, ok := evt.Data.(slack.InteractionCallback)
		if !ok || evt.Request == nil {
			t.Fatalf("interactive event without a callback or request: %#v", evt)
		}
		return evt, cb
	case <-ctx.Done():
		t.Fatal("no interactive event arrived")
	}
	panic("unreachable")
}

// postAlert posts a message like herald's: a section, and an actions block
// with two buttons, and metadata naming the incident.
func postAlert(t *testing.T, api *slack.Client) string {
	t.Helper()
	blocks := []slack.Block{
		slack.NewSectionBlock(slack.NewTextBlockObject("mrkdwn", "*FIRING* pod web-0 crash-looping", false, false), nil, nil),
		slack.NewActionBlock("incident-actions",
			slack.NewButtonBlockElement("silence_1h", "fp1|1h", slack.NewTextBlockObject("plain_text", "Silence 1 h", false, false)),
			slack.NewButtonBlockElement("ack", "fp1", slack.NewTextBlockObject("plain_text", "Acknowledge", false, false)),
		),
	}
	meta := slack.SlackMetadata{EventType: "herald_incident", EventPayload: map[string]any{"fingerprint": "fp1"}}
	_, ts, err := api.PostMessage(channel, slack.MsgOptionText("FIRING web-0", false),
		slack.MsgOptionBlocks(blocks...), slack.MsgOptionMetadata(meta))
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func TestPressReachesSocketModeAndIsAcked(t *testing.T) {
	s := start(t, time.Hour)
	api := client(s, botToken, appToken)
	ctx := ctxFor(t)
	ts := postAlert(t, api)
	if _, err := s.Press(ctx, Press{Channel: channel, TS: ts, ActionID: "ack", User: "U1"}); err == nil {
		t.Fatal("Press with no Socket Mode connection succeeded")
	}

	smc, events := socket(t, api)
	if err := s.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Press(ctx, Press{Channel: channel, TS: ts, ActionID: "no_such_button", User: "U1"}); err == nil {
		t.Fatal("Press of a button the message does not have succeeded")
	}
	id, err := s.Press(ctx, Press{Channel: channel, TS: ts, ActionID: "ack", User: "U1"})
	if err != nil {
		t.Fatal(err)
	}
	evt, cb := recv(t, ctx, events)
	if evt.Request.EnvelopeID != id || evt.Request.RetryAttempt != 0 {
		t.Errorf("envelope %q retry %d, want %q retry 0", evt.Request.EnvelopeID, evt.Request.RetryAttempt, id)
	}
	if cb.Type != slack.InteractionTypeBlockActions || len(cb.ActionCallback.BlockActions) != 1 {
		t.Fatalf("callback type %q with %d block actions", cb.Type, len(cb.ActionCallback.BlockActions))
	}
	a := cb.ActionCallback.BlockActions[0]
	for _, c := range []struct{ what, got, want string }{
		{"action_id", a.ActionID, "ack"},
		{"value", a.Value, "fp1"},
		{"block_id", a.BlockID, "incident-actions"},
		{"button text", a.Text.Text, "Acknowledge"},
		{"user", cb.User.ID, "U1"},
		{"user name", cb.User.Name, "alice"},
		{"container message_ts", cb.Container.MessageTs, ts},
		{"container channel", cb.Container.ChannelID, channel},
		{"channel", cb.Channel.ID, channel},
		{"message ts", cb.Message.Timestamp, ts},
		{"message metadata", cb.Message.Metadata.EventPayload["fingerprint"].(string), "fp1"},
		{"app", cb.APIAppID, AppID},
	} {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.what, c.got, c.want)
		}
	}
	if n := len(cb.Message.Blocks.BlockSet); n != 2 {
		t.Errorf("payload.message has %d blocks, want 2", n)
	}
	if a.ActionTs == "" {
		t.Error("no action_ts")
	}

	if err := smc.Ack(*evt.Request); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitAcked(ctx, id); err != nil {
		t.Fatal(err)
	}
	if !s.Acked(id) || s.Deliveries(id) != 1 {
		t.Errorf("acked %v after %d deliveries, want acked after 1", s.Acked(id), s.Deliveries(id))
	}

	// The response_url acts on the pressed message, as Slack's does.
	if _, _, err := api.PostMessage("", slack.MsgOptionReplaceOriginal(cb.ResponseURL), slack.MsgOptionText("acknowledged by alice", false)); err != nil {
		t.Fatal(err)
	}
	if m, _ := s.Message(channel, ts); m.Text != "acknowledged by alice" || m.Updates != 1 {
		t.Errorf("after replace_original: %q, %d updates", m.Text, m.Updates)
	}
	if _, _, err := api.PostMessage("", slack.MsgOptionResponseURL(cb.ResponseURL, slack.ResponseTypeEphemeral), slack.MsgOptionText("only you", false)); err != nil {
		t.Fatal(err)
	}
	if e := s.Ephemerals("U1"); len(e) != 1 || e[0].Text != "only you" {
		t.Errorf("ephemerals for the presser: %+v", e)
	}
}

// TestUnackedEnvelopeIsDeliveredAgain: an envelope whose ack is lost comes
// again with the same envelope_id and payload, one retry_attempt later —
// whether the connection breaks, Slack asks the client to reconnect, or
// the ack simply does not arrive in time.
func TestUnackedEnvelopeIsDeliveredAgain(t *testing.T) {
	for _, tc := range []struct {
		name       string
		retryAfter time.Duration
		loseLink   func(*Server) int // nil: keep the connection, wait for the retry
		reason     string
	}{
		{"connection broken", time.Hour, (*Server).DropConnections, "connection_closed"},
		{"disconnect requested", time.Hour, func(s *Server) int { return s.Disconnect("refresh_requested") }, "connection_closed"},
		{"retry timeout", 200 * time.Millisecond, nil, "timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := start(t, tc.retryAfter)
			api := client(s, botToken, appToken)
			ctx := ctxFor(t)
			ts := postAlert(t, api)
			smc, events := socket(t, api)
			if err := s.WaitConnected(ctx); err != nil {
				t.Fatal(err)
			}
			s.DropAcks(1)
			id, err := s.Press(ctx, Press{Channel: channel, TS: ts, ActionID: "silence_1h", User: "U2"})
			if err != nil {
				t.Fatal(err)
			}
			first, cb1 := recv(t, ctx, events)
			if err := smc.Ack(*first.Request); err != nil {
				t.Fatal(err)
			}
			if err := s.WaitFor(ctx, func(s *Server) bool { return s.DroppedAcks() == 1 }); err != nil {
				t.Fatal(err)
			}
			if s.Acked(id) {
				t.Fatal("a dropped ack counted")
			}
			if tc.loseLink != nil && tc.loseLink(s) != 1 {
				t.Fatal("no connection to lose")
			}

			again, cb2 := recv(t, ctx, events)
			if again.Request.EnvelopeID != id || again.Request.RetryAttempt != 1 || again.Request.RetryReason != tc.reason {
				t.Errorf("redelivery: envelope %q attempt %d reason %q, want %q 1 %q",
					again.Request.EnvelopeID, again.Request.RetryAttempt, again.Request.RetryReason, id, tc.reason)
			}
			a1, a2 := cb1.ActionCallback.BlockActions[0], cb2.ActionCallback.BlockActions[0]
			if a1.ActionTs != a2.ActionTs || cb1.TriggerID != cb2.TriggerID || a2.Value != "fp1|1h" {
				t.Errorf("redelivered payload differs: action_ts %s/%s trigger %s/%s value %q",
					a1.ActionTs, a2.ActionTs, cb1.TriggerID, cb2.TriggerID, a2.Value)
			}
			if err := smc.Ack(*again.Request); err != nil {
				t.Fatal(err)
			}
			if err := s.WaitAcked(ctx, id); err != nil {
				t.Fatal(err)
			}
			if n := s.Deliveries(id); n < 2 {
				t.Errorf("%d deliveries, want at least 2", n)
			}
		})
	}
}

// TestSlackGivesUpAfterThreeRetries: a client that never acks sees the
// envelope four times (retry_attempt 0…3), then no more.
func TestSlackGivesUpAfterThreeRetries(t *testing.T) {
	s := start(t, 50*time.Millisecond)
	api := client(s, botToken, appToken)
	ctx := ctxFor(t)
	ts := postAlert(t, api)
	_, events := socket(t, api)
	if err := s.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	id, err := s.Press(ctx, Press{Channel: channel, TS: ts, ActionID: "ack", User: "U1"})
	if err != nil {
		t.Fatal(err)
	}
	for want := 0; want <= maxRetries; want++ {
		evt, _ := recv(t, ctx, events)
		if evt.Request.RetryAttempt != want {
			t.Errorf("delivery %d has retry_attempt %d", want, evt.Request.RetryAttempt)
		}
	}
	if err := s.WaitAcked(ctx, id); err == nil || ctx.Err() != nil {
		t.Fatalf("WaitAcked of a never-acked envelope: %v (ctx %v)", err, ctx.Err())
	}
	if n := s.Deliveries(id); n != maxRetries+1 {
		t.Errorf("%d deliveries, want %d", n, maxRetries+1)
	}
}

// TestHelloPingAndTicket speaks raw WebSocket to check what slack-go does
// not surface: the hello, the pings that keep slack-go's dead-man timer
// quiet, and that a socket URL admits one connection only.
func TestHelloPingAndTicket(t *testing.T) {
	s, err := Start(Options{Logf: t.Logf, PingInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	ctx := ctxFor(t)
	_, wsURL, err := client(s, "xoxb-any", "xapp-any").StartSocketModeContext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ws, _, err := websocket.DefaultDialer.DialContext(ctx, wsURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	pinged := make(chan struct{}, 1)
	ws.SetPingHandler(func(string) error {
		select {
		case pinged <- struct{}{}:
		default:
		}
		return nil
	})
	var hello socketmode.Request
	if err := ws.ReadJSON(&hello); err != nil {
		t.Fatal(err)
	}
	if hello.Type != "hello" || hello.NumConnections != 1 || hello.ConnectionInfo.AppID != AppID {
		t.Errorf("hello: %+v", hello)
	}
	go func() { // control frames are handled while reading
		for {
			if _, _, err := ws.ReadMessage(); err != nil {
				return
			}
		}
	}()
	select {
	case <-pinged:
	case <-ctx.Done():
		t.Fatal("no ping")
	}
	if _, _, err := websocket.DefaultDialer.DialContext(ctx, wsURL, nil); err == nil {
		t.Error("a used socket URL admitted a second connection")
	}
}
