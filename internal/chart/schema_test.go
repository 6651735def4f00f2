package chart

import (
	"encoding/json"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/herald-k8s/herald/config"
)

// TestSchemaKnowsEveryKey: the schema rejects unknown keys at the top
// level and in config (TestSchemaRejectsBadValues), so it must know every
// key values.yaml has and every key herald's configuration has
// (config.Config's YAML names), and no key herald would refuse.
func TestSchemaKnowsEveryKey(t *testing.T) {
	raw, err := os.ReadFile(chartDir + "/values.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		AdditionalProperties *bool `json:"additionalProperties"`
		Properties           map[string]struct {
			AdditionalProperties *bool                      `json:"additionalProperties"`
			Properties           map[string]json.RawMessage `json:"properties"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	if schema.AdditionalProperties == nil || *schema.AdditionalProperties {
		t.Error("the schema's top level allows unknown keys")
	}
	raw, err = os.ReadFile(chartDir + "/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(raw, &values); err != nil {
		t.Fatal(err)
	}
	for key := range values {
		if _, ok := schema.Properties[key]; !ok {
			t.Errorf("values.yaml has %s; the schema does not know it (helm would refuse the chart's own defaults)", key)
		}
	}

	cfg := schema.Properties["config"]
	if cfg.AdditionalProperties == nil || *cfg.AdditionalProperties {
		t.Error("the schema's config allows unknown keys")
	}
	var want []string
	typ := reflect.TypeOf(config.Config{})
	for i := range typ.NumField() {
		if name, _, _ := strings.Cut(typ.Field(i).Tag.Get("yaml"), ","); name != "" && name != "-" {
			want = append(want, name)
		}
	}
	slices.Sort(want)
	if got := slices.Sorted(maps.Keys(cfg.Properties)); !slices.Equal(got, want) {
		t.Errorf("the schema's config keys %v, herald's %v", got, want)
	}
}
