package config

import (
	"errors"
	"testing"
)

func TestExcludeDecodes(t *testing.T) {
	cfg, err := Parse("x.yaml", []byte(`
rules:
  - name: r
    kind: Pod
    detector: crashloop
    exclude:
      names: ["batch-*", "*-canary-*"]
      containers: ["istio-proxy", "*-sidecar"]
      namespaces: ["sandbox-*"]
      labels: "team=experiments"
      logPattern: "connection refused .* retrying"
      when: "object.metadata.annotations['herald.io/ignore'] == 'true'"
    sinks: [out]
sinks: [{name: out, stdout: {}}]
`))
	if err != nil {
		t.Fatal(err)
	}
	e := cfg.Rules[0].Exclude
	if e == nil || len(e.Names) != 2 || e.Containers[1] != "*-sidecar" || e.Namespaces[0] != "sandbox-*" || e.Labels != "team=experiments" ||
		e.LogPattern != "connection refused .* retrying" || e.When != "object.metadata.annotations['herald.io/ignore'] == 'true'" {
		t.Errorf("exclude decoded wrong: %+v", e)
	}
}

// TestExcludeErrors: each mistake in an exclude block is an error at its
// place in the file; a regexp error points into the pattern where the
// file shows it verbatim (not inside a double-quoted value with escapes).
func TestExcludeErrors(t *testing.T) {
	want := []string{
		`testdata/exclude-errors.yaml:6:26: rules[0].exclude.names[1]: bad pattern "api-[0-9": unclosed [ ] or a trailing \ (globs take *, ?, [a-z] and \ to escape)`,
		`testdata/exclude-errors.yaml:7:35: rules[0].exclude.containers[1]: bad pattern "": a pattern must not be empty (use "*" for any)`,
		`testdata/exclude-errors.yaml:8:20: rules[0].exclude.namespaces[0]: bad pattern "sandbox-\\": unclosed [ ] or a trailing \ (globs take *, ?, [a-z] and \ to escape)`,
		`testdata/exclude-errors.yaml:9:19: rules[0].exclude.logPattern: bad regular expression: missing closing ) in "connection (refused .* retrying"`,
		`testdata/exclude-errors.yaml:14:14: rules[1].exclude: an empty exclude excludes nothing: give names, containers, namespaces, labels, logPattern or when (or remove it)`,
		`testdata/exclude-errors.yaml:20:19: rules[2].exclude.logPattern: bad regular expression: invalid repeat count in "{2,1}"`,
		`testdata/exclude-errors.yaml:21:7: rules[2].exclude.unless: unknown field "unless"; valid fields here: names, containers, namespaces, labels, logPattern, when`,
	}
	_, err := Load("testdata/exclude-errors.yaml")
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("Load error = %v, want config.Errors", err)
	}
	if len(errs) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%v", len(errs), len(want), errs)
	}
	for i, e := range errs {
		if e.Error() != want[i] {
			t.Errorf("error %d:\n got  %s\n want %s", i, e, want[i])
		}
	}
}
