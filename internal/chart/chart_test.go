// Package chart tests what herald ships: the Helm chart under
// charts/herald (lint, rendered
// manifests against golden files, the values schema, a server-side
// dry run and install against the real test control plane) and the image
// recipe.
package chart

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	"github.com/herald-k8s/herald/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite golden files")

const chartDir = "../../charts/herald"

func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	bin, err := testenv.EnsureHelm(context.Background(), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestLint: helm lint --strict with the default values and with each
// example values file.
func TestLint(t *testing.T) {
	out, err := helm(t, "lint", "--strict", chartDir)
	if err != nil {
		t.Fatalf("helm lint --strict: %v\n%s", err, out)
	}
	files, err := filepath.Glob("../../examples/chart/*.yaml")
	if err != nil || len(files) < 4 {
		t.Fatalf("example values files: %v %v", files, err)
	}
	for _, file := range files {
		if out, err := helm(t, "lint", "--strict", chartDir, "-f", file); err != nil {
			t.Errorf("helm lint --strict -f %s: %v\n%s", file, err, out)
		}
	}
}

// variants are the values the golden files render.
var variants = map[string][]string{
	"default": nil,
	"created-secret-monitoring": {
		"--set", "metrics.serviceMonitor.enabled=true", "--set", "networkPolicy.enabled=true",
		"--set", "metrics.prometheusRule.enabled=true", "--set", "metrics.grafanaDashboard.enabled=true",
		"--set-json", `secrets=[{"name":"slack","data":{"token":"xoxb-from-values"}}]`,
	},
	// The production example: network policy both ways (docs/security.md).
	"example-values": {"-f", "../../examples/chart/values.yaml"},
	// Slack buttons: the app-level token's mount, the grants they need,
	// the allow list in the configuration.
	"slack-buttons": buttonsArgs,
	"single-webhook-no-reload": {
		"--set", "replicaCount=1", "--set", "leaderElection.enabled=false", "--set", "hotReload.enabled=false",
		"--set-json", `config={"rules":[{"name":"crash","kind":"Pod","detector":"crashloop","sinks":["hook"]},{"name":"certs","kind":"Certificate","apiVersion":"cert-manager.io/v1","condition":"true","sinks":["hook"]}],"sinks":[{"name":"hook","webhook":{"urlFrom":{"file":"/var/run/secrets/herald/hook/url"}}}]}`,
		"--set-json", `secrets=[{"name":"hook","existingSecret":"oncall-webhook"}]`,
	},
}

func TestTemplateGolden(t *testing.T) {
	for name, args := range variants {
		t.Run(name, func(t *testing.T) {
			out, err := helm(t, append([]string{"template", "herald", chartDir, "-n", "herald", "--kube-version", "1.36.0"}, args...)...)
			if err != nil {
				t.Fatalf("helm template: %v\n%s", err, out)
			}
			golden := filepath.Join("testdata", name+".yaml")
			if *update {
				os.WriteFile(golden, []byte(out), 0o644)
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test -update writes it)", err)
			}
			if string(want) != out {
				t.Errorf("%s differs from the rendered chart (go test -update rewrites it):\n%s", golden, out)
			}
		})
	}
}

// TestRenderedPolicy checks what the golden files must never lose.
func TestRenderedPolicy(t *testing.T) {
	out, err := helm(t, "template", "herald", chartDir, "-n", "herald", "--kube-version", "1.36.0")
	if err != nil {
		t.Fatal(out)
	}
	for _, want := range []string{
		"runAsNonRoot: true", "readOnlyRootFilesystem: true", "drop: [ALL]", "type: RuntimeDefault",
		"allowPrivilegeEscalation: false", "path: /healthz", "path: /readyz", "kind: PodDisruptionBudget",
		// An unhealthy replica never blocks a node drain.
		"unhealthyPodEvictionPolicy: AlwaysAllow",
		"topologySpreadConstraints:", "replicas: 2", "--leader-elect=true",
		// Go's soft memory limit follows the container's (cmd/herald/memlimit.go).
		"name: HERALD_MEMORY_LIMIT\n              valueFrom: {resourceFieldRef: {resource: limits.memory}}",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("rendered chart lacks %q", want)
		}
	}
	if strings.Contains(out, `"secrets"`) || strings.Contains(out, "resources: [secrets]") {
		t.Errorf("the default ClusterRole grants Secrets:\n%s", out)
	}
	if strings.Contains(out, "checksum/config") {
		t.Error("checksum annotation rendered although hot reload is on")
	}
	// Without a memory limit there is nothing to follow (the field would
	// read the node's memory).
	out, err = helm(t, "template", "herald", chartDir, "-n", "herald", "--kube-version", "1.36.0", "--set", "resources.limits=null")
	if err != nil {
		t.Fatal(out)
	}
	if strings.Contains(out, "HERALD_MEMORY_LIMIT") {
		t.Error("HERALD_MEMORY_LIMIT rendered without resources.limits.memory")
	}
}

