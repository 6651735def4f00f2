package teams

import (
	"strings"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/sinks"
)

// maxChange bounds one line of the "What changed" section: a rollout's
// line lists what changed in the template, longer than a fact.
const maxChange = 600

// changed adds the "What changed" section (sinks.Changed): a bold title
// and a fact set, one fact a change ("Rollout", "ConfigMap app-config")
// and the undo command last; or, when nothing changed, that one line,
// subtle, since it rules a change out rather than names one. Titles and
// values are cluster text (ConfigMap names, images, env vars, field
// managers, change-cause annotations): escaped after the cut, as every
// text of the card. It says whether it added a fact set: the card's own
// facts, next, are then set apart by a line, so that no one reads them
// as changes.
func (b *blocks) changed(n incident.Notification) (factSet bool) {
	c := sinks.Changed(n)
	if c == nil {
		return false
	}
	if sinks.NothingChanged(c) {
		var lines []string
		for _, l := range sinks.ChangeLines(c) {
			lines = append(lines, escape(clip(l, maxChange)))
		}
		b.text(strings.Join(lines, "\n"), map[string]any{"isSubtle": true})
		return false
	}
	var facts []any
	for _, f := range sinks.ChangeFacts(c) {
		facts = append(facts, map[string]any{"title": escape(clip(f.Title, maxFact)), "value": escape(clip(f.Value, maxChange))})
	}
	b.text(sinks.ChangedTitle, map[string]any{"weight": "Bolder"})
	*b = append(*b, map[string]any{"type": "FactSet", "facts": facts})
	return true
}
