package tmpl

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"
	"text/template"
	"time"
	"unicode/utf8"
)

// The tests hold this package to text/template: the same template on the
// same data renders the same text, or fails in both, with the same
// message. (Test binaries may link text/template; herald's binary does
// not.)

type inner struct {
	Name  string
	Count int
	Tags  []string
	Next  *inner
}

type payload struct {
	Title   string
	Text    string
	Seq     int
	Big     uint64
	Ratio   float64
	Flag    bool
	Empty   string
	Lines   []string
	NoLines []string
	Facts   map[string]string
	Object  map[string]any
	Counts  map[int]string
	Inner   inner
	Ptr     *inner
	NilPtr  *inner
	Any     any
	NilAny  any
	Time    time.Time
	TimePtr *time.Time
	Func    func(string) string
	Ch      chan int
	Bytes   []byte
	private string
}

func sample() payload {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return payload{
		Title: `api "crash" <loop> & more`, Text: "line one\nline two\ttab ünï",
		Seq: 7, Big: 1 << 40, Ratio: 0.25, Flag: true,
		Lines: []string{"first", "second", "third"},
		Facts: map[string]string{"restartCount": "7", "exitCode": "1", "b": "x", "a": "y"},
		Object: map[string]any{
			"metadata": map[string]any{"name": "api-1", "labels": map[string]any{"team": "shop", "tier": "web"}},
			"spec":     map[string]any{"replicas": 3, "containers": []any{map[string]any{"name": "api"}, map[string]any{"name": "sidecar"}}},
			"nothing":  nil,
		},
		Counts:  map[int]string{3: "c", 1: "a", 2: "b"},
		Inner:   inner{Name: "in", Count: 2, Tags: []string{"x", "y"}, Next: &inner{Name: "next"}},
		Ptr:     &inner{Name: "ptr", Count: -1},
		Any:     map[string]any{"k": "v"},
		Time:    at,
		TimePtr: &at,
		Func:    strings.ToUpper,
		Bytes:   []byte("hi"),
		private: "secret",
	}
}

func testFuncs() (template.FuncMap, FuncMap) {
	fs := map[string]any{
		"lower": strings.ToLower,
		"join":  func(sep string, s []string) string { return strings.Join(s, sep) },
		"trunc": func(n int, s string) string {
			if utf8.RuneCountInString(s) <= n {
				return s
			}
			return string([]rune(s)[:n])
		},
		"default": func(def, v any) any {
			if v == nil || fmt.Sprint(v) == "" {
				return def
			}
			return v
		},
		"fail":  func() (string, error) { return "", errors.New("it failed") },
		"boom":  func() string { panic("boom") },
		"pair":  func(a, b string) string { return a + "|" + b },
		"count": func(xs ...string) int { return len(xs) },
	}
	return template.FuncMap(fs), FuncMap(fs)
}