func TestSchemaRejectsBadValues(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--set", "replicaCount=two"}, "at '/replicaCount': got string, want integer"},
		{[]string{"--set-json", `config.sinks=[{"name":"pd","pagerdutty":{}}]`}, "at '/config/sinks/0': additional properties 'pagerdutty' not allowed"},
		{[]string{"--set-json", `config.sinks=[{"name":"pd","pagerduty":{}}]`}, "at '/config/sinks/0/pagerduty': missing property 'routingKey'"},
		{[]string{"--set-json", `config.sinks=[{"name":"am","alertmanager":{"urls":["alertmanager:9093"]}}]`}, "at '/config/sinks/0/alertmanager/urls/0'"},
		{[]string{"--set-json", `config.rules=[{"name":"r","kind":"Pod","detecter":"crashloop","sinks":["slack"]}]`}, "additional properties 'detecter' not allowed"},
		// Typos at the top level and in config, as values.yaml and
		// config.Config spell them (TestSchemaKnowsEveryKey).
		{[]string{"--set", "slack.chanel=#x"}, "at '/slack': additional properties 'chanel' not allowed"},
		{[]string{"--set", "clustername=prod"}, "additional properties 'clustername' not allowed"},
		{[]string{"--set", "config.clustername=prod"}, "at '/config': additional properties 'clustername' not allowed"},
		{[]string{"--set", "image.tagg=1.0"}, "at '/image': additional properties 'tagg' not allowed"},
		{[]string{"--set", "metrics.serviceMonitor.enable=true"}, "at '/metrics/serviceMonitor': additional properties 'enable' not allowed"},
		{[]string{"--set-json", `extraRules=[{"name":"r","kind":"Pod","detecter":"crashloop"}]`}, "at '/extraRules/0': additional properties 'detecter' not allowed"},
		{[]string{"--set-json", `routes=[{"name":"r","to":[{"sink":"slack","mention":["@payments"]}]}]`}, "at '/routes/0/to/0/mention/0'"},
		{[]string{"--set-json", `routes=[{"name":"r","match":{"team":["payments"]},"to":[{"sink":"slack"}]}]`}, "additional properties 'team' not allowed"},
		// What the schema cannot say, the templates refuse.
		{[]string{"--set-json", `extraRules=[{"name":"pod-crashloop","kind":"Pod","detector":"crashloop"}]`}, "rule pod-crashloop is defined twice"},
		{[]string{"--set-json", `routes=[{"name":"a","to":[{"sink":"slack"}]}]`, "--set-json", `config.routes=[{"name":"b","to":[{"sink":"slack"}]}]`}, "routes and config.routes are both set"},
		{[]string{"--set-json", `extraRules=[{"name":"tls-expiry","kind":"Secret","condition":"true"}]`}, "rule tls-expiry watches Secrets"},
	} {
		out, err := helm(t, append([]string{"template", "herald", chartDir, "--kube-version", "1.36.0"}, tt.args...)...)
		if err == nil || !strings.Contains(out, tt.want) {
			t.Errorf("%v: err %v, output:\n%s\nwant it to say %q", tt.args, err, out, tt.want)
		}
	}
}

// TestSchemaAcceptsOnCallSinks: the chart README's example of the
// on-call destinations renders.
func TestSchemaAcceptsOnCallSinks(t *testing.T) {
	out, err := helm(t, "template", "herald", chartDir, "--kube-version", "1.36.0",
		"--set-json", `secrets=[{"name":"pagerduty","existingSecret":"herald-pagerduty"},{"name":"teams","existingSecret":"herald-teams"}]`,
		"--set-json", `config.rules=[{"name":"pod-crashloop","kind":"Pod","detector":"crashloop","alertLabels":{"team":"payments"},"sinks":["alertmanager","pagerduty","teams"]}]`,
		"--set-json", `config.sinks=[{"name":"alertmanager","alertmanager":{"urls":["http://alertmanager-operated.monitoring:9093"],"clusterName":"prod-eu"}},`+
			`{"name":"pagerduty","pagerduty":{"routingKey":{"file":"/var/run/secrets/herald/pagerduty/routing-key"},"clusterName":"prod-eu"}},`+
			`{"name":"teams","teams":{"urlFrom":{"file":"/var/run/secrets/herald/teams/url"}}}]`)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"alertmanager-operated.monitoring:9093", "/var/run/secrets/herald/pagerduty", "herald-teams"} {
		if !strings.Contains(out, want) {
			t.Errorf("the rendered chart does not have %q", want)
		}
	}
}

