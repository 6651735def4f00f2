package slack

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/sinks"
)

// Slack's limits (Block Kit reference): a header's text 150 characters, a
// section's text 3,000, a field 2,000, 10 fields, 50 blocks per message.
const (
	maxHeader    = 150
	maxSection   = 3000
	maxField     = 2000
	maxFields    = 10
	maxBlocks    = 50
	truncMarker  = "… (truncated)"
	metadataType = "herald_notification"
)

// Message is a rendered Slack message: blocks, the plain-text fallback
// (notifications, screen readers), and metadata naming the notifications
// it carries (for bots that read the channel).
type Message struct {
	Text     string
	Blocks   []slack.Block
	Metadata slack.SlackMetadata
}

func (m Message) options() []slack.MsgOption {
	return []slack.MsgOption{
		slack.MsgOptionText(m.Text, false),
		slack.MsgOptionBlocks(m.Blocks...),
		slack.MsgOptionMetadata(m.Metadata),
	}
}

func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-utf8.RuneCountInString(truncMarker)]) + truncMarker
}

// emoji shows the state at a glance: the transition when it is over,
// otherwise the severity.
func emoji(n incident.Notification) string {
	if n.Transition == incident.Resolved {
		return ":white_check_mark:"
	}
	switch n.Incident.Severity {
	case "critical":
		return ":red_circle:"
	case "warning":
		return ":large_orange_circle:"
	}
	return ":large_blue_circle:"
}

func mrkdwn(s string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.MarkdownType, s, false, false)
}

// escape keeps Slack from reading text from the cluster as markup: no
// mention (<!channel>, <@U…>), no disguised link (<url|label>), no ```
// that opens a code block or closes herald's. Every text that reaches
// mrkdwn passes it, the fallback text and thread replies included (Slack
// parses those too). Emphasis (*, _, ~) has no escape in mrkdwn; it can
// bold a word, not mention or link.
func escape(s string) string { return sinks.SlackEscape(sinks.Unfence(s)) }

// inline is s inside an inline `span`: no backtick may end it early.
func inline(s string) string { return escape(strings.ReplaceAll(s, "`", "'")) }

// link is a Slack link to url with a label of herald's: the URL (a
// rule's template may put object data in it) can neither end the link
// nor replace the label.
func link(url, label string) string {
	return "<" + escape(strings.ReplaceAll(url, "|", "%7C")) + "|" + label + ">"
}

// Render builds the message for one notification: what the incident is
// now (the message is edited in place as it evolves).
func Render(n incident.Notification, cluster string, now time.Time) Message {
	inc := n.Incident
	state := map[incident.Transition]string{incident.Resolved: "Resolved: ", incident.Repeat: "Still firing: ", incident.Silenced: "Silenced: "}[n.Transition]
	header := truncate(state+inc.Title, maxHeader)
	blocks := []slack.Block{
		slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, header, true, false)),
		slack.NewSectionBlock(mrkdwn(truncate(emoji(n)+" "+escape(inc.Text), maxSection)), nil, nil),
	}
	var fields []*slack.TextBlockObject
	field := func(label, value string) {
		if value != "" && len(fields) < maxFields {
			fields = append(fields, mrkdwn(truncate(fmt.Sprintf("*%s*\n%s", escape(label), escape(value)), maxField)))
		}
	}
	obj := inc.Object.Name
	if inc.Object.Namespace != "" {
		field("Namespace", inc.Object.Namespace)
	}
	field(inc.Object.Kind, obj)
	field("Container", inc.Container)
	field("Reason", inc.Reason)
	field("Severity", inc.Severity)
	field("Exit code", inc.Facts["exitCode"])
	field("Restarts", inc.Facts["restartCount"])
	if c := n.Context; c != nil && c.Node != nil {
		node := c.Node.Name
		if len(c.Node.Conditions) > 0 {
			node += " (" + strings.Join(c.Node.Conditions, ", ") + ")"
		}
		field("Node", node)
	}
	field("Cluster", cluster)
	if !inc.FirstSeen.IsZero() {
		age := now.Sub(inc.FirstSeen).Round(time.Second)
		if n.Transition == incident.Resolved {
			field("Lasted", age.String())
		} else {
			field("Age", age.String())
		}
	}
	if len(fields) > 0 {
		blocks = append(blocks, slack.NewSectionBlock(nil, fields, nil))
	}
	switch {
	case n.Transition == incident.Silenced:
		blocks = append(blocks, slack.NewContextBlock("", mrkdwn(truncate(":mute: *"+escape(n.Change)+"*: nothing more until then unless it resolves", maxSection))))
	case n.Change != "":
		blocks = append(blocks, slack.NewContextBlock("", mrkdwn(truncate(":arrows_counterclockwise: *Changed:* "+escape(n.Change), maxSection))))
	}
	if last := inc.Facts["lastMessage"]; last != "" && n.Transition != incident.Resolved {
		blocks = append(blocks, slack.NewSectionBlock(mrkdwn(truncate("*Last termination message*\n```"+escape(last)+"```", maxSection)), nil, nil))
	}
	blocks = append(blocks, contextBlocks(n.Context, now)...)
	if u := inc.RunbookURL; u != "" && n.Transition != incident.Resolved {
		blocks = append(blocks, slack.NewContextBlock("", mrkdwn(truncate(":book: "+link(u, "Runbook"), maxSection))))
	}
	if hint := kubectlHint(inc); hint != "" && n.Transition != incident.Resolved {
		blocks = append(blocks, slack.NewContextBlock("", mrkdwn(truncate(hint, maxSection))))
	}
	blocks = append(blocks, slack.NewContextBlock("", mrkdwn(fmt.Sprintf("herald · rule `%s` · %s · %s", inc.Rule, n.Transition, n.ID()))))
	return Message{
		Text:     truncate(emoji(n)+" "+state+escape(inc.Title), maxSection),
		Blocks:   blocks,
		Metadata: slack.SlackMetadata{EventType: metadataType, EventPayload: map[string]any{"ids": []any{n.ID()}, "transition": string(n.Transition)}},
	}
}

