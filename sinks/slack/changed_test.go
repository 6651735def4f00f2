package slack

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/oncalltest"
)

func rolledOut() *incident.Changes {
	return &incident.Changes{Workload: "Deployment/checkout", At: t0,
		Rollouts: []incident.Rollout{{Revision: "7", At: t0.Add(-4 * time.Minute), By: "argocd", Known: true}},
		Undo:     "kubectl rollout undo deployment/checkout -n shop --to-revision=6",
		Lines:    []string{"Rolled out 4 min before (revision 7, by argocd): image app: shop/checkout:1.8.2 → 1.9.0; env DB_POOL changed"}}
}

// blockTexts are the mrkdwn texts of a message's blocks, in order, a
// fields section's fields as one text.
func blockTexts(m Message) []string {
	var out []string
	for _, b := range m.Blocks {
		switch b := b.(type) {
		case *slack.HeaderBlock:
			out = append(out, "header:"+b.Text.Text)
		case *slack.SectionBlock:
			if b.Text != nil {
				out = append(out, b.Text.Text)
			}
			for _, f := range b.Fields {
				out = append(out, "field:"+f.Text)
			}
		case *slack.ContextBlock:
			for _, e := range b.ContextElements.Elements {
				if o, ok := e.(*slack.TextBlockObject); ok {
					out = append(out, "context:"+o.Text)
				}
			}
		}
	}
	return out
}

// changedText is the text of the message's "What changed" section, and
// its index among blockTexts; -1 when there is none.
func changedText(m Message) (string, int) {
	for i, s := range blockTexts(m) {
		if strings.HasPrefix(s, "*What changed*") {
			return s, i
		}
	}
	return "", -1
}

// TestChangedSection: an open incident's message says what changed just
// before, after the crash context and before the fields, with the undo
// command as inline code; a resolved or muted one does not.
func TestChangedSection(t *testing.T) {
	for _, tr := range []incident.Transition{incident.Firing, incident.Updated, incident.Repeat, incident.Resolved, incident.Silenced} {
		t.Run(string(tr), func(t *testing.T) {
			n := note(tr, 1, "5")
			n.Changes = rolledOut()
			n.Context = &incident.Context{Hint: "Exit code 1", Logs: &incident.Logs{Container: "app", Lines: []string{"panic: boom"}}}
			m := Render(n, "prod-eu", t0.Add(time.Hour))
			texts := blockTexts(m)
			got, at := changedText(m)
			if tr == incident.Resolved || tr == incident.Silenced {
				if at >= 0 {
					t.Fatalf("shown on %s: %q", tr, got)
				}
				return
			}
			want := "*What changed*\n• Rolled out 4 min before (revision 7, by argocd): image app: shop/checkout:1.8.2 → 1.9.0; env DB_POOL changed\n" +
				"Undo: `kubectl rollout undo deployment/checkout -n shop --to-revision=6`"
			if got != want {
				t.Fatalf("section\n%q\nwant\n%q", got, want)
			}
			if !strings.HasPrefix(texts[at+1], "field:") {
				t.Errorf("the fields do not follow the section: %q", texts[at+1])
			}
			if tr == incident.Firing && !strings.Contains(texts[at-1], "panic: boom") {
				t.Errorf("the log lines do not come just before the section: %q", texts[at-1])
			}
		})
	}
}

// TestNothingChangedPlainly: a section that rules a change out is one
// small line, without a title or an undo.
func TestNothingChangedPlainly(t *testing.T) {
	n := note(incident.Firing, 1, "5")
	n.Changes = &incident.Changes{Undo: "kubectl rollout undo deployment/x", Lines: []string{"No change to this workload in the last 30 min"}}
	m := Render(n, "", t0)
	if s, at := changedText(m); at >= 0 {
		t.Fatalf("a titled section: %q", s)
	}
	texts := strings.Join(blockTexts(m), "\n")
	if !strings.Contains(texts, "context:No change to this workload in the last 30 min") || strings.Contains(texts, "rollout undo") {
		t.Errorf("blocks:\n%s", texts)
	}
}

// TestChangedEscaped: names and annotations in the section (an image, a
// ConfigMap, a field manager, a change-cause, the undo command) cannot
// mention, link or open a code block; the undo command stays one inline
// code span. It fails if the section's escaping is removed.
func TestChangedEscaped(t *testing.T) {
	n := note(incident.Firing, 1, "5")
	n.Changes = oncalltest.HostileChanges(t0)
	got, at := changedText(Render(n, "", t0))
	if at < 0 {
		t.Fatal("no section")
	}
	if strings.ContainsAny(got, "<>") || !strings.Contains(got, "&lt;!channel&gt;") || !strings.Contains(got, "&lt;https://evil.example/|click here&gt;") {
		t.Errorf("markup left in %q", got)
	}
	if strings.Contains(got, "```") {
		t.Errorf("a code fence in %q", got)
	}
	_, undo, ok := strings.Cut(got, "\nUndo: ")
	if !ok || !strings.HasPrefix(undo, "`") || !strings.HasSuffix(undo, "`") || strings.Count(undo, "`") != 2 {
		t.Errorf("the undo command is not one inline code span: %q", undo)
	}
	// The plain line that rules a change out is escaped too.
	n.Changes = &incident.Changes{Lines: []string{"No change to " + oncalltest.HostileText}}
	for _, s := range blockTexts(Render(n, "", t0)) {
		if strings.HasPrefix(s, "context:No change") && (strings.ContainsAny(s[len("context:"):], "<>") || strings.Contains(s, "```")) {
			t.Errorf("markup left in %q", s)
		}
	}
}

// TestChangedWithinLimits: lines and an undo command of any size keep
// the section within Slack's limit, with the undo's code span closed and
// the lines cut first.
func TestChangedWithinLimits(t *testing.T) {
	n := note(incident.Firing, 1, "5")
	c := rolledOut()
	c.Undo = strings.Repeat("u`", 5000)
	c.Rollouts = make([]incident.Rollout, 40)
	c.Lines = nil
	for range 40 {
		c.Lines = append(c.Lines, strings.Repeat("<é>", 3000))
	}
	n.Changes = c
	m := Render(n, "", t0)
	checkMessage(t, m)
	got, _ := changedText(m)
	if utf8.RuneCountInString(got) > maxSection || !strings.HasSuffix(got, "… (truncated)`") || !strings.Contains(got, "\n• … and 31 more\n") {
		t.Errorf("section of %d characters ends %q", utf8.RuneCountInString(got), got[max(len(got)-80, 0):])
	}
}