// corpus covers the language: text, fields, maps, chains, variables,
// pipelines, every built-in, control flow, define/template/block,
// whitespace trimming, and failures.
var corpus = []string{
	``, `plain text`, `{{/* a comment */}}x`, `{{- " trimmed " -}}  y  `, "a  {{- .Title -}}  b",
	`{{.Title}}`, `{{.Text}}`, `{{.Seq}}`, `{{.Big}}`, `{{.Ratio}}`, `{{.Flag}}`, `{{.Empty}}`,
	`{{.Lines}}`, `{{.NoLines}}`, `{{.Facts}}`, `{{.Counts}}`, `{{.Bytes}}`, `{{.}}`,
	`{{.Facts.restartCount}}`, `{{.Facts.missing}}`, `{{.Facts.missing.deeper}}`,
	`{{.Object.metadata.name}}`, `{{.Object.metadata.labels.team}}`, `{{.Object.missing}}`,
	`{{.Object.missing.deeper}}`, `{{.Object.nothing}}`, `{{.Object.nothing.x}}`, `{{.Object.spec.replicas}}`,
	`{{.Inner.Name}}`, `{{.Inner.Next.Name}}`, `{{.Inner.Next.Next}}`, `{{.Inner.Next.Next.Name}}`,
	`{{.Ptr.Name}}`, `{{.Ptr}}`, `{{.NilPtr}}`, `{{.NilPtr.Name}}`, `{{.NilPtr.Nope}}`,
	`{{.Any}}`, `{{.Any.k}}`, `{{.NilAny}}`, `{{.NilAny.x}}`, `{{.Nope}}`, `{{.private}}`,
	`{{.Title.Len}}`, `{{.Seq.x}}`, `{{.Lines.x}}`, `{{.Facts.restartCount "arg"}}`, `{{.Title "arg"}}`,
	`{{.Time}}`, `{{.TimePtr}}`, `{{.Time.Year}}`, `{{.Time.Format "2006-01-02T15:04"}}`,
	`{{.TimePtr.Format "Jan 2"}}`, `{{.Time.Unix}}`, `{{.Time.UTC.Month}}`, `{{.Time.Format}}`,
	`{{.Time.Format 3}}`, `{{.Time.Weekday}} {{.Time.YearDay}} {{.Time.IsZero}}`,
	`{{"\"quoted\""}} {{'a'}} {{1.5}} {{0x1F}} {{1e3}} {{-3}} {{true}} {{2i}}`, `{{99999999999999999999}}`,
	`{{nil}}`, `{{.Title 1}}`, `{{1 2}}`,
	`{{$x := .Seq}}{{$x}}`, `{{$x := 1}}{{$x = 2}}{{$x}}`, `{{$}}`, `{{$.Title}}`, `{{$nope}}`,
	`{{with $x := .Inner}}{{$x.Name}}{{end}}{{$x}}`,
	`{{if .Flag}}yes{{else}}no{{end}}`, `{{if .Empty}}yes{{else if .Seq}}seq{{else}}no{{end}}`,
	`{{if .NoLines}}a{{end}}`, `{{if .Object.missing}}a{{else}}b{{end}}`, `{{if .Inner}}struct{{end}}`,
	`{{if .Ch}}ch{{else}}no ch{{end}}`, `{{if .Func}}f{{end}}`,
	`{{with .Inner}}{{.Name}}/{{$.Title}}{{end}}`, `{{with .Empty}}x{{else}}empty{{end}}`,
	`{{with .Empty}}x{{else with .Title}}{{.}}{{end}}`, `{{with .NilPtr}}x{{else}}nil{{end}}`,
	`{{range .Lines}}[{{.}}]{{end}}`, `{{range $i, $l := .Lines}}{{$i}}={{$l}};{{end}}`,
	`{{range $l := .Lines}}{{$l}}{{end}}`, `{{range .NoLines}}x{{else}}none{{end}}`,
	`{{range $k, $v := .Facts}}{{$k}}:{{$v}},{{end}}`, `{{range .Counts}}{{.}}{{end}}`,
	`{{range $k, $v := .Counts}}{{$k}}{{$v}}{{end}}`, `{{range 3}}{{.}}{{end}}`, `{{range $i := 4}}{{$i}}{{end}}`,
	`{{range $i, $j := 4}}{{end}}`, `{{range .Object.missing}}x{{else}}nothing{{end}}`, `{{range .Seq}}{{.}}{{end}}`,
	`{{range .Title}}x{{end}}`, `{{range .Lines}}{{if eq . "second"}}{{break}}{{end}}{{.}}{{end}}`,
	`{{range .Lines}}{{if eq . "second"}}{{continue}}{{end}}{{.}}{{end}}`,
	`{{$n := 0}}{{range .Lines}}{{$n = len .}}{{end}}{{$n}}`, `{{range $i, $x := .Object.spec.containers}}{{$i}}{{$x.name}}{{end}}`,
	`{{$e := ""}}{{range $e = .Lines}}{{end}}{{$e}}`, `{{$i := 0}}{{$e := ""}}{{range $i, $e = .Lines}}{{end}}{{$i}}{{$e}}`,
	`{{.Title | lower}}`, `{{.Lines | join ", "}}`, `{{"abcdef" | trunc 3}}`, `{{.Empty | default "none"}}`,
	`{{.Object.missing | default "none"}}`, `{{.Facts.missing | default "none"}}`, `{{default "d" .NilAny}}`,
	`{{pair "a" "b"}}`, `{{"b" | pair "a"}}`, `{{pair "a"}}`, `{{pair 1 "b"}}`, `{{count}}`, `{{count "a" "b"}}`,
	`{{"c" | count "a" "b"}}`, `{{fail}}`, `{{boom}}`, `{{nosuch}}`, `{{lower}}`, `{{lower .Seq}}`, `{{lower .NilPtr}}`,
	`{{(lower .Title)}}`, `{{(.Inner).Name}}`, `{{(index .Object "metadata").name}}`, `{{(nil).x}}`, `{{(1) 2}}`,
	`{{and 1 0 2}}`, `{{and 1 2}}`, `{{or 0 "" "x"}}`, `{{or 0 ""}}`, `{{and .Flag .NilPtr.Name}}`, `{{or .Flag .NilPtr.Name}}`,
	`{{or .Object.missing "fallback"}}`, `{{and .Object.missing "x"}}`, `{{not .Flag}}`, `{{not .Object.missing}}`, `{{0 | and 1}}`,
	`{{len .Lines}}`, `{{len .Title}}`, `{{len .Facts}}`, `{{len .Seq}}`, `{{len .NilPtr}}`, `{{len .Object.missing}}`, `{{len .Object.spec.containers}}`,
	`{{index .Lines 1}}`, `{{index .Lines 3}}`, `{{index .Lines -1}}`, `{{index .Facts "exitCode"}}`, `{{index .Facts "nope"}}`,
	`{{index .Object "metadata" "labels" "team"}}`, `{{index .Object "missing"}}`, `{{index .Object.missing "x"}}`,
	`{{index .Counts 2}}`, `{{index .Counts "x"}}`, `{{index .Title 0}}`, `{{index .Seq 0}}`, `{{index .Lines "a"}}`, `{{index .Lines}}`,
	`{{slice .Title 1 3}}`, `{{slice .Lines 1}}`, `{{slice .Lines 1 2 3}}`, `{{slice .Lines 2 1}}`, `{{slice .Title 1 2 3}}`, `{{slice .Seq 1}}`,
	`{{print "a" 1 .Flag}}`, `{{print .Object.missing}}`, `{{println "a" "b"}}`, `{{printf "%s-%d-%v" .Title .Seq .Lines}}`,
	`{{printf "%q" .Text}}`, `{{printf "%v" .NilPtr}}`, `{{printf "%v" nil}}`, `{{printf .Seq}}`, `{{printf "%d" .Object.spec.replicas}}`,
	`{{html .Title}}`, `{{html "a\u0000b" 1}}`, `{{js .Title}}`, `{{js .Text}}`, `{{js "a=b\u2028c"}}`, `{{urlquery .Title}}`, `{{urlquery "a b" "c"}}`,
	`{{call .Func "x"}}`, `{{call .Func}}`, `{{call .Func 1}}`, `{{call .Title}}`, `{{call .NilAny}}`,
	`{{eq .Seq 7}}`, `{{eq .Seq 1 2 7}}`, `{{eq .Title "x"}}`, `{{eq .Seq "7"}}`, `{{eq .Big 1099511627776}}`, `{{eq 1 .Big}}`,
	`{{eq .Object.missing .Object.other}}`, `{{eq .Object.missing "x"}}`, `{{eq .NilPtr .NilPtr}}`, `{{eq .Inner .Inner}}`,
	`{{eq .Lines .Lines}}`, `{{eq .Flag true}}`, `{{eq .Ratio 0.25}}`, `{{eq .Seq}}`, `{{eq .Time .Time}}`, `{{eq .Ptr .NilPtr}}`,
	`{{ne .Seq 7}}`, `{{ne .Title "y"}}`, `{{lt .Seq 8}}`, `{{lt .Title "b"}}`, `{{lt .Flag true}}`, `{{lt -1 .Big}}`, `{{lt .Big -1}}`,
	`{{le 7 .Seq}}`, `{{gt .Ratio 0.1}}`, `{{ge "a" "b"}}`, `{{lt .Seq "x"}}`, `{{lt .Lines .Lines}}`, `{{gt 2i 1i}}`,
	`{{define "item"}}<{{.}}>{{end}}{{range .Lines}}{{template "item" .}}{{end}}`,
	`{{define "r"}}{{if .}}{{template "r" .Next}}{{.Name}}{{end}}{{end}}{{template "r" .Inner}}`,
	`{{template "nope"}}`, `{{block "b" .Title}}[{{.}}]{{end}}`, `{{define "x"}}{{$}}{{end}}{{template "x" .Seq}}`,
	`{{define "only"}}x{{end}}`, `{{.Ch}}`, `{{.Func}}`, `{{.Object.spec}}`, `{{.Inner}}`,
}

