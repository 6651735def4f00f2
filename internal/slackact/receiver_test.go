package slackact

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/slack-go/slack"

	"github.com/herald-k8s/herald/internal/incident"
	slacksink "github.com/herald-k8s/herald/sinks/slack"
)

// TestEveryButtonIsHandled: each button the Slack sink can render is one
// the receiver carries out, so a message never offers a button that does
// nothing.
func TestEveryButtonIsHandled(t *testing.T) {
	for _, id := range []string{slacksink.ActionSilence1h, slacksink.ActionSilence4h, slacksink.ActionSilenceResolved,
		slacksink.ActionAck, slacksink.ActionMoreLogs, slacksink.ActionUnsilence} {
		if _, ok := slacksink.ParseAction(id); !ok {
			t.Errorf("the sink does not know its own button %s", id)
		}
		if _, ok := kinds[id]; !ok {
			t.Errorf("button %s does nothing: no action for it", id)
		}
	}
}

// TestLogsReply: More logs' reply keeps the newest lines when they do not
// fit, and no line can close its code block or mention anyone.
func TestLogsReply(t *testing.T) {
	reply := logsReply("f00-1", &incident.Logs{Container: "app`x", Previous: true, Lines: []string{"``` <!channel> <@U1>", strings.Repeat("x", maxReply), "last line"}})
	if strings.Count(reply, "```") != 2 || strings.Contains(reply, "<!channel>") || strings.Contains(reply, "<@U1>") {
		t.Errorf("reply escapes nothing:\n%.300s", reply)
	}
	if !strings.HasSuffix(reply, "last line```") || !strings.Contains(reply, "older lines cut") || len(reply) > maxReply+500 {
		t.Errorf("reply is %d bytes, ends %q", len(reply), reply[len(reply)-20:])
	}
}

// TestLinkButtonsAreLetGo: Slack tells the app of a press on a link
// button too (it opened its page): nothing is done or counted as
// unknown; a button herald does not know still is.
func TestLinkButtonsAreLetGo(t *testing.T) {
	reg := prometheus.NewRegistry()
	r := New(Options{Sink: "slack", Logger: slog.New(slog.DiscardHandler), Metrics: NewMetrics(reg)})
	press := func(id string) {
		var cb slack.InteractionCallback
		cb.Type = slack.InteractionTypeBlockActions
		cb.ActionCallback.BlockActions = []*slack.BlockAction{{ActionID: id, ActionTs: "1.2"}}
		r.handle(context.Background(), cb)
	}
	press(slacksink.LinkActionPrefix + "0")
	unknown := r.opts.Metrics.Actions.WithLabelValues("unknown", "unknown")
	if n := testutil.ToFloat64(unknown); n != 0 {
		t.Errorf("a link button's press counted as unknown (%v)", n)
	}
	press("another_apps_button")
	if n := testutil.ToFloat64(unknown); n != 1 {
		t.Errorf("an unknown button's press counted %v times, want 1", n)
	}
}
