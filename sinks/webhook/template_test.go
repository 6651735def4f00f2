package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/sinks"
)

// The chat tools' documented required fields and limits, one checker
// each; a rendered body must pass its tool's.
var chatTools = map[string]func(doc map[string]any) []string{
	// Discord's Execute Webhook: content or embeds; content ≤ 2000; an
	// embed's title ≤ 256, description ≤ 4096, ≤ 25 fields with a name ≤
	// 256 and a value ≤ 1024, none empty; all of an embed's text ≤ 6000.
	"discord": func(doc map[string]any) (bad []string) {
		content, _ := doc["content"].(string)
		embeds, _ := doc["embeds"].([]any)
		if content == "" && len(embeds) == 0 {
			bad = append(bad, "needs content or embeds")
		}
		bad = append(bad, limit("content", content, 2000)...)
		if len(embeds) > 10 {
			bad = append(bad, "more than 10 embeds")
		}
		for _, e := range embeds {
			em, _ := e.(map[string]any)
			title, _ := em["title"].(string)
			desc, _ := em["description"].(string)
			total := chars(title) + chars(desc)
			bad = append(bad, limit("embed title", title, 256)...)
			bad = append(bad, limit("embed description", desc, 4096)...)
			fields, _ := em["fields"].([]any)
			if len(fields) > 25 {
				bad = append(bad, "more than 25 fields")
			}
			for _, f := range fields {
				fm, _ := f.(map[string]any)
				name, _ := fm["name"].(string)
				value, _ := fm["value"].(string)
				total += chars(name) + chars(value)
				bad = append(bad, required("field name", name, 256)...)
				bad = append(bad, required("field value", value, 1024)...)
			}
			if total > 6000 {
				bad = append(bad, fmt.Sprintf("embed text of %d characters is over 6000", total))
			}
			if _, ok := em["color"].(float64); !ok && em["color"] != nil {
				bad = append(bad, "color is not an integer")
			}
		}
		return bad
	},
	// Google Chat's incoming webhook: text (or cards); a message ≤ 32,000
	// bytes; herald keeps text within 4,096 characters, what Chat shows
	// without "show more".
	"google-chat": func(doc map[string]any) []string {
		text, _ := doc["text"].(string)
		return required("text", text, 4096)
	},
	// Mattermost's incoming webhook: text or attachments; a post ≤ 16,383
	// characters; every attachment needs its plain-text fallback.
	"mattermost": func(doc map[string]any) []string {
		bad := textOrAttachments(doc, 16383)
		atts, _ := doc["attachments"].([]any)
		for _, a := range atts {
			am, _ := a.(map[string]any)
			fallback, _ := am["fallback"].(string)
			bad = append(bad, required("attachment fallback", fallback, 16383)...)
		}
		return bad
	},
	// Rocket.Chat's incoming webhook: text or attachments; a message ≤
	// 5,000 characters (the server's default Message_MaxAllowedSize).
	"rocketchat": func(doc map[string]any) []string { return textOrAttachments(doc, 5000) },
}

func chars(s string) int { return utf8.RuneCountInString(s) }

func limit(what, s string, max int) []string {
	if chars(s) > max {
		return []string{fmt.Sprintf("%s of %d characters is over %d", what, chars(s), max)}
	}
	return nil
}

func required(what, s string, max int) []string {
	if strings.TrimSpace(s) == "" {
		return []string{what + " is empty"}
	}
	return limit(what, s, max)
}

// textOrAttachments checks a Slack-style incoming-webhook message
// (Mattermost, Rocket.Chat): text or attachments, at most max characters
// of text in all.
func textOrAttachments(doc map[string]any, max int) (bad []string) {
	text, _ := doc["text"].(string)
	atts, _ := doc["attachments"].([]any)
	if text == "" && len(atts) == 0 {
		bad = append(bad, "needs text or attachments")
	}
	total := chars(text)
	for _, a := range atts {
		am, _ := a.(map[string]any)
		total += textOf(am)
	}
	if total > max {
		bad = append(bad, fmt.Sprintf("message of %d characters is over %d", total, max))
	}
	return bad
}

