package chart

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// buttonsArgs turn Slack buttons on: the on-call group may silence in
// shop's namespaces, anyone may acknowledge.
var buttonsArgs = []string{
	"--set", "slack.interactive.enabled=true",
	"--set-json", `slack.interactive.allow=[{"namespaces":["shop","shop-*"],"silence":["S0ONCALL1"],"acknowledge":["*"]}]`,
}

// rendered renders the chart with args and decodes the object of kind
// and name into out.
func rendered(t *testing.T, kind, name string, out any, args ...string) {
	t.Helper()
	text, err := helm(t, append([]string{"template", "herald", chartDir, "-n", "herald", "--kube-version", "1.36.0"}, args...)...)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, text)
	}
	for _, doc := range strings.Split(text, "\n---") {
		if !strings.Contains(doc, "\nkind: "+kind+"\n") || !strings.Contains(doc, "\n  name: "+name+"\n") {
			continue
		}
		if err := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader([]byte(doc)), 4096).Decode(out); err != nil && !errors.Is(err, io.EOF) {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("no %s %s rendered", kind, name)
}

// podAnnotation is the annotation key of herald's pod template, rendered
// with args ("" when it has none).
func podAnnotation(t *testing.T, key string, args ...string) string {
	t.Helper()
	var d appsv1.Deployment
	rendered(t, "Deployment", "herald", &d, args...)
	return d.Spec.Template.Annotations[key]
}

// heraldMay says whether herald's ServiceAccount (the chart's ClusterRole
// and Role, both named herald) is granted verb on group/resource.
func heraldMay(t *testing.T, group, resource, verb string, args ...string) bool {
	t.Helper()
	var cr rbacv1.ClusterRole
	var r rbacv1.Role
	rendered(t, "ClusterRole", "herald", &cr, args...)
	rendered(t, "Role", "herald", &r, args...)
	for _, rule := range append(cr.Rules, r.Rules...) {
		if (slices.Contains(rule.APIGroups, group) || slices.Contains(rule.APIGroups, "*")) &&
			(slices.Contains(rule.Resources, resource) || slices.Contains(rule.Resources, "*")) &&
			(slices.Contains(rule.Verbs, verb) || slices.Contains(rule.Verbs, "*")) {
			return true
		}
	}
	return false
}

// TestButtonsGrantOnlyWhenEnabled: herald may create and delete Silences
// and create Events only with Slack buttons — by the chart's value, or by
// an interactive block written in config.sinks — and never
// ClusterSilences.
func TestButtonsGrantOnlyWhenEnabled(t *testing.T) {
	written := []string{"--set-json", `config.sinks=[{"name":"slack","slack":{"token":{"file":"/t"},"interactive":{"appToken":{"file":"/a"}}}}]`}
	for _, tt := range []struct {
		name string
		args []string
		want bool
	}{
		{"off", nil, false},
		{"slack.interactive.enabled", buttonsArgs, true},
		{"config.sinks", written, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, g := range []struct{ group, resource, verb string }{
				{"herald.io", "silences", "create"}, {"herald.io", "silences", "delete"}, {"", "events", "create"},
			} {
				if got := heraldMay(t, g.group, g.resource, g.verb, tt.args...); got != tt.want {
					t.Errorf("herald may %s %s: %v, want %v", g.verb, g.resource, got, tt.want)
				}
			}
			for _, verb := range []string{"create", "delete", "update", "patch"} {
				if heraldMay(t, "herald.io", "clustersilences", verb, tt.args...) {
					t.Errorf("herald may %s clustersilences", verb)
				}
			}
			if heraldMay(t, "herald.io", "silences", "update", tt.args...) || heraldMay(t, "", "events", "update", tt.args...) {
				t.Error("herald may update silences or events: buttons create and delete only")
			}
		})
	}
}