type cappedWriter struct {
	buf  bytes.Buffer
	left int
}

var errCapped = errors.New("output limit")

func (w *cappedWriter) Write(p []byte) (int, error) {
	if len(p) > w.left {
		return 0, errCapped
	}
	w.left -= len(p)
	return w.buf.Write(p)
}

var missingOptions = []struct {
	option string
	ours   MissingKey
}{{"missingkey=default", MissingInvalid}, {"missingkey=zero", MissingZero}, {"missingkey=error", MissingError}}

// render runs src through both engines; it returns both outcomes.
func render(src string, data any, option string, missing MissingKey) (want, got string) {
	theirFuncs, ourFuncs := testFuncs()
	outcome := func(w *cappedWriter, err error) string {
		if err != nil {
			return "ERROR " + err.Error()
		}
		return w.buf.String()
	}
	var tw, ow = &cappedWriter{left: 1 << 16}, &cappedWriter{left: 1 << 16}
	theirs, terr := template.New("t").Option(option).Funcs(theirFuncs).Parse(src)
	ours, oerr := Parse("t", src, ourFuncs, missing)
	if terr != nil || oerr != nil {
		return outcome(tw, terr), outcome(ow, oerr)
	}
	return outcome(tw, theirs.Execute(tw, data)), outcome(ow, ours.Execute(ow, data))
}

