package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/sinks"
)

// A templated body lets one webhook sink speak any chat tool's JSON
// (docs/sinks.md has templates for Discord, Google Chat, Mattermost and
// Rocket.Chat). The template's data is herald's payload (docs/payload.md).

// MaxBody bounds a rendered body: past it the notification is refused
// rather than sent cut in the middle of a JSON document.
const MaxBody = 1 << 20

// Body is a compiled body template.
type Body struct{ tmpl *template.Template }

// TemplateError is a template that does not parse, or fails on a sample
// notification; Line (1-based) and Col (0-based, 0 if unknown) are within
// the template's text.
type TemplateError struct {
	Line, Col int
	Msg       string
}

func (e *TemplateError) Error() string { return e.Msg }

// CompileBody parses src and renders it for sample notifications (a
// firing one with crash context and awkward text, a resolved one, a
// digest), so that a template that cannot work fails at load, with its
// position, instead of at the first alert.
func CompileBody(src string) (*Body, error) {
	// missingkey=error: a fact the payload lacks fails the sample
	// renders at load instead of printing "<no value>" into a chat.
	t, err := template.New("body").Option("missingkey=error").Funcs(bodyFuncs).Parse(src)
	if err != nil {
		return nil, templateError(err)
	}
	b := &Body{tmpl: t}
	for _, n := range SampleNotifications() {
		if _, err := b.Render(sinks.NewPayload(n), "application/json"); err != nil {
			var te *TemplateError
			if errors.As(err, &te) {
				te.Msg = fmt.Sprintf("%s (rendering a sample %s notification)", te.Msg, n.Transition)
				return nil, te
			}
			return nil, &TemplateError{Line: 1, Msg: fmt.Sprintf("%v (rendering a sample %s notification)", err, n.Transition)}
		}
	}
	return b, nil
}

// Render executes the template for p. A JSON body must be valid JSON (a
// value put in without json breaks it at the first quote in a message).
func (b *Body) Render(p sinks.Payload, contentType string) ([]byte, error) {
	var buf bytes.Buffer
	if err := b.tmpl.Execute(&limitWriter{w: &buf, left: MaxBody}, p); err != nil {
		if errors.Is(err, errTooLarge) {
			return nil, fmt.Errorf("the body template renders more than %d bytes; shorten it with truncate", MaxBody)
		}
		return nil, templateError(err)
	}
	if strings.Contains(contentType, "json") {
		var v any
		if err := json.Unmarshal(buf.Bytes(), &v); err != nil {
			return nil, fmt.Errorf("the body template does not render valid JSON (%v); put values in with json: \"text\": {{ json .Text }}", err)
		}
	}
	return buf.Bytes(), nil
}

// templatePosRE finds "template: body:LINE:COL:" or "template: body:LINE:"
// in text/template's errors.
var templatePosRE = regexp.MustCompile(`^template: body:(\d+)(?::(\d+))?: (.*)$`)

func templateError(err error) *TemplateError {
	msg := err.Error()
	m := templatePosRE.FindStringSubmatch(msg)
	if m == nil {
		return &TemplateError{Line: 1, Msg: msg}
	}
	line, _ := strconv.Atoi(m[1])
	col, _ := strconv.Atoi(m[2])
	return &TemplateError{Line: line, Col: col, Msg: strings.TrimPrefix(m[3], `executing "body" `)}
}

// bodyFuncs are the functions a body template can call.
var bodyFuncs = template.FuncMap{
	// json quotes any value as JSON: a string becomes a quoted, escaped
	// JSON string.
	"json": func(v any) (string, error) {
		b, err := json.Marshal(v)
		return string(b), err
	},
	// truncate keeps at most n characters (not bytes: never half a UTF-8
	// sequence), ending in … when it cut.
	"truncate": truncate,
	// truncateBytes keeps at most n bytes of UTF-8 (never half a
	// character), ending in … when it cut: for tools whose limit is in
	// bytes (ntfy's 4,096-byte message).
	"truncateBytes": sinks.TruncateBytes,
	// join joins strings (log lines) with sep.
	"join":  func(sep string, s []string) string { return strings.Join(s, sep) },
	"upper": strings.ToUpper,
	"lower": strings.ToLower,
	// default is value, or def when value is empty or blank (chat tools
	// refuse a blank title).
	"default": func(def, value string) string {
		if strings.TrimSpace(value) == "" {
			return def
		}
		return value
	},
	// slackEscape, markdownEscape and codeBlock keep text from the
	// cluster (titles, messages, names, log lines) from mentioning,
	// linking or formatting in a chat (docs/sinks.md): slackEscape for
	// Slack's mrkdwn and Google Chat (& < > as entities, ``` as '''),
	// markdownEscape for Markdown (Discord, Mattermost, Rocket.Chat),
	// codeBlock N s for log lines: a code block of at most N characters
	// that s cannot close, keeping the end of s. Escape first, then
	// truncate: a cut cannot undo an escape.
	"slackEscape":    func(s string) string { return sinks.SlackEscape(sinks.Unfence(s)) },
	"markdownEscape": sinks.MarkdownEscape,
	"codeBlock":      sinks.CodeBlock,
	// telegramText N s and telegramCode N s are Telegram's MarkdownV2
	// (escaped and cut in one step, counting as Telegram counts: see
	// sinks/telegram.go); no truncate around them.
	"telegramText": sinks.TelegramText,
	"telegramCode": sinks.TelegramCode,
	// color is a transition's or severity's colour as an RGB integer
	// (Discord's embeds), colorHex as #rrggbb (Rocket.Chat, Mattermost).
	"color":    func(p sinks.Payload) int { return color(p) },
	"colorHex": func(p sinks.Payload) string { return fmt.Sprintf("#%06x", color(p)) },
}

