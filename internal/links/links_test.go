package links

import (
	"strings"
	"testing"
	"time"

	"github.com/herald-k8s/herald/config"
)

func compile(t *testing.T, yaml string) (Set, error) {
	t.Helper()
	cfg, err := config.Parse("herald.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	set, errs := Compile(cfg, "rules[0].links", cfg.Rules[0].Links)
	if len(errs) > 0 {
		return nil, errs
	}
	return set, nil
}

func rule(links string) string {
	return "rules:\n  - name: r\n    kind: Pod\n    detector: crashloop\n    sinks: [out]\n    links:\n" + links + "sinks: [{name: out, stdout: {}}]\n"
}

// TestFilledFromTheIncident: a Grafana, a Loki and a Kibana link filled
// with the object, its workload, a label and the time window; values
// from the cluster are URL-escaped on the way in, and what the template
// writes that a URL may not hold (JSON's quotes and braces, spaces) is
// percent-encoded, so the link stays one URL whatever the names.
func TestFilledFromTheIncident(t *testing.T) {
	set, err := compile(t, rule(`      - {name: Dashboard, url: "https://grafana.example.com/d/k8s?var-namespace={{ .Namespace }}&var-workload={{ .WorkloadName }}&from={{ .FromMs }}&to={{ .ToMs }}"}
      - {name: Logs, url: 'https://grafana.example.com/explore?left={"queries":[{"expr":"{namespace=\"{{ .Namespace }}\", app=\"{{ index .Labels "app" }}\"}"}]}'}
      - {name: Kibana, url: "https://kibana.example.com/app/discover#/?_g=(time:(from:'{{ .FromISO }}',to:'{{ .ToISO }}'))&q=kubernetes.pod.name:{{ .Name }}"}
`))
	if err != nil {
		t.Fatal(err)
	}
	since := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	d := Data{Namespace: "shop", Kind: "Pod", Name: "api-1 & <b>", WorkloadName: "api", Labels: map[string]string{"app": "a b&c=d"}}.Window(since, since.Add(5*time.Minute))
	got, errs := Render(d, set)
	if len(errs) > 0 || len(got) != 3 {
		t.Fatalf("got %v, %v", got, errs)
	}
	want := []string{
		"https://grafana.example.com/d/k8s?var-namespace=shop&var-workload=api&from=1795340700000&to=1795341900000",
		`https://grafana.example.com/explore?left=%7B%22queries%22:[%7B%22expr%22:%22%7Bnamespace=%5C%22shop%5C%22,%20app=%5C%22a+b%26c%3Dd%5C%22%7D%22%7D]%7D`,
		"https://kibana.example.com/app/discover#/?_g=(time:(from:'2026-11-22T09%3A45%3A00Z',to:'2026-11-22T10%3A05%3A00Z'))&q=kubernetes.pod.name:api-1+%26+%3Cb%3E",
	}
	for i, l := range got {
		if l.URL != want[i] {
			t.Errorf("%s:\n got %s\nwant %s", l.Name, l.URL, want[i])
		}
	}
}

// TestOnlyWebLinks: a link's scheme is written out, http or https, and
// it comes out with a host whatever the data; one that does not is
// refused at load, or left out (with its error) when only some data
// makes it so. Data cannot move a link to another host.
func TestOnlyWebLinks(t *testing.T) {
	for _, bad := range []string{"javascript:alert(1)", "file:///etc/passwd", "//evil.example/x", "{{ .Namespace }}/x", "https://", "data:text/html,x", `{{ "https://x.example" }}`} {
		if _, err := compile(t, rule("      - {name: L, url: '"+bad+"'}\n")); err == nil || !strings.Contains(err.Error(), "herald.yaml:7:") {
			t.Errorf("%q: %v, want refused at its line", bad, err)
		}
	}
	set, err := compile(t, rule(`      - {name: L, url: 'https://{{ index .Labels "docs" }}.example.com/{{ .Name }}'}
`))
	if err != nil {
		t.Fatal(err)
	}
	got, errs := Render(Data{Name: "x", Labels: map[string]string{"docs": ""}}, set)
	if len(got) != 1 || got[0].URL != "https://.example.com/x" {
		t.Errorf("a label's empty host part: %v, %v", got, errs)
	}
	set, _ = compile(t, rule(`      - {name: L, url: 'https://{{ index .Labels "host" }}/docs'}
`))
	if got, errs := Render(Data{}, set); len(got) != 0 || len(errs) != 1 || !strings.Contains(errs[0].Error(), "http:// or https://") {
		t.Errorf("no host at all: %v, %v, want it left out", got, errs)
	}
	got, _ = Render(Data{Name: "evil.example/@x#"}, compiled1(t, "https://docs.example.com/{{ .Name }}"))
	if len(got) != 1 || got[0].URL != "https://docs.example.com/evil.example%2F%40x%23" {
		t.Errorf("a name that tries another host: %v", got)
	}
	if _, err := Check("https://x.example/" + strings.Repeat("a", MaxURL)); err == nil {
		t.Error("a URL over MaxURL passed")
	}
	if got, err := Check("https://x.example/a%2Fb%zz"); err != nil || got != "https://x.example/a%2Fb%25zz" {
		t.Errorf("a template's own escape kept, a stray %% escaped: %q, %v", got, err)
	}
}

// TestTemplateErrorsArePlaced: a template that does not parse, or names a
// field the data lacks, fails at load with the file's line and column.
func TestTemplateErrorsArePlaced(t *testing.T) {
	for src, want := range map[string]string{
		"https://x.example/{{ .Namespace ": "herald.yaml:8:",
		"https://x.example/{{ .Pod }}":     "can't evaluate field Pod",
	} {
		_, err := compile(t, rule("      - name: L\n        url: '"+src+"'\n"))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", src, err, want)
		}
	}
}

