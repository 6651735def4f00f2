package slackact

import (
	"strings"
	"testing"

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
