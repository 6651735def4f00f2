package webhook

import (
	"strings"
	"testing"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/sinks"
)

// TestBodyTemplates: body templates run on text/template with bodyFuncs;
// each renders exactly this for the sample notifications (firing at
// 2026-01-02 03:04:05 UTC, acknowledged three minutes later, resolved ten
// minutes later, a digest of one).
// Methods of the payload's values are callable, a time's among them.
func TestBodyTemplates(t *testing.T) {
	samples := map[incident.Transition]sinks.Payload{}
	for _, n := range SampleNotifications() {
		samples[n.Transition] = sinks.NewPayload(n)
	}
	for _, tt := range []struct {
		name, src  string
		transition incident.Transition
		want       string
	}{
		{"a time's method", `{{ json (.Time.Format "2006") }}`, incident.Firing, `"2026"`},
		{"a time's method, a number", `{{ .Incident.FirstSeen.Unix }}`, incident.Firing, `1767323045`},
		{"a method's result's method", `{{ json (.Time.Sub .Incident.FirstSeen).String }}`, incident.Resolved, `"10m0s"`},
		{"methods in a range over events", `[{{ with .Context }}{{ range .Events }}{{ json (.LastSeen.Format "15:04") }}{{ end }}{{ end }}]`, incident.Firing, `["03:04"]`},
		{"no context: with skips the events", `[{{ with .Context }}{{ range .Events }}{{ json .Reason }}{{ end }}{{ end }}]`, incident.Resolved, `[]`},
		// Range over an integer (Go 1.22) gives ints that truncate takes
		// as its length; truncate counts its … within the length.
		{"range over an integer", `[{{ range $i := 4 }}{{ if $i }},{{ end }}{{ json (truncate $i $.Object.Name) }}{{ end }}]`, incident.Firing, `["","…","a…","ap…"]`},
		{"json quotes awkward text", `{{ with .Facts }}{{ json .lastLogLine }}{{ else }}null{{ end }}`, incident.Firing, `"panic: \"config\" not found \\ C:\\path"`},
		{"join and upper", `{{ with .Context }}{{ json (join " | " .Logs.Lines | upper) }}{{ else }}null{{ end }}`, incident.Firing, `"{\"LEVEL\":\"ERROR\",\"MSG\":\"CONFIG \\\"DB\\\" MISSING\"} | PANIC: BOOM"`},
		{"lower", `{{ json (lower .Incident.Reason) }}`, incident.Firing, `"crashloopbackoff"`},
		{"default for an empty value", `[{{ json (default "no change" .Change) }}, {{ json (default "x" .Object.Kind) }}]`, incident.Firing, `["no change", "Pod"]`},
		{"color by severity", `[{{ color . }}, {{ json (colorHex .) }}]`, incident.Firing, `[14687834, "#e01e5a"]`},
		{"color of a resolution", `[{{ color . }}, {{ json (colorHex .) }}]`, incident.Resolved, `[3061373, "#2eb67d"]`},
		{"what changed, and its undo", `{{ with .Changes }}{"lines": {{ json .Lines }}, "undo": {{ json .Undo }}}{{ else }}null{{ end }}`, incident.Firing,
			`{"lines": ["Rolled out 4 min before (revision 7, by argocd): image api: shop/api:1.8.2 → 1.9.0; env DB_POOL changed; change-cause: deploy \"v1.9\" \\ ünïcødé"], "undo": "kubectl rollout undo deployment/api -n shop --to-revision=6"}`},
		{"no section: with skips it", `{{ with .Changes }}{{ json .Lines }}{{ else }}null{{ end }}`, incident.Resolved, `null`},
		{"who acknowledged it", `{{ with .Ack }}{"by": {{ json .By }}, "name": {{ json .Name }}, "at": {{ json (.At.Format "15:04") }}}{{ else }}null{{ end }}`, incident.Acknowledged,
			`{"by": "slack:U0123ABC", "name": "ana \"on call\" \\ ünïcødé", "at": "03:07"}`},
		{"nobody yet: with skips it", `{{ with .Ack }}{{ json .By }}{{ else }}null{{ end }}`, incident.Firing, `null`},
		{"a digest's incidents", `{"n": {{ len .Digest }}, "names": [{{ range $i, $d := .Digest }}{{ if $i }},{{ end }}{{ json $d.Object.Name }}{{ end }}]}`, incident.Digest, `{"n": 1, "names": ["api-7d9f-x2k4"]}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b, err := CompileBody(tt.src)
			if err != nil {
				t.Fatal(err)
			}
			got, err := b.Render(samples[tt.transition], "application/json")
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("rendered %s, want %s", got, tt.want)
			}
		})
	}
}

// TestBodyTemplateErrors: text/template's errors come back with the
// position within the template — missingkey=error makes a missing fact
// one — and a body past MaxBody is refused (the limited writer's error
// ends the execution).
func TestBodyTemplateErrors(t *testing.T) {
	for _, tt := range []struct {
		src       string
		line, col int
		msg       string
	}{
		{src: "{\n  \"a\": 1,\n  \"b\": {{ json .Facts.nosuch }}\n}", line: 3, col: 21, msg: `at <.Facts.nosuch>: map has no entry for key "nosuch" (rendering a sample firing notification)`},
		{src: "{\"a\": {{ .Time.Nosuch }}}", line: 1, col: 14, msg: "can't evaluate field Nosuch in type time.Time"},
		{src: "{\"a\": {{ truncate .Title .Title }}}", line: 1, col: 18, msg: "wrong type for value; expected int; got string"},
		{src: "{\n\"a\": {{ end }}}", line: 2, msg: "unexpected {{end}}"},
		{src: `{{ range $i := 100000 }}{{ json $.Text }}{{ end }}`, line: 1, msg: "renders more than 1048576 bytes; shorten it with truncate"},
		// What changed is absent from the sample resolution: a template
		// that does not take it with "with" fails at load, not at the
		// first resolution.
		{src: `{"a": {{ json .Changes.Lines }}}`, line: 1, col: 22, msg: "nil pointer evaluating *incident.Changes.Lines (rendering a sample resolved notification)"},
		// Nobody has acknowledged the sample firing: a template that
		// does not take ack with "with" fails at load.
		{src: `{"a": {{ json .Ack.By }}}`, line: 1, col: 18, msg: "nil pointer evaluating *sinks.PayloadAck.By (rendering a sample firing notification)"},
	} {
		_, err := CompileBody(tt.src)
		te, ok := err.(*TemplateError)
		if !ok {
			t.Errorf("%q: err = %v, want a *TemplateError", tt.src, err)
			continue
		}
		if te.Line != tt.line || te.Col != tt.col || !strings.Contains(te.Msg, tt.msg) {
			t.Errorf("%q: %d:%d %s; want %d:%d and %q", tt.src, te.Line, te.Col, te.Msg, tt.line, tt.col, tt.msg)
		}
	}
}
