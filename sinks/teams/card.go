package teams

import (
	"cmp"
	"fmt"
	"strings"
	"time"

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

// blocks gathers a card's body.
type blocks []any

// text adds a TextBlock of Markdown the caller has escaped.
func (b *blocks) text(s string, extra map[string]any) {
	if strings.TrimSpace(s) == "" {
		return // Teams refuses an empty TextBlock
	}
	t := map[string]any{"type": "TextBlock", "text": s, "wrap": true}
	for k, v := range extra {
		t[k] = v
	}
	*b = append(*b, t)
}

// card is the Adaptive Card (schema 1.4, which Teams renders) for n. Its
// first lines are what a reader needs: where and what (the headline),
// the one sentence, the hint, the last log lines and what changed just
// before; then the facts not already said, the events and the links.
func card(n incident.Notification, cluster string, level detail, now time.Time) map[string]any {
	var body blocks
	var actions []any
	headline := sinks.Headline(n, cluster, now)
	if n.Transition == incident.Digest {
		body.text(escape(clip(headline, maxTitle)), map[string]any{"weight": "Bolder", "size": "Medium"})
		var lines []string
		for i, d := range n.Digest {
			if i == maxDigest || level == minimal && i == 5 {
				lines = append(lines, fmt.Sprintf("… and %d more", len(n.Digest)-i))
				break
			}
			line := "- " + escape(clip(sinks.Where(d.Incident), maxFact)) + ": " + escape(clip(sinks.What(d.Incident), maxFact))
			if s := sinks.Detail(d.Incident); s != "" {
				line += " — " + escape(clip(s, maxFact))
			}
			lines = append(lines, line)
		}
		body.text(strings.Join(lines, "\n"), nil)
	} else {
		inc := n.Incident
		body.text(escape(clip(headline, maxTitle)), map[string]any{"weight": "Bolder", "size": "Medium", "color": color(n)})
		limit := maxText
		if level == minimal {
			limit = minimalLen
		}
		for _, l := range lead(n, now) {
			body.text(escape(clip(l.text, limit)), l.style)
		}
		open := n.Transition != incident.Resolved && n.Transition != incident.Silenced
		if c := n.Context; c != nil && open && level < noContext {
			if c.Hint != "" {
				body.text(escape(clip("💡 "+c.Hint, maxText)), map[string]any{"isSubtle": true})
			}
			if lines, truncated := sinks.LastLines(c.Logs); len(lines) > 0 {
				body.text("Last log lines of "+escape(clip(sinks.LogsHead(n), maxFact)), map[string]any{"weight": "Bolder"})
				logs := strings.Join(lines, "\n")
				if truncated {
					logs = "…\n" + logs
				}
				// Monospace text is Markdown too: escaped after the cut,
				// so that no cut separates a backslash from its character.
				body.text(escape(tail(logs, maxLogs)), map[string]any{"fontType": "Monospace"})
			}
			if c.Unavailable != "" {
				body.text(escape(clip("Context incomplete: "+c.Unavailable, maxFact)), map[string]any{"isSubtle": true})
			}
		}
		changes := level < noFacts && body.changed(n) // open notifications only (sinks.Changed)
		if open && level < noFacts {
			if f := facts(n, now); len(f) > 0 {
				set := map[string]any{"type": "FactSet", "facts": f}
				if changes {
					set["separator"] = true
				}
				body = append(body, set)
			}
		}
		if c := n.Context; c != nil && open && level < noContext {
			var events []string
			for i, e := range c.Events {
				if i == maxEvents {
					break
				}
				events = append(events, "- "+escape(clip(eventLine(e, now), maxFact)))
			}
			body.text(strings.Join(events, "\n"), nil)
		}
		if last := sinks.Termination(n); last != "" && open && level < noFacts {
			body.text("Termination message", map[string]any{"weight": "Bolder"})
			body.text(escape(clip(last, maxFact)), map[string]any{"fontType": "Monospace"})
		}
		if u := inc.RunbookURL; u != "" && len(u) <= 2000 && open {
			actions = append(actions, map[string]any{"type": "Action.OpenUrl", "title": "Runbook", "url": u})
		}
		// The team's own links (a dashboard, a log search): names from
		// the configuration, URLs filled and checked by internal/links.
		for _, l := range inc.Links {
			actions = append(actions, map[string]any{"type": "Action.OpenUrl", "title": l.Name, "url": l.URL})
		}
		body.text(fmt.Sprintf("herald · rule %s · %s · %s", escape(clip(inc.Rule, 100)), n.Transition, escape(clip(n.ID(), 300))), map[string]any{"isSubtle": true, "size": "Small"})
	}
	c := map[string]any{
		"$schema":      "http://adaptivecards.io/schemas/adaptive-card.json",
		"type":         "AdaptiveCard",
		"version":      "1.4",
		"msteams":      map[string]any{"width": "Full"},
		"fallbackText": escape(clip(headline, maxTitle)),
		"body":         []any(body),
	}
	if len(actions) > 0 {
		c["actions"] = actions
	}
	return c
}

// line is one text of a card's lead, with its style.
type line struct {
	text  string
	style map[string]any
}

// lead is the card's first text after the headline: the state and the
// one sentence that says what happened.
func lead(n incident.Notification, now time.Time) []line {
	inc := n.Incident
	detail := sinks.Detail(inc)
	var out []line
	add := func(s string, style map[string]any) {
		if strings.TrimSpace(s) != "" {
			out = append(out, line{s, style})
		}
	}
	acked := sinks.Acked(n, now) // who took it on: "" once resolved
	switch {
	case n.Transition == incident.Acknowledged:
		add("✋ "+cmp.Or(acked, "Acknowledged"), map[string]any{"weight": "Bolder"})
		add(detail, nil)
		acked = "" // said first
	case n.Transition == incident.Resolved:
		add("✅ "+sinks.ResolvedLead(n, now), map[string]any{"weight": "Bolder", "color": "Good"})
	case n.Transition == incident.Silenced:
		add("🔇 "+sinks.Muted(n, now)+": nothing more until then unless it resolves", map[string]any{"weight": "Bolder"})
		add(detail, nil)
	case n.Unmuted != "":
		add("🔊 "+sinks.Unmuted(n), map[string]any{"weight": "Bolder"})
		add(detail, nil)
	case n.Transition == incident.Repeat:
		add("Still firing: "+detail, nil) // the headline says for how long
	default:
		add(detail, nil)
	}
	if c := sinks.ChangeLine(n); c != "" {
		add("Changed: "+c, map[string]any{"isSubtle": true})
	}
	if c := sinks.Covers(inc); c != "" && n.Transition != incident.Resolved {
		add(c, map[string]any{"isSubtle": true})
	}
	if acked != "" {
		add("✋ "+acked, map[string]any{"isSubtle": true})
	}
	return out
}

// facts are sinks.Facts as a FactSet: human titles, values escaped.
func facts(n incident.Notification, now time.Time) []any {
	var out []any
	for _, f := range sinks.Facts(n, now) {
		out = append(out, map[string]any{"title": f.Title, "value": escape(clip(f.Value, maxFact))})
	}
	return out
}

// eventLine is one of the pod's events: "Warning BackOff ×12 (1 min
// ago): Back-off restarting failed container".
func eventLine(e incident.Event, now time.Time) string {
	s := e.Type + " " + e.Reason
	if e.Count > 1 {
		s += fmt.Sprintf(" ×%d", e.Count)
	}
	if !e.LastSeen.IsZero() {
		s += " (" + sinks.Ago(e.LastSeen, now) + ")"
	}
	return s + ": " + e.Message
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