func truncate(n int, s string) string { return sinks.Truncate(n, s) }

func color(p sinks.Payload) int {
	switch {
	case p.Transition == string(incident.Resolved):
		return 0x2eb67d // green
	case p.Transition == string(incident.Silenced):
		return 0x9e9e9e // grey
	case p.Incident.Severity == "critical":
		return 0xe01e5a // red
	case p.Incident.Severity == "info":
		return 0x36c5f0 // blue
	default:
		return 0xecb22e // amber
	}
}

var errTooLarge = errors.New("too large")

type limitWriter struct {
	w    *bytes.Buffer
	left int
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if len(p) > l.left {
		return 0, errTooLarge
	}
	l.left -= len(p)
	return l.w.Write(p)
}

// SampleNotifications are what a body template is tried on at load: a
// crash loop firing with crash context, what changed just before and text
// that breaks naive JSON (quotes, backslashes, newlines, non-ASCII), its
// acknowledgement (who took it on), its resolution (with neither context
// nor what changed), and a digest. Tests render documented templates on them too.
func SampleNotifications() []incident.Notification {
	first := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	inc := incident.Incident{
		ID: "3f9a1c2b7d4e5f60-1", Occurrence: 1, Fingerprint: "3f9a1c2b7d4e5f60",
		Rule: "pod-crashloop", Severity: "critical", Reason: "CrashLoopBackOff",
		Container: "api",
		Facts:     map[string]string{"restartCount": "7", "exitCode": "1", "lastLogLine": `panic: "config" not found \ C:\path`},
		Title:     `shop/api-7d9f-x2k4: container "api" is crash-looping`,
		Text:      "Restarted 7 times; last exit code 1.\nLast line: panic: \"config\" not found — ünïcødé \\ tab\there",
		Sinks:     []string{"chat"}, FirstSeen: first, RunbookURL: "https://runbooks.example.com/CrashLoopBackOff",
	}
	inc.Object.Kind, inc.Object.Namespace, inc.Object.Name, inc.Object.UID = "Pod", "shop", "api-7d9f-x2k4", "0b6c6a8e-1f0e-4c1e-9a4e-3d2f1e0c9b8a"
	ctx := &incident.Context{
		Logs:   &incident.Logs{Container: "api", Previous: true, Lines: []string{`{"level":"error","msg":"config \"db\" missing"}`, "panic: boom"}},
		Events: []incident.Event{{Type: "Warning", Reason: "BackOff", Message: "Back-off restarting failed container", Count: 7, LastSeen: first}},
		Hint:   "Exit code 1 is the program's own error: read the log lines above.",
		Pod:    "api-7d9f-x2k4",
	}
	// What changed: the resolution has none (an object herald keeps no
	// record of), so a template must take it with "with".
	changes := &incident.Changes{Workload: "Deployment/api", Since: first.Add(-30 * time.Minute), At: first,
		Rollouts: []incident.Rollout{{Revision: "7", At: first.Add(-4 * time.Minute), By: "argocd", Known: true,
			Items: []string{"image api: shop/api:1.8.2 → 1.9.0", "env DB_POOL changed"}, ChangeCause: `deploy "v1.9" \ ünïcødé`}},
		Undo:  "kubectl rollout undo deployment/api -n shop --to-revision=6",
		Lines: []string{`Rolled out 4 min before (revision 7, by argocd): image api: shop/api:1.8.2 → 1.9.0; env DB_POOL changed; change-cause: deploy "v1.9" \ ünïcødé`},
	}
	firing := incident.Notification{Incident: inc, Transition: incident.Firing, Seq: 1, Time: first, Context: ctx, Changes: changes}
	// Acknowledged from Slack, by someone whose display name is theirs
	// to write: a template must take ack with "with" (no other sample
	// has one).
	acked := incident.Notification{Incident: inc, Transition: incident.Acknowledged, Seq: 2, Time: first.Add(3 * time.Minute), Changes: changes}
	acked.Incident.Ack = &incident.Ack{By: "slack:U0123ABC", Name: `ana "on call" \ ünïcødé`, At: acked.Time}
	resolved := incident.Notification{Incident: inc, Transition: incident.Resolved, Seq: 3, Time: first.Add(10 * time.Minute)}
	resolved.Incident.Ack = acked.Incident.Ack
	digest := incident.Notification{Incident: incident.Incident{Sinks: inc.Sinks}, Transition: incident.Digest, Time: first, Digest: []incident.Notification{firing}}
	return []incident.Notification{firing, acked, resolved, digest}
}
