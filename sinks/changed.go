package sinks

import (
	"fmt"
	"strings"

	"github.com/herald-k8s/herald/internal/incident"
)

// The "What changed" section (issue #33): what changed in a failing
// workload just before its incident began, or that nothing did. The first
// question on every call is "what changed?"; the section answers it on
// the first screen, after the crash context and before the facts. Its
// lines name images, env vars, ConfigMaps, field managers and
// change-cause annotations: all written by people herald does not trust,
// so each sink escapes them for its own format, as it does log lines.

// ChangedTitle is the section's title in every chat sink.
const ChangedTitle = "What changed"

// MaxChangeLines bounds the lines a message shows; the rest are counted
// ("… and 3 more"). internal/changes bounds them too; a sink does not
// rely on it.
const MaxChangeLines = 10

// Changed is the section n's message shows, or nil: an open incident's
// (firing, updated, repeat, acknowledged, the notification that says a
// mute ended), where the crash context shows. A resolved or muted message says only
// how it ended or until when, and a digest lists incidents.
func Changed(n incident.Notification) *incident.Changes {
	c := n.Changes
	if c == nil || len(c.Lines) == 0 {
		return nil
	}
	switch n.Transition {
	case incident.Resolved, incident.Silenced, incident.Digest:
		return nil
	}
	return c
}

// NothingChanged says the section only rules a change out ("No change to
// this workload in the last 30 min"): a plain line, not a section with a
// title, and never an undo.
func NothingChanged(c *incident.Changes) bool { return c.Empty() }

// ChangeLines are the section's lines, at most MaxChangeLines, the last
// of them saying how many more there are when it had to cut.
//
// Each is one line whatever it holds: internal/changes makes line breaks
// visible already, and a sink does not rely on it — a line break in a
// line could forge another (a fake "Undo:").
func ChangeLines(c *incident.Changes) []string {
	n := min(len(c.Lines), MaxChangeLines)
	if len(c.Lines) > MaxChangeLines {
		n = MaxChangeLines - 1
	}
	out := make([]string, 0, n+1)
	for _, l := range c.Lines[:n] {
		out = append(out, lineBreaks.Replace(l))
	}
	if n < len(c.Lines) {
		out = append(out, fmt.Sprintf("… and %d more", len(c.Lines)-n))
	}
	return out
}

// lineBreaks shows every kind of line break as an escape, as
// internal/changes does.
var lineBreaks = strings.NewReplacer("\n", `\u000a`, "\r", `\u000d`, "\v", `\u000b`, "\f", `\u000c`, "\u0085", `\u0085`, "\u2028", `\u2028`, "\u2029", `\u2029`)

// ChangeFacts are the section as labelled facts, for sinks that show
// facts (Teams' fact sets): a rollout's line titled "Rollout" (its value
// then without "Rolled out"), a ConfigMap's or Secret's titled by kind
// and name (which its value then does not repeat), any other line "Note", the count of lines cut
// untitled, and the undo command last,
// titled "Undo". Lines are said in Changes' order: rollouts, then
// objects, then the rest; a line that does not read as expected keeps
// the title "Note" rather than a wrong one.
func ChangeFacts(c *incident.Changes) []Fact {
	var out []Fact
	for i, line := range ChangeLines(c) {
		title := "Note"
		switch j := i - len(c.Rollouts); {
		case i == MaxChangeLines-1 && len(c.Lines) > MaxChangeLines:
			title = "" // "… and 3 more"
		case j < 0:
			title = "Rollout"
			if rest, ok := strings.CutPrefix(line, "Rolled out "); ok {
				line = rest // "4 min before (revision 7, by argocd): image …"
			}
		case j < len(c.Objects):
			o := c.Objects[j]
			name := lineBreaks.Replace(o.Kind + " " + o.Name)
			if rest, ok := strings.CutPrefix(line, name+" "); ok {
				title, line = name, rest
			}
		}
		out = append(out, Fact{title, line})
	}
	if c.Undo != "" && !NothingChanged(c) {
		out = append(out, Fact{"Undo", c.Undo})
	}
	return out
}