// textOf counts an attachment's text: its text, title and fields.
func textOf(a map[string]any) int {
	n := 0
	for _, k := range []string{"text", "title", "pretext"} {
		s, _ := a[k].(string)
		n += chars(s)
	}
	fields, _ := a["fields"].([]any)
	for _, f := range fields {
		fm, _ := f.(map[string]any)
		t, _ := fm["title"].(string)
		v, _ := fm["value"].(string)
		n += chars(t) + chars(v)
	}
	return n
}

// documented returns the templates of examples/templates, by tool.
func documented(t testing.TB) map[string]string {
	files, err := filepath.Glob("../../examples/templates/*.tmpl")
	if err != nil || len(files) == 0 {
		t.Fatalf("no templates under examples/templates: %v", err)
	}
	out := map[string]string{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimSuffix(filepath.Base(f), ".tmpl")] = string(data)
	}
	return out
}

// hostile is a sample made as awkward as it gets: long, not UTF-8, full
// of JSON and Markdown metacharacters.
func hostile(title, text, line string, lines int) []incident.Notification {
	ns := SampleNotifications()
	for i := range ns {
		n := &ns[i]
		n.Incident.Title, n.Incident.Text = title, text
		n.Incident.Facts = map[string]string{"lastLogLine": line}
		if n.Context != nil {
			c := *n.Context
			c.Logs = &incident.Logs{Container: title}
			for range lines {
				c.Logs.Lines = append(c.Logs.Lines, line)
			}
			n.Context = &c
		}
		if n.Transition == incident.Digest {
			for range 50 {
				n.Digest = append(n.Digest, ns[0])
			}
		}
	}
	return ns
}

func checkRendered(t *testing.T, tool, tmpl string, ns []incident.Notification) {
	t.Helper()
	check, ok := chatTools[tool]
	if !ok {
		t.Fatalf("no checker for the documented template %s", tool)
	}
	b, err := CompileBody(tmpl)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	for _, n := range ns {
		body, err := b.Render(sinks.NewPayload(n), "application/json")
		if err != nil {
			t.Fatalf("%s, %s: %v", tool, n.Transition, err)
		}
		var doc map[string]any
		if err := json.Unmarshal(body, &doc); err != nil {
			t.Fatalf("%s, %s: %v", tool, n.Transition, err)
		}
		if bad := check(doc); len(bad) > 0 {
			t.Fatalf("%s, %s: %s would be refused: %v\n%s", tool, n.Transition, tool, bad, body)
		}
		checkSafe(t, tool, doc)
	}
}

// TestDocumentedTemplates: every template docs/sinks.md shows is the one
// in examples/templates, and renders, for every kind of notification and
// for hostile ones, a body its chat tool accepts (required fields, sizes)
// with the text escaped (checkSafe).
func TestDocumentedTemplates(t *testing.T) {
	docs, err := os.ReadFile("../../docs/sinks.md")
	if err != nil {
		t.Fatal(err)
	}
	for tool, tmpl := range documented(t) {
		t.Run(tool, func(t *testing.T) {
			if !strings.Contains(string(docs), tmpl) {
				t.Errorf("docs/sinks.md does not show examples/templates/%s.tmpl as it is", tool)
			}
			checkRendered(t, tool, tmpl, SampleNotifications())
			checkRendered(t, tool, tmpl, hostile(strings.Repeat("ü\xff\"*_`", 2000), strings.Repeat("\"\\\n\t\x00{{", 5000), strings.Repeat("€", 3000), 300))
			// Emoji: two UTF-16 units each, as Telegram counts; four
			// bytes each, as ntfy's limit counts.
			checkRendered(t, tool, tmpl, hostile(strings.Repeat("🔥@", 3000), strings.Repeat("😀", 5000), strings.Repeat("🔥", 3000), 300))
		})
	}
}