// clearerReasons are the failures this package words differently
// (text/template leaks a reflect panic's text): the
// same failure at the same place, with a reason matching ours.
var clearerReasons = []struct{ theirs, ours *regexp.Regexp }{
	{regexp.MustCompile(`^error calling len: reflect: call of reflect.Value.Type on zero Value$`),
		regexp.MustCompile(`^error calling len: len of untyped nil$`)},
	{regexp.MustCompile(`^error calling index: reflect: (slice|string) index out of range$`),
		regexp.MustCompile(`^error calling index: index out of range: \d+$`)},
}

// sameOutcome: the same text, or the same failure at the same place.
func sameOutcome(want, got string) bool {
	if want == got {
		return true
	}
	at := strings.Index(want, ">: ")
	if !strings.HasPrefix(want, "ERROR ") || at < 0 || !strings.HasPrefix(got, want[:at+3]) {
		return false
	}
	theirs, ours := want[at+3:], got[at+3:]
	for _, r := range clearerReasons {
		if r.theirs.MatchString(theirs) && r.ours.MatchString(ours) {
			return true
		}
	}
	return false
}

func TestRendersAsTextTemplateDoes(t *testing.T) {
	data := sample()
	for _, src := range corpus {
		for _, m := range missingOptions {
			want, got := render(src, data, m.option, m.ours)
			if !sameOutcome(want, got) {
				t.Errorf("%s, %s:\n text/template: %q\n tmpl:          %q", src, m.option, want, got)
			}
		}
	}
}

// TestTimeMethodsOnly: a time's listed methods are called (with
// arguments, in chains, through a pointer); any other method is an error
// naming it, where text/template would have called it.
func TestTimeMethodsOnly(t *testing.T) {
	data := sample()
	for src, want := range map[string]string{
		`{{.Time.Format "2006-01-02 15:04"}}`:        "2026-01-02 03:04",
		`{{.TimePtr.Unix}}`:                          "1767323045",
		`{{.Time.UTC.Month}} {{.Time.Day}}`:          "January 2",
		`{{with .Time}}{{.Hour}}:{{.Minute}}{{end}}`: "3:4",
	} {
		tm, err := Parse("t", src, nil, MissingInvalid)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if err := tm.Execute(&b, data); err != nil || b.String() != want {
			t.Errorf("%s = %q, %v; want %q", src, b.String(), err, want)
		}
	}
	tm, err := Parse("t", `{{.Time.Zone}}`, nil, MissingInvalid)
	if err != nil {
		t.Fatal(err)
	}
	err = tm.Execute(io.Discard, data)
	if err == nil || !strings.Contains(err.Error(), "can't evaluate field Zone in type time.Time") {
		t.Errorf("calling an unlisted method: %v, want an error naming it", err)
	}
}

