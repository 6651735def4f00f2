package teams

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/sinks"
)

// detail is how much of a notification a card shows.
type detail int

const (
	full      detail = iota
	noContext        // no log lines or events
	noFacts          // nor facts
	minimal          // title, short text, where: always small
)

// Bounds of the parts of a card, in characters.
const (
	maxTitle   = 250
	maxText    = 4000
	maxFact    = 300
	maxLogs    = 6000
	maxEvents  = 10
	maxDigest  = 30
	minimalLen = 500
)

// card is the Adaptive Card (schema 1.4, which Teams renders) for n.
func card(n incident.Notification, cluster string, level detail) map[string]any {
	var body []any
	text := func(s string, extra map[string]any) {
		if strings.TrimSpace(s) == "" {
			return // Teams refuses an empty TextBlock
		}
		b := map[string]any{"type": "TextBlock", "text": s, "wrap": true}
		for k, v := range extra {
			b[k] = v
		}
		body = append(body, b)
	}
	var actions []any
	if n.Transition == incident.Digest {
		text(escape(clip(sinks.DigestTitle(n), maxTitle)), map[string]any{"weight": "Bolder", "size": "Medium"})
		var lines []string
		for i, d := range n.Digest {
			if i == maxDigest || level == minimal && i == 5 {
				lines = append(lines, fmt.Sprintf("… and %d more", len(n.Digest)-i))
				break
			}
			lines = append(lines, "- "+escape(clip(d.Incident.Title, maxTitle)))
		}
		if len(lines) > 0 {
			text(strings.Join(lines, "\n"), nil)
		}
	} else {
		inc := n.Incident
		text(label(n)+escape(clip(cmp.Or(inc.Title, inc.Reason, "herald: "+n.ID()), maxTitle)), map[string]any{"weight": "Bolder", "size": "Medium", "color": color(n)})
		if level == minimal {
			text(escape(clip(inc.Text, minimalLen)), nil)
		} else {
			text(escape(clip(inc.Text, maxText)), nil)
		}
		if n.Change != "" {
			text(escape(clip("Changed: "+n.Change, maxFact)), map[string]any{"isSubtle": true})
		}
		if level < noFacts {
			body = append(body, map[string]any{"type": "FactSet", "facts": facts(n, cluster)})
		}
		if c := n.Context; c != nil && level < noContext {
			if c.Hint != "" {
				text(escape(clip(c.Hint, maxText)), map[string]any{"isSubtle": true})
			}
			if l := c.Logs; l != nil && len(l.Lines) > 0 {
				text("Last log lines of "+escape(l.Container), map[string]any{"weight": "Bolder"})
				// Monospace text is Markdown too: escaped after the cut,
				// so that no cut separates a backslash from its character.
				text(escape(tail(strings.Join(l.Lines, "\n"), maxLogs)), map[string]any{"fontType": "Monospace"})
			}
			var events []string
			for i, e := range c.Events {
				if i == maxEvents {
					break
				}
				events = append(events, "- "+escape(clip(sinks.EventLine(e), maxFact)))
			}
			if len(events) > 0 {
				text(strings.Join(events, "\n"), nil)
			}
			if c.Unavailable != "" {
				text(escape(clip("Context incomplete: "+c.Unavailable, maxFact)), map[string]any{"isSubtle": true})
			}
		}
		if u := inc.RunbookURL; u != "" && len(u) <= 2000 {
			actions = append(actions, map[string]any{"type": "Action.OpenUrl", "title": "Runbook", "url": u})
		}
		text(fmt.Sprintf("herald · rule %s · %s · %s", escape(clip(inc.Rule, 100)), n.Transition, clip(n.ID(), 300)), map[string]any{"isSubtle": true, "size": "Small"})
	}
	c := map[string]any{
		"$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
		"type":    "AdaptiveCard",
		"version": "1.4",
		"msteams": map[string]any{"width": "Full"},
		"body":    body,
	}
	if len(actions) > 0 {
		c["actions"] = actions
	}
	return c
}

func facts(n incident.Notification, cluster string) []any {
	inc := n.Incident
	var out []any
	add := func(title, value string) {
		if value != "" {
			out = append(out, map[string]any{"title": escape(clip(title, maxFact)), "value": escape(clip(value, maxFact))})
		}
	}
	add("Cluster", cluster)
	add("Namespace", inc.Object.Namespace)
	add(inc.Object.Kind, inc.Object.Name)
	add("Container", inc.Container)
	add("Reason", inc.Reason)
	add("Severity", inc.Severity)
	for _, k := range []string{"restartCount", "exitCode", "node"} {
		add(k, inc.Facts[k])
	}
	return out
}

func label(n incident.Notification) string {
	switch n.Transition {
	case incident.Resolved:
		return "Resolved: "
	case incident.Silenced:
		return "Silenced: "
	case incident.Repeat:
		return "Still firing: "
	case incident.Updated:
		return "Updated: "
	}
	return ""
}

// color is an Adaptive Card text colour.
func color(n incident.Notification) string {
	switch {
	case n.Transition == incident.Resolved:
		return "Good"
	case n.Transition == incident.Silenced:
		return "Default"
	case n.Incident.Severity == "critical":
		return "Attention"
	default:
		return "Warning"
	}
}

// escape keeps text from the cluster from formatting the card, linking
// or mentioning (Adaptive Cards render a subset of Markdown in TextBlocks
// and fact sets, monospace ones included): sinks.MarkdownEscape, after
// any cut.
func escape(s string) string { return sinks.MarkdownEscape(s) }

// clip and tail keep at most max characters of the start or the end of s
// (Adaptive Cards count characters).
func clip(s string, max int) string { return sinks.Truncate(max, s) }
func tail(s string, max int) string { return sinks.TruncateEnd(max, s) }
