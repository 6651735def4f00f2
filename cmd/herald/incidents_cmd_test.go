package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-k8s/herald/internal/testenv"
)

// readOnlyKubeconfig writes a kubeconfig for a ServiceAccount that may
// only get and list ConfigMaps in namespace: what herald incidents needs.
func readOnlyKubeconfig(t *testing.T, env *testenv.Env, namespace string) string {
	t.Helper()
	cfg, err := env.ServiceAccountConfig(context.Background(), namespace, "ledger-reader", testenv.Permissions{
		Namespace: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}}}})
	if err != nil {
		t.Fatal(err)
	}
	path := t.TempDir() + "/reader.kubeconfig"
	if err := testenv.WriteKubeconfigOf(path, cfg); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestIncidentsCommand: herald incidents, run as a user who may only read
// ConfigMaps in herald's namespace, lists exactly the incidents open in a
// running herald's ledger (not the one that resolved), in both formats,
// with a paced update shown as held.
func TestIncidentsCommand(t *testing.T) {
	beside(t)
	env := controlPlanes.Get(t)
	client, _ := env.Client()
	recv := newReceiver(t)
	createNamespaces(t, client, "shop")
	h := startedHerald(t, env, fmt.Sprintf(`
rules:
  - {name: pod-crashloop, kind: Pod, detector: crashloop, namespaces: {include: [default]}, sinks: [hook]}
  - {name: shop-crashloop, kind: Pod, detector: crashloop, groupBy: workload, updateInterval: 10m, namespaces: {include: [shop]}, sinks: [hook]}
sinks:
  - {name: hook, webhook: {url: %s/herald}}
`, recv.URL))
	defer h.stop()
	crashPods(t, client, "app", 3)
	for _, pod := range deploymentPods(t, client, "shop", "api", 2) {
		setStatusIn(t, client, "shop", pod, crashLooping, 2)
	}
	// One more, muted for an hour by its annotation: open, never sent.
	quiet := newPod("quiet-0")
	quiet.Annotations = map[string]string{"herald.io/silence-until": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}
	if _, err := client.CoreV1().Pods("default").Create(context.Background(), quiet, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	setStatus(t, client, "quiet-0", crashLooping, 2)
	recv.collect(t, 4, 10*time.Second) // three firings and the workload's
	if err := client.CoreV1().Pods("default").Delete(context.Background(), "app-2", metav1.DeleteOptions{GracePeriodSeconds: ptrTo(int64(0))}); err != nil {
		t.Fatal(err)
	}
	if p := recv.next(t, 10*time.Second); p.Transition != "resolved" || p.Object.Name != "app-2" {
		t.Fatalf("got %s for %s, want app-2 resolved", p.Transition, p.Object.Name)
	}
	ledgerSettled(t, env, "app-0", "app-1", "api", "quiet-0")
	ledgerResolved(t, env, "app-2")
	kc := readOnlyKubeconfig(t, env, "default")

	var stdout, stderr bytes.Buffer
	if code := runMain(context.Background(), []string{"incidents", "--kubeconfig", kc, "--namespace", "default", "-o", "json"}, &stdout, &stderr); code != 0 {
		t.Fatalf("herald incidents -o json: exit %d: %s", code, stderr.String())
	}
	var open []openIncident
	if err := json.Unmarshal(stdout.Bytes(), &open); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout.String())
	}
	var objects []string
	for _, o := range open {
		objects = append(objects, o.Object)
		if o.Object == "Pod/default/quiet-0" {
			if o.Seq != 0 || o.MutedBy != "annotation herald.io/silence-until on Pod/default/quiet-0" || o.MutedUntil == nil {
				t.Errorf("the muted incident: #%d muted by %q until %v", o.Seq, o.MutedBy, o.MutedUntil)
			}
			continue
		}
		if o.LastTransition != "firing" || o.Seq != 1 || o.Since.IsZero() {
			t.Errorf("%s: last %s #%d since %s, want firing #1", o.Object, o.LastTransition, o.Seq, o.Since)
		}
	}
	slices.Sort(objects)
	if want := []string{"Deployment/shop/api", "Pod/default/app-0", "Pod/default/app-1", "Pod/default/quiet-0"}; !slices.Equal(objects, want) {
		t.Fatalf("open incidents %v, want %v", objects, want)
	}
	for _, o := range open {
		if o.Object == "Deployment/shop/api" && (o.HeldUntil == nil || o.Pods != "2/2") {
			t.Errorf("the workload's incident: pods %s, held %v; want 2/2 and an update held", o.Pods, o.HeldUntil)
		}
	}

	stdout.Reset()
	if code := runMain(context.Background(), []string{"incidents", "--kubeconfig", kc, "--namespace", "default"}, &stdout, &stderr); code != 0 {
		t.Fatalf("herald incidents: exit %d: %s", code, stderr.String())
	}
	table := stdout.String()
	t.Logf("herald incidents:\n%s", table)
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if len(lines) != 6 || !strings.HasPrefix(lines[0], "RULE") || lines[5] != "4 open incidents" || strings.Contains(table, "app-2") {
		t.Errorf("table: want a header, 4 rows and a count, without app-2:\n%s", table)
	}
	if !strings.Contains(table, "update held") || !strings.Contains(table, "muted: annotation herald.io/silence-until on Pod/default/quiet-0 for 59m") {
		t.Errorf("the table does not show the held update and the muted incident:\n%s", table)
	}

	// Elsewhere, without permission: a clear error, not an empty list.
	stdout.Reset()
	stderr.Reset()
	if code := runMain(context.Background(), []string{"incidents", "--kubeconfig", kc, "--namespace", "shop"}, &stdout, &stderr); code != 1 ||
		!strings.Contains(stderr.String(), "forbidden") {
		t.Errorf("without permission: exit %d, %q", code, stderr.String())
	}
}