// FuzzDocumentedTemplates: whatever the facts, every documented template
// renders a body its chat tool accepts, in which the facts mention, link
// and format nothing (checkSafe).
func FuzzDocumentedTemplates(f *testing.F) {
	f.Add("shop/api: crash-looping", "Restarted 5 times", "panic: boom", 3)
	f.Add(strings.Repeat("ü\xff*", 1000), strings.Repeat("\"\\\n", 3000), strings.Repeat("`", 5000), 100)
	templates := documented(f)
	f.Fuzz(func(t *testing.T, title, text, line string, lines int) {
		for tool, tmpl := range templates {
			checkRendered(t, tool, tmpl, hostile(title, text, line, min(max(lines, 0), 200)))
		}
	})
}

// TestTemplateErrorsArePositioned: a template that does not parse, or
// that fails on a sample, or that renders invalid JSON, fails at load
// with a line and column within the template.
func TestTemplateErrorsArePositioned(t *testing.T) {
	for _, tt := range []struct {
		src       string
		line, col int
		msg       string
	}{
		{src: "{\"text\": {{ json .Title }\n}", line: 1, msg: "unexpected"},
		{src: "{\n  \"text\": {{ json .Titel }}\n}", line: 2, col: 18, msg: "Titel"},
		{src: "{\"text\": {{ nosuch .Title }}}", line: 1, msg: `"nosuch" not defined`},
		{src: "{\"text\": \"{{ .Text }}\"}", line: 1, msg: "valid JSON"},
	} {
		_, err := CompileBody(tt.src)
		te, ok := err.(*TemplateError)
		if !ok {
			t.Errorf("%q: err = %v, want a *TemplateError", tt.src, err)
			continue
		}
		if te.Line != tt.line || (tt.col > 0 && te.Col != tt.col) || !strings.Contains(te.Msg, tt.msg) {
			t.Errorf("%q: %d:%d %s; want %d:%d and %q", tt.src, te.Line, te.Col, te.Msg, tt.line, tt.col, tt.msg)
		}
	}
}

// TestTemplatedBodyIsSent: a webhook with a body template posts what it
// renders, with its content type, still signed and with its idempotency
// key.
func TestTemplatedBodyIsSent(t *testing.T) {
	got := make(chan *http.Request, 1)
	bodies := make(chan []byte, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- r
		bodies <- b
	}))
	defer srv.Close()
	s, err := New(Options{Name: "chat", URL: srv.URL, Timeout: 5 * time.Second, Body: documented(t)["google-chat"], Secrets: []string{"whsec_c2VjcmV0c2VjcmV0c2VjcmV0"}})
	if err != nil {
		t.Fatal(err)
	}
	n := SampleNotifications()[0]
	if err := s.Send(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	r, body := <-got, <-bodies
	var doc struct{ Text string }
	if err := json.Unmarshal(body, &doc); err != nil || !strings.HasPrefix(doc.Text, "*"+n.Incident.Title+"*\n") || !strings.Contains(doc.Text, "panic: boom") {
		t.Errorf("body = %s (%v)", body, err)
	}
	if r.Header.Get("Content-Type") != "application/json" || r.Header.Get("webhook-id") != n.ID() || r.Header.Get("webhook-signature") == "" {
		t.Errorf("headers = %v", r.Header)
	}
}

func BenchmarkRenderDocumented(b *testing.B) {
	templates := documented(b)
	n := hostile("shop/api: crash-looping", strings.Repeat("Restarted 5 times. ", 200), strings.Repeat("x", 200), 100)[0]
	p := sinks.NewPayload(n)
	for tool, tmpl := range templates {
		body, err := CompileBody(tmpl)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(tool, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := body.Render(p, "application/json"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
