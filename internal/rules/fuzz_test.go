package rules

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// fuzzRules exercise CEL and templates over whatever the object holds.
const fuzzRules = `
rules:
  - name: phase
    kind: Widget
    apiVersion: example.com/v1
    condition: 'has(object.status) && has(object.status.phase) && object.status.phase == "Failed"'
    sinks: [o]
    message:
      title: '{{ .Name | upper }} {{ .Object.status.phase }}'
      text: '{{ .Object.metadata.labels }} {{ index .Object "spec" | quote | trunc 40 }} {{ .Facts.x | default "none" }}'
  - name: any-true
    kind: Widget
    apiVersion: example.com/v1
    condition: 'object.exists(k, k == "spec") && string(object.spec).size() > 0'
    sinks: [o]
  - name: items
    kind: Widget
    apiVersion: example.com/v1
    condition: 'has(object.spec) && object.spec.items.all(i, i.ok == true)'
    sinks: [o]
sinks: [{name: o, stdout: {}}]
`

// FuzzEvaluate feeds arbitrary JSON objects to CEL conditions and message
// templates: evaluation may fail (and say so) but never panics, and every
// message stays within the size bounds.
func FuzzEvaluate(f *testing.F) {
	for _, seed := range []string{
		`{"metadata":{"name":"w","namespace":"n","uid":"u"},"status":{"phase":"Failed"},"spec":{"items":[{"ok":true}]}}`,
		`{"metadata":{"name":"w"},"status":{"phase":3},"spec":"x"}`,
		`{"metadata":{"name":"` + strings.Repeat("é", 300) + `","labels":{"a":"b"}},"status":{"phase":"Failed"},"spec":{"items":"no"}}`,
		`{"metadata":{},"spec":{"items":[1,2,{"ok":false}]}}`,
		`{"status":null}`,
	} {
		f.Add([]byte(seed))
	}
	set := compile(f, fuzzRules)
	now := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, data []byte) {
		var obj map[string]any
		if json.Unmarshal(data, &obj) != nil {
			return
		}
		obj["apiVersion"], obj["kind"] = "example.com/v1", "Widget"
		u := &unstructured.Unstructured{Object: obj}
		func() {
			// Accessors panic on malformed metadata; the dynamic informer
			// never hands such objects over, so skip them here.
			defer func() { recover() }()
			u.GetName()
			u.GetNamespace()
			u.GetUID()
			u.GetLabels()
		}()
		if _, ok := obj["metadata"].(map[string]any); !ok && obj["metadata"] != nil {
			return
		}
		findings, _ := set.Evaluate("Widget.v1.example.com", u, now, nil)
		for _, fd := range findings {
			if utf8.RuneCountInString(fd.Title) > MaxTitle || utf8.RuneCountInString(fd.Text) > MaxText {
				t.Errorf("message over the bounds: %d/%d runes", utf8.RuneCountInString(fd.Title), utf8.RuneCountInString(fd.Text))
			}
		}
	})
}
