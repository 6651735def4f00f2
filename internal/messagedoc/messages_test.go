package messagedoc

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/oncalltest"
	"github.com/herald-k8s/herald/sinks/slack"
	"github.com/herald-k8s/herald/sinks/stdout"
	"github.com/herald-k8s/herald/sinks/teams"
)

var update = flag.Bool("update", false, "rewrite docs/messages.md")

const path = "../../docs/messages.md"

const intro = `# Messages

What each kind of notification says, as a person reads it in the
channel: the push text (a phone's lock screen, a screen reader), then
the message. Slack's and Teams' markup is shown as they display it
(▌ is the header, │ a code block, ──── a separator line, [ ] a
button); a terminal shows the stdout sink's lines as they are. The JSON
payload of webhooks and NATS is in [payload.md](payload.md).

A Slack message below that ends with buttons ([ Silence 1 h ] …) is
as a Slack app with Socket Mode (the sink's ` + "`interactive`" + `) posts it:
an open incident's offers Silence 1 h, Silence 4 h, Silence until
resolved, Acknowledge (until someone has) and More logs (when it names a
container); a muted one's, Unsilence. Without Socket Mode the same
message has no buttons.

Every message leads with the cluster (the top-level ` + "`clusterName`" + `) and
the object, then what happened; the first screen holds the one sentence
that says why, the hint, the last log lines and what changed in the
workload just before (a rollout and the command that undoes it, a
ConfigMap or Secret, or that nothing did); the facts list only what
is not said above them. Durations read as people say them ("12 min",
"3 h 20 min"). A resolved message says how long it lasted and how it
ended, a muted one by what and until when.

This page is generated from the samples the sinks' golden tests render
(` + "`internal/oncalltest/samples.go`" + `): ` + "`go test ./internal/messagedoc -update`" + `
rewrites it, and the test fails while it is out of date.
`

// TestMessagesDoc: docs/messages.md is what the sinks render of the
// samples today.
func TestMessagesDoc(t *testing.T) {
	var b strings.Builder
	b.WriteString(intro)
	for _, s := range oncalltest.Samples() {
		fmt.Fprintf(&b, "\n## %s\n\n%s (`%s`).\n", s.Title, upperFirst(s.About), s.Name)

		var push, msg string
		if s.Note.Transition == incident.Digest {
			m := slack.RenderStartup(s.Note, oncalltest.SampleCluster)
			push, msg = m.Text, slackMessage(m.Blocks)
		} else {
			m := slack.RenderWith(s.Note, s.Now, slack.RenderOptions{Cluster: oncalltest.SampleCluster, Buttons: s.Buttons})
			push, msg = m.Text, slackMessage(m.Blocks)
			if s.Note.Transition != incident.Firing {
				msg += "\n\n(in the thread) " + slackSeen(slack.ThreadNote(s.Note, s.Now))
			}
		}
		fmt.Fprintf(&b, "\n### Slack\n\nPush: %s\n\n```text\n%s\n```\n", "`"+slackSeen(push)+"`", msg)
		if s.SlackOnly {
			continue // Teams and a terminal say what they say for another sample
		}

		body, err := teams.Render(s.Note, oncalltest.SampleCluster, s.Now)
		if err != nil {
			t.Fatal(err)
		}
		summary, card := teamsMessage(body)
		fmt.Fprintf(&b, "\n### Teams\n\nPush: %s\n\n```text\n%s\n```\n", "`"+summary+"`", card)

		fmt.Fprintf(&b, "\n### stdout\n\n```text\n%s\n```\n", stdout.Format(s.Note, oncalltest.SampleCluster, s.Now))
	}
	got := b.String()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if got != string(want) {
		t.Errorf("docs/messages.md is out of date with the sinks: go test ./internal/messagedoc -update rewrites it")
	}
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
