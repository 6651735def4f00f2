package chart

import (
	"strings"
	"testing"
)

// TestSchemaExclude: the values schema takes a rule's exclude block as
// herald does, and rejects a misspelt field in it.
func TestSchemaExclude(t *testing.T) {
	rule := func(exclude string) []string {
		return []string{"template", "herald", chartDir, "--kube-version", "1.36.0",
			"--set-json", `config.rules=[{"name":"r","kind":"Pod","detector":"crashloop","sinks":["slack"],"exclude":` + exclude + `}]`}
	}
	out, err := helm(t, rule(`{"names":["batch-*"],"containers":["istio-proxy"],"namespaces":["sandbox-*"],"labels":"team=x","logPattern":"refused","when":"true"}`)...)
	if err != nil {
		t.Fatalf("exclude with every field: %v\n%s", err, out)
	}
	if !strings.Contains(out, "istio-proxy") {
		t.Errorf("the rendered config does not carry the exclude block:\n%s", out)
	}
	out, err = helm(t, rule(`{"container":["istio-proxy"]}`)...)
	if want := "additional properties 'container' not allowed"; err == nil || !strings.Contains(out, want) {
		t.Errorf("err %v, output:\n%s\nwant it to say %q", err, out, want)
	}
}
