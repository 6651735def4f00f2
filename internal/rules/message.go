package rules

import (
	"fmt"
	"io"
	"strings"
	"text/template"
	"unicode/utf8"

	"github.com/herald-k8s/herald/config"
	"github.com/herald-k8s/herald/internal/redact"
)

// Size bounds of a rendered message; longer ones are cut with a marker so
// that no sink receives an oversized message.
const (
	MaxTitle = 250
	MaxText  = 3000
)

// templateFuncs is everything a message template can call: pure string
// helpers, no file, environment or network access.
func templateFuncs() template.FuncMap {
	return template.FuncMap{
		"lower":     strings.ToLower,
		"upper":     strings.ToUpper,
		"trim":      strings.TrimSpace,
		"replace":   func(old, new, s string) string { return strings.ReplaceAll(s, old, new) },
		"contains":  func(sub, s string) bool { return strings.Contains(s, sub) },
		"hasPrefix": func(p, s string) bool { return strings.HasPrefix(s, p) },
		"hasSuffix": func(p, s string) bool { return strings.HasSuffix(s, p) },
		"join":      func(sep string, items []string) string { return strings.Join(items, sep) },
		"quote":     func(v any) string { return fmt.Sprintf("%q", fmt.Sprint(v)) },
		"trunc":     func(n int, s string) string { return truncate(s, n) },
		"default": func(def, v any) any {
			if v == nil || fmt.Sprint(v) == "" {
				return def
			}
			return v
		},
	}
}

// TemplateData is what message templates see; docs/rules.md lists it.
type TemplateData struct {
	Rule, Severity, Reason string
	Kind, Namespace, Name  string
	Container              string
	Facts                  map[string]string
	// Detail is the detector's one-sentence description.
	Detail string
	// Object is the whole object as JSON-shaped data, e.g.
	// {{ .Object.metadata.labels.team }}.
	Object map[string]any
}

type message struct {
	title, text, runbook *template.Template
	needsObject          bool
	source               string // the templates, for annotations.go
}

type templateError struct {
	field string
	err   error
}

func compileMessage(m config.Message, runbookURL string) (*message, []templateError) {
	msg := &message{needsObject: strings.Contains(m.Title+m.Text+runbookURL, ".Object"), source: joinSources(m.Title, m.Text, runbookURL)}
	var errs []templateError
	// missingkey=zero: a fact the finding lacks renders as empty. (A
	// missing key of .Object, whose values are interfaces, still renders
	// as "<no value>": text/template's zero of an interface is no value.)
	parse := func(field, src string) *template.Template {
		if src == "" {
			return nil
		}
		t, err := template.New(field).Option("missingkey=zero").Funcs(templateFuncs()).Parse(src)
		if err != nil {
			errs = append(errs, templateError{field: field, err: err})
			return nil
		}
		// A field TemplateData does not have fails on every finding,
		// at run time: say it now. (Other execution errors depend on
		// the data: a bare finding proves nothing of them.)
		if err := t.Execute(io.Discard, TemplateData{Facts: map[string]string{}, Object: map[string]any{}}); err != nil && strings.Contains(err.Error(), "can't evaluate field") {
			errs = append(errs, templateError{field: field, err: fmt.Errorf("%w (the fields: .Rule, .Severity, .Reason, .Kind, .Namespace, .Name, .Container, .Facts, .Detail, .Object)", err)})
			return nil
		}
		return t
	}
	msg.title = parse("title", m.Title)
	msg.text = parse("text", m.Text)
	msg.runbook = parse("runbookURL", runbookURL)
	return msg, errs
}

// MaxRunbookURL bounds a rendered runbook link.
const MaxRunbookURL = 500

// render makes a finding's title and text (and runbook link): the rule's
// templates where it has them, the default wording otherwise (also when a
// template fails, so a broken template never loses the notification).
// Each is redacted (a template may read the object) before it is cut to
// size (a cut could leave part of a secret no pattern knows).
func (m *message) render(f Finding, d Detection, in *input, red *redact.Redactor) (title, text, runbook string, err error) {
	title, text = defaultMessage(f, d)
	title, text = stripControls(red.Redact(title)), stripControls(red.Redact(text))
	if m.title == nil && m.text == nil && m.runbook == nil {
		return title, text, "", nil
	}
	data := TemplateData{
		Rule: f.Rule, Severity: f.Severity, Reason: f.Reason,
		Kind: f.Object.Kind, Namespace: f.Object.Namespace, Name: f.Object.Name,
		Container: f.Container, Facts: f.Facts, Detail: d.Detail,
	}
	if m.needsObject {
		if data.Object, err = in.objectMap(); err != nil {
			return title, text, "", err
		}
	}
	exec := func(t *template.Template, fallback string, limit int) string {
		if t == nil {
			return fallback
		}
		var b strings.Builder
		w := &limitedWriter{b: &b, left: 4 * limit}
		if e := t.Execute(w, data); e != nil {
			err = e
			return fallback
		}
		out := b.String()
		if w.cut {
			out = redact.DropCutWord(out) // no fragment of a secret
		}
		return truncate(stripControls(red.Redact(out)), limit)
	}
	return exec(m.title, title, MaxTitle), exec(m.text, text, MaxText), exec(m.runbook, "", MaxRunbookURL), err
}

// defaultMessage is the wording used when a rule has no templates.
func defaultMessage(f Finding, d Detection) (title, text string) {
	obj := f.Object.Name
	if f.Object.Namespace != "" {
		obj = f.Object.Namespace + "/" + f.Object.Name
	}
	title = fmt.Sprintf("%s: %s %s", f.Reason, f.Object.Kind, obj)
	if f.Container != "" {
		title += " container " + f.Container
	}
	text = title
	if d.Detail != "" {
		text += ": " + d.Detail
	}
	return truncate(title, MaxTitle), truncate(text, MaxText)
}

// truncate cuts s to at most n runes, marking the cut.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	const marker = "… (truncated)"
	keep := max(n-utf8.RuneCountInString(marker), 0)
	r := []rune(s)
	return string(r[:keep]) + marker
}

// limitedWriter stops a template from building an unbounded string.
type limitedWriter struct {
	b    *strings.Builder
	left int
	cut  bool // something was left out
}

func (w *limitedWriter) Write(p []byte) (int, error) {
	if len(p) > w.left {
		w.b.Write(p[:max(w.left, 0)])
		w.left, w.cut = 0, true
		return len(p), nil // keep executing; the result is cut anyway
	}
	w.left -= len(p)
	return w.b.Write(p)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
