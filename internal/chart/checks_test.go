package chart

import (
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/herald-k8s/herald/internal/rules"
)

// TestChecksKnowEveryDetector: the chart's table of built-in detectors
// (templates/_checks.tpl) is herald's, kind by kind, so the chart never
// refuses a detector herald has nor lets a typo through.
func TestChecksKnowEveryDetector(t *testing.T) {
	tpl, err := os.ReadFile(chartDir + "/templates/_checks.tpl")
	if err != nil {
		t.Fatal(err)
	}
	chart := map[string][]string{}
	for _, m := range regexp.MustCompile(`"(\w+)" \(list ((?:"[\w-]+" ?)+)\)`).FindAllStringSubmatch(string(tpl), -1) {
		chart[m[1]] = strings.Fields(strings.ReplaceAll(m[2], `"`, ""))
	}
	herald := map[string][]string{}
	for kind := range rules.BuiltinKinds() {
		if d := rules.Detectors(kind); len(d) > 0 {
			herald[kind] = d
		}
	}
	if len(herald) == 0 {
		t.Fatal("herald lists no detectors")
	}
	for _, kind := range slices.Sorted(maps.Keys(herald)) {
		if !slices.Equal(chart[kind], herald[kind]) {
			t.Errorf("kind %s: the chart knows detectors %q, herald %q", kind, chart[kind], herald[kind])
		}
	}
	for kind := range chart {
		if herald[kind] == nil {
			t.Errorf("the chart lists detectors for kind %s, which herald has none for", kind)
		}
	}
}

// TestChecksRefuseBadValues: values that would crash-loop the pods fail
// `helm template` (and so install and upgrade) with the values path.
func TestChecksRefuseBadValues(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"typo'd detector", []string{"--set-json", `extraRules=[{"name":"sts","kind":"StatefulSet","detector":"unavailble"}]`},
			`extraRules[0].detector: unknown detector "unavailble" for kind StatefulSet; available: unavailable`},
		{"unknown sink in extraRules", []string{"--set-json", `extraRules=[{"name":"jobs","kind":"Job","detector":"job-failed","sinks":["slack","pagerduty"]}]`},
			`extraRules[0].sinks[1]: no sink named "pagerduty" in config.sinks (there: slack)`},
		{"unknown default sink", []string{"--set-json", `defaultSinks=["slak"]`},
			`defaultSinks[0]: no sink named "slak" in config.sinks (there: slack); config.rules[0] names no sinks, so it gets defaultSinks`},
		{"unknown route sink", []string{"--set-json", `routes=[{"name":"payments","match":{"namespaces":["pay"]},"to":[{"sink":"teams"}]}]`},
			`routes[0].to[0].sink: no sink named "teams" in config.sinks (there: slack)`},
		{"bad duration", []string{"--set-json", `extraRules=[{"name":"sts","kind":"StatefulSet","detector":"unavailable","for":"15 minutes"}]`},
			`extraRules[0].for: "15 minutes" is not a duration`},
		{"bad update interval", []string{"--set", "config.incidents.updateInterval=30"},
			`config.incidents.updateInterval: "30" is not a duration`},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := helm(t, append([]string{"template", "herald", chartDir, "-n", "herald", "--kube-version", "1.36.0"}, c.args...)...)
			if err == nil || !strings.Contains(out, c.want) {
				t.Errorf("helm template %q: %v; want an error with %q:\n%.600s", c.args, err, c.want, out)
			}
		})
	}
	// What the checks accept: every detector of a kind, durations as
	// herald reads them, a CRD's own detector-less rule.
	out, err := helm(t, "template", "herald", chartDir, "-n", "herald", "--kube-version", "1.36.0", "--set-json",
		`extraRules=[{"name":"pods","kind":"Pod","detector":"restarts","window":"1h30m","for":"0"},{"name":"certs","kind":"Certificate","apiVersion":"cert-manager.io/v1","condition":"true"}]`)
	if err != nil {
		t.Errorf("valid extraRules refused: %v\n%s", err, out)
	}
}

// TestChecksKnowEveryBuiltinKind: the chart's list of built-in kinds is
// herald's, so a custom resource's rule without apiVersion fails at
// helm install (not at herald's start), and a built-in kind passes.
func TestChecksKnowEveryBuiltinKind(t *testing.T) {
	tpl, err := os.ReadFile(chartDir + "/templates/_checks.tpl")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`\$builtinKinds := list ((?:"\w+" ?)+)`).FindSubmatch(tpl)
	if m == nil {
		t.Fatal("no $builtinKinds in _checks.tpl")
	}
	chart := strings.Fields(strings.ReplaceAll(string(m[1]), `"`, ""))
	if herald := slices.Sorted(maps.Keys(rules.BuiltinKinds())); !slices.Equal(chart, herald) {
		t.Errorf("the chart's built-in kinds %q, herald's %q", chart, herald)
	}
	out, err := helm(t, "template", "herald", chartDir, "--kube-version", "1.36.0", "--set-json", `extraRules=[{"name":"c","kind":"Certificate","detector":"cert-not-ready"}]`)
	if err == nil || !strings.Contains(out, "extraRules[0].apiVersion: kind Certificate is not built in") {
		t.Errorf("a Certificate rule without apiVersion: err %v, output:\n%s", err, out)
	}
}
