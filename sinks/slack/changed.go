package slack

import (
	"strings"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/sinks"
)

// maxUndo bounds the undo command: a kubectl line, whatever the
// workload's name holds.
const maxUndo = 500

// changedBlocks renders the "What changed" section (sinks.Changed): a
// section titled *What changed*, one change a line, and the command that
// undoes the rollouts as inline code; or, when nothing changed, that
// one line plainly, small, since it rules a change out rather than
// names one. Every line is escaped (it names images, env vars,
// ConfigMaps, field managers and change-cause annotations); each is cut
// to its share of the section, so that the undo command, last, is never
// cut off and no cut opens an inline code span.
func changedBlocks(n incident.Notification) []slack.Block {
	c := sinks.Changed(n)
	if c == nil {
		return nil
	}
	lines := sinks.ChangeLines(c)
	if sinks.NothingChanged(c) {
		escaped := make([]string, len(lines))
		for i, l := range lines {
			escaped[i] = truncate(escape(l), maxSection/len(lines)-1)
		}
		return []slack.Block{slack.NewContextBlock("", mrkdwn(truncate(strings.Join(escaped, "\n"), maxSection)))}
	}
	head := "*" + sinks.ChangedTitle + "*"
	undo := ""
	if c.Undo != "" {
		undo = "\nUndo: `" + truncate(inline(c.Undo), maxUndo) + "`"
	}
	share := (maxSection-utf8.RuneCountInString(head)-utf8.RuneCountInString(undo))/len(lines) - len("\n• ")
	var b strings.Builder
	b.WriteString(head)
	for _, l := range lines {
		// inline: no backtick of the cluster's can open code, so only
		// herald's undo command below is ever shown as one.
		b.WriteString("\n• " + truncate(inline(l), share))
	}
	b.WriteString(undo)
	return []slack.Block{slack.NewSectionBlock(mrkdwn(b.String()), nil, nil)}
}