// TestWriteErrorsEndTheExecution: a writer's error comes back as it is,
// and nothing runs after it (callers bound output this way).
func TestWriteErrorsEndTheExecution(t *testing.T) {
	calls := 0
	tm, err := Parse("t", `{{range .}}{{count}}xxxxxxxx{{end}}`, FuncMap{"count": func() int { calls++; return calls }}, MissingInvalid)
	if err != nil {
		t.Fatal(err)
	}
	w := &cappedWriter{left: 20}
	err = tm.Execute(w, make([]int, 1000))
	if !errors.Is(err, errCapped) {
		t.Fatalf("err = %v, want the writer's error", err)
	}
	if calls > 3 {
		t.Errorf("the template ran on after the write failed: %d calls", calls)
	}
}

// TestFunctionsAreChecked: what text/template refuses to register is
// refused here, at parse.
func TestFunctionsAreChecked(t *testing.T) {
	for name, f := range map[string]any{
		"notAFunc":  42,
		"noResult":  func() {},
		"twoValues": func() (int, int) { return 1, 2 },
	} {
		if _, err := Parse("t", "x", FuncMap{name: f}, MissingInvalid); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: err = %v, want one naming it", name, err)
		}
	}
}

// FuzzRendersAsTextTemplateDoes: arbitrary templates render the same as
// with text/template, or fail in both at the same place (the reasons are
// compared on the corpus above; for odd inputs text/template's can print
// whole values). Times are left out: text/template calls any of their
// methods, this package the listed ones.
func FuzzRendersAsTextTemplateDoes(f *testing.F) {
	for _, src := range corpus {
		if !strings.Contains(src, "Time") {
			f.Add(src)
		}
	}
	data := sample()
	data.Time, data.TimePtr = time.Time{}, nil
	f.Fuzz(func(t *testing.T, src string) {
		if strings.Contains(src, "Time") || hugeNumber.MatchString(src) {
			t.Skip()
		}
		for _, m := range missingOptions {
			want, got := render(src, data, m.option, m.ours)
			if !sameOutcome(want, got) && failedAt(want) != failedAt(got) {
				t.Errorf("%s, %s:\n text/template: %q\n tmpl:          %q", src, m.option, want, got)
			}
		}
	})
}

// hugeNumber: {{range 99999999}} runs for long in both engines.
var hugeNumber = regexp.MustCompile(`[0-9]{5}`)

// failedAt is a failure's position and node ("" for a success).
func failedAt(outcome string) string {
	if !strings.HasPrefix(outcome, "ERROR ") {
		return ""
	}
	if at := strings.Index(outcome, ">: "); at > 0 {
		return outcome[:at]
	}
	return outcome
}

// BenchmarkExecute renders a chat message body (the Discord template of
// docs/sinks.md, shortened) with both engines.
func BenchmarkExecute(b *testing.B) {
	const src = `{"title": {{ printf "%q" (trunc 256 (default "herald" .Title)) }},
"fields": [{"name": "Namespace", "value": {{ printf "%q" (default "-" .Object.metadata.name) }}}
{{- range $i, $l := .Lines }}, {"name": "{{ $i }}", "value": {{ printf "%q" $l }}}{{ end }}],
"count": {{ len .Facts }}{{ if eq .Seq 7 }}, "seq": {{ .Seq }}{{ end }}}`
	theirFuncs, ourFuncs := testFuncs()
	data := sample()
	theirs := template.Must(template.New("t").Funcs(theirFuncs).Parse(src))
	ours, err := Parse("t", src, ourFuncs, MissingInvalid)
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	b.Run("text-template", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			buf.Reset()
			if err := theirs.Execute(&buf, data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("tmpl", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			buf.Reset()
			if err := ours.Execute(&buf, data); err != nil {
				b.Fatal(err)
			}
		}
	})
}
