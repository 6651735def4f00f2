package slack

import (
	"fmt"
	"regexp"
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
// (the phone's push notification, screen readers), and metadata naming
// the notifications it carries (for bots that read the channel).
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

// emoji shows the state at a glance: over, muted, otherwise the severity.
// A muted incident must not keep the red of one that needs someone now.
func emoji(n incident.Notification) string {
	switch {
	case n.Transition == incident.Resolved && (n.Incident.Ended == incident.EndedRuleRemoved || n.Incident.Ended == incident.EndedRuleChanged):
		return ":heavy_minus_sign:" // closed, not fixed
	case n.Transition == incident.Resolved:
		return ":white_check_mark:"
	case n.Transition == incident.Silenced:
		return ":mute:"
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

// slackID is a user (U…, W…) or user group (S…) ID: only these become
// mentions, so a routing value can never become <!channel> or a link.
var slackID = regexp.MustCompile(`^[SUW][A-Z0-9]{2,20}$`)

// mentions are the incident's people to notify, as Slack mention markup:
// on a new or still-firing incident only (a resolved one needs nobody).
func mentions(n incident.Notification) string {
	if n.Transition != incident.Firing && n.Transition != incident.Repeat {
		return ""
	}
	var out []string
	for _, id := range n.Incident.Mentions {
		switch {
		case !slackID.MatchString(id):
		case id[0] == 'S':
			out = append(out, "<!subteam^"+id+">")
		default:
			out = append(out, "<@"+id+">")
		}
	}
	return strings.Join(out, " ")
}

// RenderOptions say how a message is rendered, beyond its notification.
type RenderOptions struct {
	// Cluster leads the header and the push text (clusterName).
	Cluster string
	// Buttons ends an open or muted incident's message with herald's
	// buttons (actions.go): for a Slack app whose presses reach herald
	// (a bot token and Socket Mode), never through an incoming webhook.
	Buttons bool
	// NoSilence leaves the Silence buttons out: nobody may silence
	// (slack.interactive.allow grants it to no one), and a button every
	// press of which is refused only teaches people to ignore buttons.
	NoSilence bool
}

// Render builds the message for one notification, without buttons:
// RenderWith with only the cluster.
func Render(n incident.Notification, cluster string, now time.Time) Message {
	return RenderWith(n, now, RenderOptions{Cluster: cluster})
}

// RenderWith builds the message for one notification: what the incident
// is now (the message is edited in place as it evolves). The first screen
// says who and what in the header, then the one sentence that matters,
// the hint, the last log lines and what changed just before; fields only
// hold what is not said above them; events, termination message and
// links come after, then the buttons (with o.Buttons) and the footer.
func RenderWith(n incident.Notification, now time.Time, o RenderOptions) Message {
	inc := n.Incident
	cluster := o.Cluster
	headline := sinks.Headline(n, cluster, now)
	blocks := []slack.Block{
		slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, truncate(headline, maxHeader), true, false)),
		slack.NewSectionBlock(mrkdwn(lead(n, now)), nil, nil),
	}
	if m := mentions(n); m != "" {
		// A block of its own: text from the cluster, however long, cut
		// in the lead, can never cut the mentions off.
		blocks = append(blocks, slack.NewSectionBlock(mrkdwn(m), nil, nil))
	}
	open := n.Transition != incident.Resolved && n.Transition != incident.Silenced
	if open {
		blocks = append(blocks, contextBlocks(n, now)...)
		blocks = append(blocks, changedBlocks(n)...)
		if f := fields(n, now); len(f) > 0 {
			blocks = append(blocks, slack.NewSectionBlock(nil, f, nil))
		}
		blocks = append(blocks, eventBlocks(n.Context, now)...)
		if last := sinks.Termination(n); last != "" {
			blocks = append(blocks, slack.NewSectionBlock(mrkdwn(truncate("*Termination message*\n```"+escape(last)+"```", maxSection)), nil, nil))
		}
		var links []string
		if u := inc.RunbookURL; u != "" {
			links = append(links, ":book: "+link(u, "Runbook"))
		}
		if hint := kubectlHint(inc); hint != "" {
			links = append(links, hint)
		}
		if len(links) > 0 {
			blocks = append(blocks, slack.NewContextBlock("", mrkdwn(truncate(strings.Join(links, " · "), maxSection))))
		}
	}
	if o.Buttons {
		if b := actionsBlock(n, o.NoSilence); b != nil {
			blocks = append(blocks, b)
		}
	}
	if b := linksBlock(inc); b != nil {
		blocks = append(blocks, b)
	}
	blocks = append(blocks, slack.NewContextBlock("", mrkdwn(fmt.Sprintf("herald · rule `%s` · %s · %s", inline(inc.Rule), n.Transition, n.ID()))))
	return Message{
		Text:     truncate(escape(headline), maxSection),
		Blocks:   blocks,
		Metadata: slack.SlackMetadata{EventType: metadataType, EventPayload: map[string]any{"ids": []any{n.ID()}, "transition": string(n.Transition)}},
	}
}

// lead is the message's first section, within a section's limit: the
// state and the one sentence that says what happened; on an
// acknowledged incident's, who took it on, which no text from the
// cluster, however long, can cut off.
func lead(n incident.Notification, now time.Time) string {
	inc := n.Incident
	detail := escape(sinks.Detail(inc))
	var lines []string
	switch {
	case n.Transition == incident.Acknowledged:
		lines = append(lines, ":raised_hand: *"+acked(n, now)+"*", emoji(n)+" "+detail)
	case n.Transition == incident.Resolved:
		lines = append(lines, emoji(n)+" *"+escape(sinks.ResolvedLead(n, now))+"*")
	case n.Transition == incident.Silenced:
		lines = append(lines, emoji(n)+" *"+escape(sinks.Muted(n, now))+"*: nothing more until then unless it resolves", detail)
	case n.Unmuted != "":
		lines = append(lines, ":loud_sound: *"+escape(sinks.Unmuted(n))+"*", emoji(n)+" "+detail)
	case n.Transition == incident.Repeat:
		lines = append(lines, emoji(n)+" *Still firing*: "+detail) // the headline says for how long
	default:
		lines = append(lines, emoji(n)+" "+detail)
	}
	if c := sinks.ChangeLine(n); c != "" {
		lines = append(lines, ":arrows_counterclockwise: *Changed:* "+escape(c))
	}
	if c := sinks.Covers(inc); c != "" && n.Transition != incident.Resolved {
		lines = append(lines, ":link: "+escape(c))
	}
	var out []string
	for _, l := range lines {
		if strings.TrimSpace(l) != "" && l != emoji(n)+" " {
			out = append(out, l)
		}
	}
	text := strings.Join(out, "\n")
	if n.Transition == incident.Acknowledged || n.Transition == incident.Resolved || inc.Ack == nil {
		return truncate(text, maxSection)
	}
	ack := ":raised_hand: " + acked(n, now)
	return truncate(text, maxSection-utf8.RuneCountInString(ack)-1) + "\n" + ack
}

// acked says who acknowledged n's incident and when, with them as Slack
// shows them (ackWho); "Acknowledged" alone when the ledger lost who.
func acked(n incident.Notification, now time.Time) string {
	a := n.Incident.Ack
	if a == nil {
		return "Acknowledged"
	}
	// Slack renders the time in each reader's own zone and it stays
	// true however long the message stands ("3 min ago" would not).
	return "Acknowledged by " + ackWho(*a) + " · " + slackDate(a.At)
}

// slackDate is t as Slack's date markup: "today at 16:05" in the reader's
// time zone, or the UTC time where a client cannot render it.
func slackDate(t time.Time) string {
	return fmt.Sprintf("<!date^%d^{date_short_pretty} at {time}|%s>", t.Unix(), t.UTC().Format("2006-01-02 15:04 UTC"))
}

// ackWho is who acknowledged, for mrkdwn: a mention when herald knows
// them as a Slack user ("slack:" and a user ID, nothing else: Slack shows
// their name and no one is notified by an edit), else their name escaped.
func ackWho(a incident.Ack) string {
	if id, ok := strings.CutPrefix(a.By, "slack:"); ok && slackID.MatchString(id) && id[0] != 'S' {
		return "<@" + id + ">"
	}
	return escape(sinks.AckName(a))
}

// fields are the facts the header and the lead do not already say.
func fields(n incident.Notification, now time.Time) []*slack.TextBlockObject {
	var out []*slack.TextBlockObject
	for _, f := range sinks.Facts(n, now) {
		if len(out) < maxFields {
			out = append(out, mrkdwn(truncate("*"+f.Title+"*\n"+escape(f.Value), maxField)))
		}
	}
	return out
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
