package teams

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/oncalltest"
	"github.com/herald-k8s/herald/sinks"
)

func notification(tr incident.Transition) incident.Notification {
	inc := incident.Incident{
		ID: "a1b2c3d4e5f60718-1", Rule: "pod-crashloop", Severity: "critical", Reason: "CrashLoopBackOff",
		Container: "api", Title: "shop/api-1: container api is crash-looping", Text: "Restarted 5 times; last exit code 1.",
		Sinks: []string{"teams"}, FirstSeen: time.Now(), Facts: map[string]string{"restartCount": "5", "exitCode": "1"},
		RunbookURL: "https://runbooks.example.com/CrashLoopBackOff",
	}
	inc.Object.Kind, inc.Object.Namespace, inc.Object.Name = "Pod", "shop", "api-1"
	return incident.Notification{Incident: inc, Transition: tr, Seq: 1, Time: time.Now()}
}

func newSink(t *testing.T, url string) *Sink {
	s, err := New(Options{Name: "teams", URL: url, ClusterName: "prod-eu", Timeout: 5 * time.Second, UserAgent: "herald/test"})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestCardsAcceptedByWorkflows: every kind of notification is a valid
// Adaptive Card message within Teams' limit, and the crash loop's card
// says what, where, and why (log lines, events, hint, runbook).
func TestCardsAcceptedByWorkflows(t *testing.T) {
	tm := oncalltest.NewTeams(t)
	s := newSink(t, tm.URL)
	firing := notification(incident.Firing)
	firing.Context = &incident.Context{
		Hint: "Exit code 1 is the program's own error.", Logs: &incident.Logs{Container: "api", Lines: []string{"starting", "panic: *boom*"}},
		Events: []incident.Event{{Type: "Warning", Reason: "BackOff", Message: "Back-off restarting failed container", Count: 5}},
	}
	digest := incident.Notification{Transition: incident.Digest, Time: time.Now()}
	for i := range 40 {
		d := notification(incident.Firing)
		d.Incident.Title = fmt.Sprintf("shop/api-%d: crash-looping", i)
		digest.Digest = append(digest.Digest, d)
	}
	for _, n := range []incident.Notification{firing, notification(incident.Updated), notification(incident.Silenced), notification(incident.Resolved), digest} {
		if err := s.Send(context.Background(), n); err != nil {
			t.Fatalf("%s: %v (%v)", n.Transition, err, tm.Invalid())
		}
	}
	cards := tm.Cards()
	if len(cards) != 5 {
		t.Fatalf("%d cards accepted, want 5", len(cards))
	}
	text := fmt.Sprint(cards[0])
	for _, want := range []string{"prod-eu · shop/api-1: CrashLoopBackOff", firing.Incident.Text, `panic: \*boom\*`, "BackOff", "Exit code 1", "title:Restarts value:5", "Runbook", "https://runbooks.example.com/CrashLoopBackOff"} {
		if !strings.Contains(text, want) {
			t.Errorf("the crash loop's card does not say %q: %s", want, text)
		}
	}
	if !strings.Contains(fmt.Sprint(cards[3]), "Resolved after") {
		t.Errorf("the resolution's card does not say so: %v", cards[3])
	}
	if d := fmt.Sprint(cards[4]); !strings.Contains(d, "herald started: 40 open incidents") || !strings.Contains(d, "… and 10 more") {
		t.Errorf("the digest's card = %s", d)
	}
}

// TestErrorsHideTheSignature: a Workflows URL's sig is a secret; a
// rejected post says HTTP 400 without it, and is not retried.
func TestErrorsHideTheSignature(t *testing.T) {
	tm := oncalltest.NewTeams(t)
	err := newSink(t, strings.Replace(tm.URL, "SECRET-SIGNATURE", "WRONG-SIGNATURE", 1)).Send(context.Background(), notification(incident.Firing))
	if err == nil || !strings.Contains(err.Error(), "HTTP 400") {
		t.Fatalf("err = %v, want HTTP 400", err)
	}
	if strings.Contains(err.Error(), "SIGNATURE") || strings.Contains(err.Error(), "workflows") {
		t.Errorf("the error shows the URL's secret parts: %v", err)
	}
	if retry, _ := sinks.IsRetryable(err); retry {
		t.Errorf("a 400 would be retried")
	}
}

// FuzzRender: whatever the facts and the "What changed" section (huge,
// not UTF-8, full of Markdown and JSON metacharacters), the message is a
// valid card within 28 KB.
func FuzzRender(f *testing.F) {
	f.Add("shop/api: crash-looping", "Restarted 5 times", "panic: boom", "OOMKilled", 3, 40)
	f.Add(strings.Repeat("ü\xff*_[", 500), strings.Repeat("\"\\\n\t\x00", 3000), strings.Repeat("€", 20000), strings.Repeat("#", 5000), 100, 3000)
	f.Fuzz(func(t *testing.T, title, text, logLine, event string, lines, digest int) {
		n := notification(incident.Firing)
		n.Incident.Title, n.Incident.Text, n.Change = title, text, event
		n.Incident.Facts = map[string]string{"restartCount": text, "exitCode": title}
		n.Incident.RunbookURL = "https://runbooks.example.com/" + event
		n.Context = &incident.Context{Hint: text, Unavailable: event, Logs: &incident.Logs{Container: title}}
		for range min(max(lines, 0), 200) {
			n.Context.Logs.Lines = append(n.Context.Logs.Lines, logLine)
		}
		for range 30 {
			n.Context.Events = append(n.Context.Events, incident.Event{Type: "Warning", Reason: event, Message: text})
		}
		n.Changes = &incident.Changes{Rollouts: make([]incident.Rollout, 1), Undo: title + event, Lines: n.Context.Logs.Lines,
			Objects: []incident.ObjectChange{{Kind: event, Name: title}}}
		for _, m := range []incident.Notification{n, {Transition: incident.Digest, Digest: repeat(n, min(max(digest, 0), 300))}} {
			body, err := Render(m, title, m.Time)
			if err != nil {
				t.Fatal(err)
			}
			if _, problems := oncalltest.CheckTeamsMessage(body); len(problems) > 0 {
				t.Fatalf("%s: %v", m.Transition, problems)
			}
		}
	})
}

func repeat(n incident.Notification, k int) []incident.Notification {
	out := make([]incident.Notification, k)
	for i := range out {
		out[i] = n
	}
	return out
}

// TestEmptyTextsMakeNoEmptyBlocks: Teams refuses a TextBlock without
// text; a notification with no title or text still makes a valid card.
func TestEmptyTextsMakeNoEmptyBlocks(t *testing.T) {
	n := notification(incident.Firing)
	n.Incident.Title, n.Incident.Text, n.Incident.Reason = "", " ", ""
	n.Context = &incident.Context{Logs: &incident.Logs{Lines: []string{""}}}
	for _, m := range []incident.Notification{n, {Transition: incident.Digest}} {
		body, err := Render(m, "", m.Time)
		if err != nil {
			t.Fatal(err)
		}
		if _, problems := oncalltest.CheckTeamsMessage(body); len(problems) > 0 {
			t.Errorf("%s: %v", m.Transition, problems)
		}
	}
}
