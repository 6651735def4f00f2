package slack

import (
	"fmt"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/sinks"
)

// ThreadNote is the short reply posted in the incident's thread when it
// changes: the message above is edited to the new state, and the thread
// keeps the story. A repeat's mentions are here: Slack notifies no one of
// a mention an edit adds.
func ThreadNote(n incident.Notification, now time.Time) string {
	var s string
	switch {
	case n.Transition == incident.Acknowledged && n.Incident.Ack != nil:
		// Said as it happens ("0 s ago" would say nothing), by name: a
		// mention in a new reply would ping the person who just pressed.
		return ":raised_hand: Acknowledged by " + escape(sinks.AckName(*n.Incident.Ack)) + "."
	case n.Transition == incident.Acknowledged:
		s = ":raised_hand: Acknowledged."
	case n.Transition == incident.Resolved:
		s = ":white_check_mark: " + sinks.Resolution(n, now) + "."
	case n.Transition == incident.Repeat:
		s = ":repeat: Still firing " + sinks.Age(n, now) + "."
	case n.Transition == incident.Silenced:
		s = ":mute: " + sinks.Muted(n, now) + "."
	case n.Unmuted != "":
		s = ":loud_sound: " + sinks.Unmuted(n) + "."
		if n.Change != "" {
			s += " " + n.Change + "."
		}
	case n.Change != "":
		s = ":arrows_counterclockwise: " + n.Change + " · " + sinks.Detail(n.Incident)
	default:
		s = ":arrows_counterclockwise: " + sinks.Detail(n.Incident)
	}
	s = truncate(escape(s), maxSection)
	if m := mentions(n); m != "" {
		s += "\n" + m
	}
	return s
}

// RenderDigest lists many notifications in one message (a storm under
// the rate limit), within Slack's limits: what does not fit is counted
// ("… and 37 more"). Each line says where and what, like a message's
// header, and the one sentence.
func RenderDigest(ns []incident.Notification, cluster string) Message {
	return renderDigest(fmt.Sprintf("herald: %d notifications", len(ns)), ns, cluster)
}

// RenderStartup is the digest of what was already open at herald's first
// start (a Digest notification), titled as the other sinks title it.
func RenderStartup(n incident.Notification, cluster string) Message {
	return renderDigest(sinks.DigestTitle(n), n.Digest, cluster)
}

func renderDigest(title string, ns []incident.Notification, cluster string) Message {
	if cluster != "" {
		title = cluster + " · " + title
	}
	blocks := []slack.Block{slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, truncate(title, maxHeader), true, false))}
	if m := digestMentions(ns); m != "" {
		// A storm is when the team must hear: the dispatcher splits
		// digests by destination, so these are one route's people.
		blocks = append(blocks, slack.NewSectionBlock(mrkdwn(m), nil, nil))
	}
	ids := make([]any, 0, len(ns))
	for _, n := range ns {
		ids = append(ids, n.ID())
	}
	var section strings.Builder
	shown := 0
	for _, n := range ns {
		state := map[incident.Transition]string{incident.Resolved: "resolved: ", incident.Updated: "updated: ", incident.Silenced: "muted: ", incident.Acknowledged: "acknowledged: "}[n.Transition]
		line := fmt.Sprintf("%s %s*%s*: %s", emoji(n), state, escape(sinks.Where(n.Incident)), escape(sinks.What(n.Incident)))
		if d := sinks.Detail(n.Incident); d != "" && n.Transition != incident.Resolved {
			line += " — " + escape(d)
		}
		// One line must fit a section however long the text is.
		line = truncate(line, maxSection-101) + "\n"
		if section.Len() > 0 && section.Len()+len(line) > maxSection-100 {
			blocks = append(blocks, slack.NewSectionBlock(mrkdwn(section.String()), nil, nil))
			section.Reset()
			if len(blocks) >= maxBlocks-2 {
				break
			}
		}
		section.WriteString(line)
		shown++
	}
	if section.Len() > 0 {
		blocks = append(blocks, slack.NewSectionBlock(mrkdwn(section.String()), nil, nil))
	}
	if rest := len(ns) - shown; rest > 0 {
		blocks = append(blocks, slack.NewContextBlock("", mrkdwn(fmt.Sprintf("… and %d more", rest))))
	}
	return Message{
		Text:     truncate(escape(title), maxSection),
		Blocks:   blocks,
		Metadata: slack.SlackMetadata{EventType: metadataType, EventPayload: map[string]any{"ids": ids, "transition": "digest"}},
	}
}

// digestMentions are the mentions of the digest's firing and repeat
// notifications, each once.
func digestMentions(ns []incident.Notification) string {
	seen := map[string]bool{}
	var out []string
	for _, n := range ns {
		for _, m := range strings.Fields(mentions(n)) {
			if !seen[m] {
				seen[m] = true
				out = append(out, m)
			}
		}
	}
	return strings.Join(out, " ")
}