// kubectlHint suggests the first command an operator would run.
func kubectlHint(inc incident.Incident) string {
	o := inc.Object
	o.Kind, o.Namespace, o.Name = inline(o.Kind), inline(o.Namespace), inline(o.Name)
	ns := ""
	if o.Namespace != "" {
		ns = " -n " + o.Namespace
	}
	switch {
	case o.Kind == "Pod" && inc.Container != "" && (inc.Reason == "CrashLoopBackOff" || inc.Reason == "OOMKilled" || inc.Reason == "Restarting"):
		return fmt.Sprintf("`kubectl logs%s %s -c %s --previous`", ns, o.Name, inline(inc.Container))
	case o.Kind != "" && o.Name != "":
		return fmt.Sprintf("`kubectl describe%s %s %s`", ns, strings.ToLower(o.Kind), o.Name)
	}
	return ""
}

// ThreadNote is the short reply posted in the incident's thread when it
// changes.
func ThreadNote(n incident.Notification, now time.Time) string {
	switch n.Transition {
	case incident.Resolved:
		return fmt.Sprintf(":white_check_mark: Resolved after %s.", now.Sub(n.Incident.FirstSeen).Round(time.Second))
	case incident.Repeat:
		return fmt.Sprintf(":repeat: Still firing after %s.", now.Sub(n.Incident.FirstSeen).Round(time.Second))
	case incident.Silenced:
		return truncate(":mute: "+escape(n.Change)+".", maxSection)
	}
	if n.Change != "" {
		return truncate(":arrows_counterclockwise: "+escape(n.Change)+" · "+escape(n.Incident.Text), maxSection)
	}
	return truncate(":arrows_counterclockwise: "+escape(n.Incident.Text), maxSection)
}

// RenderDigest lists many notifications in one message, within Slack's
// limits: what does not fit is counted ("… and 37 more").
func RenderDigest(ns []incident.Notification, cluster string) Message {
	title := fmt.Sprintf("herald: %d notifications", len(ns))
	if cluster != "" {
		title += " in " + cluster
	}
	blocks := []slack.Block{slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, truncate(title, maxHeader), true, false))}
	ids := make([]any, 0, len(ns))
	for _, n := range ns {
		ids = append(ids, n.ID())
	}
	var section strings.Builder
	shown := 0
	for _, n := range ns {
		// One line must fit a section however long the title is.
		line := truncate(fmt.Sprintf("%s %s%s", emoji(n), map[incident.Transition]string{incident.Resolved: "resolved: ", incident.Updated: "updated: "}[n.Transition], escape(n.Incident.Title)), maxSection-101) + "\n"
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
		Text:     truncate(title, maxSection),
		Blocks:   blocks,
		Metadata: slack.SlackMetadata{EventType: metadataType, EventPayload: map[string]any{"ids": ids, "transition": "digest"}},
	}
}
