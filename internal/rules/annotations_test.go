package rules

import (
	"slices"
	"testing"

	"github.com/herald-k8s/herald/config"
)

// TestAnnotationsRead: the annotations a condition or template names are
// kept, and anything that could read others keeps them all.
func TestAnnotationsRead(t *testing.T) {
	for _, tc := range []struct {
		src  string
		keys []string
		all  bool
	}{
		{`object.status.replicas == 0`, nil, false},
		{`object.metadata.annotations["team.io/owner"] == "x"`, []string{"team.io/owner"}, false},
		{`object.metadata.annotations['a'] == 'b' && has(object.metadata.annotations.owner)`, []string{"a", "owner"}, false},
		{`"team.io/page" in object.metadata.annotations`, []string{"team.io/page"}, false},
		{`{{ index .Object.metadata.annotations "team.io/owner" }} {{ .Object.metadata.name }}`, []string{"team.io/owner"}, false},
		{`{{ .Object.metadata.annotations.owner }}`, []string{"owner"}, false},
		{`object.metadata.annotations.exists(k, k.startsWith("x"))`, nil, true},
		{`size(object.metadata.annotations) > 3`, nil, true},
		{`{{ range $k, $v := .Object.metadata.annotations }}{{ $k }}{{ end }}`, nil, true},
		{`{{ .Object.metadata }}`, nil, true},
		{`{{ toJson .Object }}`, nil, true},
		{`object["metadata"]["annotations"]["x"] == "y"`, nil, true},
		{`has(object.metadata.annotations)`, nil, true},
	} {
		keys, all := annotationsRead(tc.src)
		if all != tc.all || !slices.Equal(keys, tc.keys) {
			t.Errorf("%s: keys %q all %v, want %q %v", tc.src, keys, all, tc.keys, tc.all)
		}
	}
}

func TestSetAnnotationsRead(t *testing.T) {
	cfg, err := config.Parse("t.yaml", []byte(`
rules:
  - {name: a, kind: Deployment, detector: unavailable, sinks: [out]}
  - {name: b, kind: Deployment, condition: 'object.metadata.annotations["x.io/y"] == "1"', sinks: [out]}
  - {name: c, kind: Deployment, detector: unavailable, message: {text: '{{ index .Object.metadata.annotations "x.io/z" }}'}, sinks: [out]}
  - {name: d, kind: Job, condition: 'size(object.metadata.annotations) > 1', sinks: [out]}
sinks:
  - {name: out, stdout: {}}
`))
	if err != nil {
		t.Fatal(err)
	}
	set, err := Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if keys, all := set.AnnotationsRead("Deployment"); all || !slices.Equal(keys, []string{"x.io/y", "x.io/z"}) {
		t.Errorf("Deployment: %q all=%v", keys, all)
	}
	if _, all := set.AnnotationsRead("Job"); !all {
		t.Error("Job: a rule sizes the annotations; all must be kept")
	}
	if keys, all := set.AnnotationsRead("Pod"); all || keys != nil {
		t.Errorf("Pod (no rule): %q %v", keys, all)
	}
}