// TestButtonsValues: the app-level token is mounted from its Secret's
// key alone and named by the sink's configuration, the allow list is the
// configuration's, and a change to it rolls the pods (herald reads it at
// start only, hot reload or not).
func TestButtonsValues(t *testing.T) {
	var cm corev1.ConfigMap
	rendered(t, "ConfigMap", "herald", &cm, buttonsArgs...)
	var cfg struct {
		Sinks []struct {
			Name  string
			Slack struct {
				Interactive struct {
					AppToken struct{ File string } `yaml:"appToken"`
					Allow    []map[string]any
				}
			}
		}
	}
	if err := yaml.Unmarshal([]byte(cm.Data["config.yaml"]), &cfg); err != nil {
		t.Fatal(err)
	}
	in := cfg.Sinks[0].Slack.Interactive
	if cfg.Sinks[0].Name != "slack" || in.AppToken.File != "/var/run/secrets/herald/slack-interactive/app-token" {
		t.Errorf("sink %s: appToken file %q", cfg.Sinks[0].Name, in.AppToken.File)
	}
	if len(in.Allow) != 1 || !slices.Equal(toStrings(in.Allow[0]["silence"]), []string{"S0ONCALL1"}) {
		t.Errorf("allow %v", in.Allow)
	}

	var d appsv1.Deployment
	rendered(t, "Deployment", "herald", &d, append(buttonsArgs, "--set", "slack.interactive.existingSecret=slack-app", "--set", "slack.interactive.key=xapp")...)
	var vol *corev1.Volume
	for i, v := range d.Spec.Template.Spec.Volumes {
		if v.Name == "slack-app-token" {
			vol = &d.Spec.Template.Spec.Volumes[i]
		}
	}
	if vol == nil || vol.Secret == nil || vol.Secret.SecretName != "slack-app" ||
		!slices.Equal(vol.Secret.Items, []corev1.KeyToPath{{Key: "xapp", Path: "app-token"}}) {
		t.Fatalf("the app-level token's volume: %+v", vol)
	}
	mounted := false
	for _, m := range d.Spec.Template.Spec.Containers[0].VolumeMounts {
		mounted = mounted || (m.Name == "slack-app-token" && m.MountPath == "/var/run/secrets/herald/slack-interactive" && m.ReadOnly)
	}
	if !mounted {
		t.Errorf("the app-level token is not mounted read-only where the configuration reads it: %+v", d.Spec.Template.Spec.Containers[0].VolumeMounts)
	}

	checksum := func(args ...string) string { return podAnnotation(t, "checksum/slack-interactive", args...) }
	on := checksum(buttonsArgs...)
	if on == "" || checksum() != "" {
		t.Errorf("checksum/slack-interactive: %q with buttons, %q without; want one only with", on, checksum())
	}
	if other := checksum(append(buttonsArgs, "--set-json", `slack.interactive.allow=[{"silence":["U0ANA1"]}]`)...); other == on {
		t.Error("changing the allow list leaves the pod template as it was: herald would keep the old list")
	}
}

func toStrings(v any) []string {
	var out []string
	for _, s := range v.([]any) {
		out = append(out, s.(string))
	}
	return out
}

// TestButtonsRefused: what the schema and the templates refuse, and what
// they say.
func TestButtonsRefused(t *testing.T) {
	on := []string{"--set", "slack.interactive.enabled=true"}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--set", "slack.interactive.sink=pager"}, "slack.interactive.sink=pager: no sink of that name in config.sinks"},
		{[]string{"--set-json", `config.sinks=[{"name":"slack","slack":{"webhookURL":{"file":"/w"}}}]`}, "that sink is not a Slack sink with a bot token"},
		{[]string{"--set-json", `config.sinks=[{"name":"slack","slack":{"token":{"file":"/t"},"interactive":{"appToken":{"file":"/a"}}}}]`}, "give the buttons in one place"},
		{[]string{"--set", "slack.interactive.existingSecret="}, "slack.interactive.existingSecret must name the Secret"},
		{[]string{"--set-json", `secrets=[{"name":"slack-interactive","existingSecret":"x"}]`}, "the name slack-interactive is the Slack app-level token's mount"},
		// IDs, not names: a name can change hands.
		{[]string{"--set-json", `slack.interactive.allow=[{"silence":["@oncall"]}]`}, "at '/slack/interactive/allow/0/silence/0': '@oncall' does not match pattern"},
		{[]string{"--set-json", `slack.interactive.allow=[{"namespaces":["shop"]}]`}, "at '/slack/interactive/allow/0': 'anyOf' failed"},
		{[]string{"--set-json", `slack.interactive.allow=[{"silense":["U0ANA1"]}]`}, "additional properties 'silense' not allowed"},
		{[]string{"--set", "slack.interactive.enable=true"}, "at '/slack/interactive': additional properties 'enable' not allowed"},
	} {
		out, err := helm(t, append(append([]string{"template", "herald", chartDir, "--kube-version", "1.36.0"}, on...), tt.args...)...)
		if err == nil || !strings.Contains(out, tt.want) {
			t.Errorf("%v: err %v, output:\n%s\nwant it to say %q", tt.args, err, out, tt.want)
		}
	}
}
