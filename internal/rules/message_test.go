package rules

import (
	"strings"
	"testing"
)

// TestMessageTemplates: message templates run on text/template with
// herald's functions (templateFuncs) and missingkey=zero; each renders
// exactly this for the crash-looping pod "web" (namespace shop, container
// app, 5 restarts).
func TestMessageTemplates(t *testing.T) {
	for _, tt := range []struct{ name, title, want string }{
		{"fields and functions", `{{ .Reason | lower }} {{ .Namespace }}/{{ .Name | upper }} {{ quote .Container }}`, `crashloopbackoff shop/WEB "app"`},
		{"string helpers", `{{ replace "e" "E" .Name }} {{ hasPrefix "we" .Name }} {{ hasSuffix "x" .Name }} {{ contains "crash" .Rule }} {{ trim "  a b  " }}`, "wEb true false false a b"},
		// Range over an integer (Go 1.22) gives ints that trunc takes as
		// its length; trunc counts its marker within the length.
		{"range over an integer", `{{ range $i := 4 }}{{ trunc $i $.Name }}|{{ end }}`, "… (truncated)|… (truncated)|… (truncated)|web|"},
		{"range over an integer, both variables", `{{ range $i := 3 }}{{ if $i }}, {{ end }}{{ $.Name }}-{{ $i }}{{ end }}`, "web-0, web-1, web-2"},
		{"a fact", `{{ .Facts.restartCount }} restarts`, "5 restarts"},
		{"a missing fact is empty", `[{{ .Facts.nosuch }}]`, "[]"},
		{"default for a missing fact", `{{ .Facts.nosuch | default "none" }} {{ default "none" .Facts.restartCount }}`, "none 5"},
		{"object fields", `{{ .Object.metadata.name }} {{ .Object.metadata.uid }}`, "web u-1"},
		{"a missing key of .Object", `{{ .Object.metadata.nosuch }}`, "<no value>"},
		{"default for a missing key of .Object", `{{ .Object.metadata.nosuch | default "none" }}`, "none"},
		{"index and len", `{{ index .Object "metadata" "namespace" }} {{ len .Object.status.containerStatuses }}`, "shop 2"},
		{"range over object items", `{{ range .Object.status.containerStatuses }}{{ .name }}={{ .restartCount }} {{ end }}`, "app=5 sidecar=0 "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			set := compile(t, ruleYAML("Pod", "crashloop", ", message: {title: '"+tt.title+"'}"))
			got, errs := set.Evaluate("Pod", loadObject(t, "crashloop.yaml"), now, nil)
			if len(errs) > 0 || len(got) != 1 {
				t.Fatalf("findings %+v, errors %v", got, errs)
			}
			if got[0].Title != tt.want {
				t.Errorf("title = %q, want %q", got[0].Title, tt.want)
			}
		})
	}
}

// TestMessageTemplateFailure: a template that fails when it runs (on the
// data of this finding) gives
// the default wording (the notification is not lost) and an error saying
// where and why, in text/template's words.
func TestMessageTemplateFailure(t *testing.T) {
	for _, tt := range []struct{ message, want string }{
		// (A field TemplateData lacks fails on every finding: it is a
		// compile error, TestCompileErrors.) These fail on some data.
		{`{title: "{{ index .Object.metadata.labels \"team\" }}"}`, `template: title:1:3: executing "title" at <index .Object.metadata.labels "team">: error calling index: index of untyped nil`},
		{`{text: "{{ trunc .Name .Name }}"}`, `template: text:1:9: executing "text" at <.Name>: wrong type for value; expected int; got string`},
	} {
		set := compile(t, ruleYAML("Pod", "crashloop", ", message: "+tt.message))
		got, errs := set.Evaluate("Pod", loadObject(t, "crashloop.yaml"), now, nil)
		if len(got) != 1 || got[0].Title != "CrashLoopBackOff: Pod shop/web container app" ||
			!strings.HasPrefix(got[0].Text, "CrashLoopBackOff: Pod shop/web container app") {
			t.Fatalf("%s: findings %+v, want the default wording", tt.message, got)
		}
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), tt.want) {
			t.Errorf("%s: errors %v, want %q", tt.message, errs, tt.want)
		}
	}
}
