package slack

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/herald-k8s/herald/internal/incident"
)

// FuzzRender: whatever the object names, messages, facts and the "What
// changed" section hold (sizes, markup, invalid UTF-8), a message and a
// digest stay within Slack's Block Kit limits and marshal to JSON.
func FuzzRender(f *testing.F) {
	f.Add("shop", "checkout-7d9f8b6c5-x2x9q", "app", "CrashLoopBackOff: <b>&</b>", "panic: connect to db", "prod-eu", 3)
	f.Add("", strings.Repeat("n", 300), "", strings.Repeat("é", 4000), strings.Repeat("`", 5000), strings.Repeat("c", 200), 60)
	f.Add("\u202e\u0000ns", "\xff\xfe", "\U0001F600", "title\nwith\nlines", "\x00", "", 1)
	f.Fuzz(func(t *testing.T, namespace, name, container, title, last, cluster string, count int) {
		n := note(incident.Firing, 1, "7")
		n.Incident.Object.Namespace, n.Incident.Object.Name, n.Incident.Container = namespace, name, container
		n.Incident.Title, n.Incident.Text, n.Incident.Facts["lastMessage"] = title, title+last, last
		checkMessage(t, Render(n, cluster, t0))
		// Crash context of hostile lines: one huge, many, odd runes.
		lines := []string{last, title, strings.Repeat(container, 50)}
		for range count {
			lines = append(lines, name)
		}
		n.Context = &incident.Context{Hint: title, Pod: namespace + "/" + name, Unavailable: last,
			Logs:   &incident.Logs{Container: container, Previous: true, Lines: lines, Truncated: count%2 == 0},
			Events: []incident.Event{{Type: "Warning", Reason: title, Message: last, Count: int32(count)}, {Type: "Normal", Reason: name, Message: title}},
			Node:   &incident.Node{Name: cluster, Conditions: []string{title}}}
		// What changed, of as many hostile lines, and an undo of any size.
		n.Changes = &incident.Changes{Rollouts: make([]incident.Rollout, 1), Undo: name + last, Lines: lines}
		checkMessage(t, Render(n, cluster, t0))
		n.Changes.Rollouts = nil // nothing changed: the plain line
		checkMessage(t, Render(n, cluster, t0))
		count = min(max(count, 1), 200)
		digest := make([]incident.Notification, count)
		for i := range digest {
			digest[i] = n
		}
		checkMessage(t, RenderDigest(digest, cluster))
	})
}

func checkMessage(t *testing.T, m Message) {
	t.Helper()
	if len(m.Blocks) > maxBlocks {
		t.Fatalf("%d blocks, Slack takes %d", len(m.Blocks), maxBlocks)
	}
	if n := utf8.RuneCountInString(m.Text); n > maxSection {
		t.Fatalf("fallback text of %d characters", n)
	}
	text := func(o *slack.TextBlockObject, limit int, what string) {
		if o != nil && utf8.RuneCountInString(o.Text) > limit {
			t.Fatalf("%s of %d characters, Slack takes %d", what, utf8.RuneCountInString(o.Text), limit)
		}
	}
	for _, b := range m.Blocks {
		switch b := b.(type) {
		case *slack.HeaderBlock:
			text(b.Text, maxHeader, "header")
		case *slack.SectionBlock:
			text(b.Text, maxSection, "section")
			if len(b.Fields) > maxFields {
				t.Fatalf("%d fields", len(b.Fields))
			}
			for _, f := range b.Fields {
				text(f, maxField, "field")
			}
		case *slack.ContextBlock:
			for _, e := range b.ContextElements.Elements {
				if o, ok := e.(*slack.TextBlockObject); ok {
					text(o, maxSection, "context")
				}
			}
		}
	}
	if _, err := json.Marshal(m.Blocks); err != nil {
		t.Fatal(err)
	}
}