// TestRouteAndRuleLinks: sets are filled in order, the first of a name
// kept, at most config.MaxLinks in all.
func TestRouteAndRuleLinks(t *testing.T) {
	a, _ := compile(t, rule("      - {name: Logs, url: 'https://a.example/'}\n      - {name: Dash, url: 'https://a.example/d'}\n"))
	b, _ := compile(t, rule("      - {name: Logs, url: 'https://b.example/'}\n      - {name: B1, url: 'https://b.example/1'}\n      - {name: B2, url: 'https://b.example/2'}\n      - {name: B3, url: 'https://b.example/3'}\n      - {name: B4, url: 'https://b.example/4'}\n"))
	got, _ := Render(Sample(), a, b)
	var names []string
	for _, l := range got {
		names = append(names, l.Name)
	}
	if strings.Join(names, ",") != "Logs,Dash,B1,B2,B3" || got[0].URL != "https://a.example/" {
		t.Errorf("got %v", got)
	}
}

// TestLinkShapes: names and counts are checked where they are written.
func TestLinkShapes(t *testing.T) {
	for links, want := range map[string]string{
		"      - {url: 'https://x.example/'}\n": "rules[0].links[0].name: a link needs a name",
		"      - {name: L}\n":                   "rules[0].links[0].url: a link needs a url",
		"      - {name: L, url: 'https://x.example/'}\n      - {name: L, url: 'https://y.example/'}\n": "is the name of an earlier link",
		"      - {name: " + strings.Repeat("n", 41) + ", url: 'https://x.example/'}\n":                 "at most 40 characters",
	} {
		_, err := config.Parse("herald.yaml", []byte(rule(links)))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", links, err, want)
		}
	}
}

func compiled1(t *testing.T, url string) Set {
	t.Helper()
	set, err := compile(t, rule("      - {name: L, url: '"+url+"'}\n"))
	if err != nil {
		t.Fatal(err)
	}
	return set
}
