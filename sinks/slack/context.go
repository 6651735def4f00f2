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

// contextBlocks renders the crash context that belongs on the first
// screen: the hint, the last log lines (a code block, newest at the
// bottom, cut from the top to fit a section), and what could not be had.
func contextBlocks(n incident.Notification, now time.Time) []slack.Block {
	c := n.Context
	if c == nil {
		return nil
	}
	var blocks []slack.Block
	if c.Hint != "" {
		blocks = append(blocks, slack.NewContextBlock("", mrkdwn(truncate(":bulb: "+escape(c.Hint), maxSection))))
	}
	if l := c.Logs; l != nil && len(l.Lines) > 0 {
		which := "current"
		if l.Previous {
			which = "crashed"
		}
		head := fmt.Sprintf("*Last log lines* of the %s `%s` container", which, inline(l.Container))
		if c.Pod != "" && c.Pod != sinks.Where(n.Incident) {
			head += " (pod " + escape(c.Pod) + ")"
		}
		lines, truncated := sinks.LastLines(l)
		blocks = append(blocks, slack.NewSectionBlock(mrkdwn(fitCode(head, lines, truncated)), nil, nil))
	}
	if c.Unavailable != "" {
		blocks = append(blocks, slack.NewContextBlock("", mrkdwn(truncate(":grey_question: Context incomplete: "+escape(c.Unavailable), maxSection))))
	}
	return blocks
}

// eventBlocks lists the pod's recent events, below the facts.
func eventBlocks(c *incident.Context, now time.Time) []slack.Block {
	if c == nil || len(c.Events) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString("*Events*")
	for _, ev := range c.Events {
		icon := ":small_blue_diamond:"
		if ev.Type == "Warning" {
			icon = ":warning:"
		}
		line := fmt.Sprintf("\n%s %s", icon, escape(ev.Reason))
		if ev.Count > 1 {
			line += fmt.Sprintf(" ×%d", ev.Count)
		}
		if !ev.LastSeen.IsZero() {
			line += " (" + sinks.Ago(ev.LastSeen, now) + ")"
		}
		line += ": " + escape(ev.Message)
		b.WriteString(truncate(line, maxSection/len(c.Events)-10))
	}
	return []slack.Block{slack.NewSectionBlock(mrkdwn(truncate(b.String(), maxSection)), nil, nil)}
}

// fitCode renders lines as a code block under head within a section's
// limit, dropping the oldest lines first: the newest line is the one that
// says why the container died.
func fitCode(head string, lines []string, truncated bool) string {
	escaped := make([]string, len(lines))
	for i, l := range lines {
		escaped[i] = escape(l)
	}
	for {
		body := strings.Join(escaped, "\n")
		marker := ""
		if truncated {
			marker = "…\n"
		}
		text := head + "\n```" + marker + body + "```"
		if utf8.RuneCountInString(text) <= maxSection {
			return text
		}
		if len(escaped) == 1 { // one huge line: keep its end
			r := []rune(escaped[0])
			escaped[0] = string(r[len(r)-(maxSection-utf8.RuneCountInString(head)-20):])
		} else {
			escaped = escaped[1:]
		}
		truncated = true
	}
}