// TestDryRunAndInstall: every rendered object passes a server-side dry
// run, then helm install succeeds, on the real control plane.
func TestDryRunAndInstall(t *testing.T) {
	env := testenv.New(t)
	client, _ := env.Client()
	ctx := context.Background()
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "herald"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dyn, _ := dynamic.NewForConfig(env.Config)
	disco, _ := discovery.NewDiscoveryClientForConfig(env.Config)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))
	n := 0
	// The defaults, the production example (its egress NetworkPolicy),
	// and Slack buttons (the app-level token's volume, their grants).
	for _, args := range [][]string{nil, {"-f", "../../examples/chart/values.yaml"}, buttonsArgs} {
		out, err := helm(t, append([]string{"template", "herald", chartDir, "-n", "herald", "--kube-version", "1.36.0"}, args...)...)
		if err != nil {
			t.Fatal(out)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader([]byte(out)), 4096)
		for {
			var obj unstructured.Unstructured
			if err := dec.Decode(&obj.Object); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				t.Fatal(err)
			}
			if len(obj.Object) == 0 {
				continue
			}
			gvk := obj.GroupVersionKind()
			m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				t.Fatalf("%s: %v", gvk, err)
			}
			ri := dyn.Resource(m.Resource)
			var res dynamic.ResourceInterface = ri
			if m.Scope.Name() == "namespace" {
				res = ri.Namespace("herald")
			}
			if _, err := res.Create(ctx, &obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
				t.Errorf("server-side dry run of %s %s: %v", gvk.Kind, obj.GetName(), err)
			}
			n++
		}
	}
	t.Logf("%d rendered objects passed a server-side dry run", n)

	kc := filepath.Join(t.TempDir(), "kubeconfig")
	env.WriteKubeconfig(kc)
	// No node here to run the config-check hook's Job (the real-node
	// install test runs it; the dry run above had the server check it).
	out, err := helm(t, "install", "herald", chartDir, "-n", "herald", "--kubeconfig", kc, "--set", "configCheck.enabled=false")
	if err != nil {
		t.Fatalf("helm install: %v\n%s", err, out)
	}
	checkNotes(t, out)
	// The notes name the channels the bot must be invited to.
	if !strings.Contains(out, "/invite @herald in #alerts (docs/slack.md)") {
		t.Errorf("helm install's notes do not say to invite the bot to #alerts:\n%s", out)
	}
	if _, err := client.AppsV1().Deployments("herald").Get(ctx, "herald", metav1.GetOptions{}); err != nil {
		t.Errorf("installed Deployment: %v", err)
	}
}

// TestExtraRulesGrantTheirKinds: the ClusterRole follows the rules the
// ConfigMap ships, extraRules included.
func TestExtraRulesGrantTheirKinds(t *testing.T) {
	out, err := helm(t, "template", "herald", chartDir, "--kube-version", "1.36.0",
		"--set-json", `extraRules=[{"name":"sts","kind":"StatefulSet","detector":"unavailable"}]`)
	if err != nil {
		t.Fatal(out)
	}
	if !strings.Contains(out, "apiGroups: [\"apps\"]\n    resources: [\"statefulsets\"]") {
		t.Errorf("an extra rule on StatefulSets: the ClusterRole does not grant them:\n%s", out)
	}
	if !strings.Contains(out, "name: sts\n") {
		t.Error("the extra rule is not in the ConfigMap")
	}
}

// TestDisabledRules: disabledRules turns defaults off by name — gone from
// the configuration, and the kinds only they watched gone from the
// ClusterRole — and a name that is no rule stops the install, listing
// the rules there are.
func TestDisabledRules(t *testing.T) {
	out, err := helm(t, "template", "herald", chartDir, "--kube-version", "1.36.0", "--set", "disabledRules={cronjob-missed,hpa-max-replicas}")
	if err != nil {
		t.Fatal(out)
	}
	for _, gone := range []string{"name: cronjob-missed\n", "name: hpa-max-replicas\n", `resources: ["cronjobs"]`, `resources: ["horizontalpodautoscalers"]`} {
		if strings.Contains(out, gone) {
			t.Errorf("disabled, yet rendered: %q", gone)
		}
	}
	if !strings.Contains(out, "name: job-failed\n") || !strings.Contains(out, `resources: ["jobs"]`) {
		t.Error("a rule not disabled went too")
	}
	out, err = helm(t, "template", "herald", chartDir, "--kube-version", "1.36.0", "--set", "disabledRules={cronjob-mised}")
	if err == nil || !strings.Contains(out, "disabledRules names cronjob-mised, which is not a rule of config.rules (cert-expiring, cronjob-missed, deployment-unavailable,") {
		t.Errorf("a misspelt name: err %v, output:\n%s", err, out)
	}
}
