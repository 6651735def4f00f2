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

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/herald-k8s/herald/internal/silence"
	"github.com/herald-k8s/herald/internal/testenv"
	"github.com/herald-k8s/herald/sinks"
)

const (
	silenceCRDs        = "../../charts/herald/crds/silences.herald.io.yaml"
	clusterSilenceCRDs = "../../charts/herald/crds/clustersilences.herald.io.yaml"
)

func silenceConfig(url string) string {
	return fmt.Sprintf(`
incidents: {resolveHoldDown: 0s, updateInterval: 0s}
rules:
  - {name: crash, kind: Pod, detector: crashloop, groupBy: workload, sinks: [hook]}
  - {name: node-down, kind: Node, detector: node-not-ready, updateInterval: 5s, sinks: [hook]}
  - {name: rollout, kind: Deployment, detector: rollout-stuck, sinks: [hook]}
sinks:
  - {name: hook, webhook: {url: %s/herald}}
`, url)
}

// silences is where silences of namespace ns live: "" the
// ClusterSilences.
func silences(dyn dynamic.Interface, ns string) dynamic.ResourceInterface {
	if ns == "" {
		return dyn.Resource(silence.ClusterResource)
	}
	return dyn.Resource(silence.Resource).Namespace(ns)
}

// createSilence makes a Silence (ns "": a ClusterSilence) through the
// API, as kubectl would.
func createSilence(t *testing.T, dyn dynamic.Interface, ns, name string, matchers map[string]any, ends time.Time) {
	t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "herald.io/v1alpha1", "kind": "Silence",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"matchers": matchers, "endsAt": ends.UTC().Format(time.RFC3339)},
	}}
	if ns == "" {
		obj.SetKind("ClusterSilence")
		unstructured.RemoveNestedField(obj.Object, "metadata", "namespace")
	}
	if _, err := silences(dyn, ns).Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// silenceStatus waits until herald reports state and muted incidents on
// a Silence (ns "": a ClusterSilence).
func silenceStatus(t *testing.T, dyn dynamic.Interface, ns, name, state string, muted int64) {
	t.Helper()
	var got map[string]any
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
		obj, err := silences(dyn, ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		got, _, _ = unstructured.NestedMap(obj.Object, "status")
		n, _, _ := unstructured.NestedInt64(obj.Object, "status", "mutedIncidents")
		s, _, _ := unstructured.NestedString(obj.Object, "status", "state")
		return s == state && n == muted, nil
	})
	if err != nil {
		t.Errorf("silence %s/%s status %v, want state %s and %d muted incidents", ns, name, got, state, muted)
	}
}

// crashDeployment crash-loops n pods of Deployment deploy in ns.
func crashDeployment(t *testing.T, client kubernetes.Interface, ns, deploy string, n int) []string {
	t.Helper()
	pods := deploymentPods(t, client, ns, deploy, n)
	for _, p := range pods {
		setStatusIn(t, client, ns, p, crashLooping, 3)
	}
	return pods
}

func ofWorkload(ns, name string) func(sinks.Payload) bool {
	return func(p sinks.Payload) bool { return p.Object.Namespace == ns && p.Object.Name == name }
}

// mutingHarness is one control plane with the Silence CRD from the
// chart's crds/ and herald running on it, for the muting tests.
type mutingHarness struct {
	env       *testenv.Env
	client    kubernetes.Interface
	dyn       dynamic.Interface
	recv      *receiver
	got       *arrivals
	metrics   string
	args      []string
	h         *heraldRun
	sentinels int
}

// TestMuting runs the muting tests on one control plane and one herald.
func TestMuting(t *testing.T) {
	beside(t)
	m := newMutingHarness(t)
	t.Run("Silences", m.silences)
	t.Run("Inhibition", m.inhibition)
}

func newMutingHarness(t *testing.T) *mutingHarness {
	env := controlPlanes.Get(t)
	ctx := context.Background()
	for _, file := range []string{silenceCRDs, clusterSilenceCRDs} {
		if err := env.InstallCRDs(ctx, file); err != nil {
			t.Fatal(err)
		}
	}
	client, _ := env.Client()
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	createNamespaces(t, client, "herald", "team-a", "team-b", "team-c", "team-d", "team-e", "team-f")
	m := &mutingHarness{env: env, client: client, dyn: dyn, recv: newReceiver(t), metrics: freeAddr(t)}
	m.got = record(m.recv)
	m.args = []string{"--namespace", "herald", "--metrics-addr", m.metrics}
	m.h = startedHerald(t, env, silenceConfig(m.recv.URL), m.args...)
	t.Cleanup(func() { m.h.stop() })
	if logs := m.h.logs.String(); strings.Contains(logs, "Silence resources are off") || strings.Contains(logs, "ClusterSilences (muting across namespaces) are off") {
		t.Fatalf("silences off with the CRD installed:\n%s", logs)
	}
	return m
}

// sentinel crash-loops a new unmuted workload and waits for its firing:
// the reconciles of anything changed before it have run.
func (m *mutingHarness) sentinel(t *testing.T) {
	t.Helper()
	m.sentinels++
	name := fmt.Sprintf("sentinel-%d", m.sentinels)
	crashDeployment(t, m.client, "team-c", name, 1)
	m.got.await(t, 1, 15*time.Second, ofWorkload("team-c", name))
}

// silences: a silenced crash loop says nothing while the silence lasts
// and fires once when it ends (across a herald restart); one that
// recovers under the silence says nothing at all; a Silence mutes only
// its own namespace, herald's own included (herald warns at start about
// one there that used to mute others); a ClusterSilence mutes any.
func (m *mutingHarness) silences(t *testing.T) {
	client, dyn, got, metrics := m.client, m.dyn, m.got, m.metrics
	ctx := context.Background()
	sentinel := func() { t.Helper(); m.sentinel(t) }
	before := len(got.matching(inNamespace("team-c")))

	// A Deployment silenced for 20 s, still failing when it ends: time
	// for the checks and a herald restart under the silence, even on a
	// loaded machine (they take 3–5 s).
	ends := time.Now().Add(20 * time.Second).Truncate(time.Second)
	createSilence(t, dyn, "team-a", "deploy-api", map[string]any{"workload": "api"}, ends)
	// Recovered before its silence (12 s) ends.
	recoveredEnds := time.Now().Add(12 * time.Second).Truncate(time.Second)
	createSilence(t, dyn, "team-a", "deploy-worker", map[string]any{"workload": "worker"}, recoveredEnds)
	// Not yours: team-b's silence for everything cannot mute team-c.
	createSilence(t, dyn, "team-b", "everything", map[string]any{"name": "*"}, ends.Add(time.Hour))
	// Cluster-wide: a ClusterSilence may mute team-d.
	createSilence(t, dyn, "", "team-d-maintenance", map[string]any{"namespace": "team-d"}, ends.Add(time.Hour))
	// herald's own namespace is not cluster-wide (it used to be).
	createSilence(t, dyn, "herald", "team-f-maintenance", map[string]any{"namespace": "team-f"}, ends.Add(time.Hour))

	crashDeployment(t, client, "team-a", "api", 3)
	worker := crashDeployment(t, client, "team-a", "worker", 2)
	crashDeployment(t, client, "team-d", "db", 2)
	crashDeployment(t, client, "team-f", "db", 1)
	got.await(t, 1, 15*time.Second, ofWorkload("team-f", "db"))
	sentinel() // also: team-b's silence did not mute team-c
	if muted := metricValue(t, metrics, `herald_incidents_muted{rule="crash"}`); muted != 3 {
		t.Errorf("herald_incidents_muted = %v, want 3 (api, worker, db)", muted)
	}
	silenceStatus(t, dyn, "team-a", "deploy-api", "active", 1)
	silenceStatus(t, dyn, "", "team-d-maintenance", "active", 1)
	silenceStatus(t, dyn, "team-b", "everything", "active", 0)
	silenceStatus(t, dyn, "herald", "team-f-maintenance", "active", 0)
	for _, p := range worker {
		if err := client.CoreV1().Pods("team-a").Delete(ctx, p, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// Restarted mid-silence: nothing re-sent, the silence still honoured.
	m.h.stop()
	m.h = startedHerald(t, m.env, silenceConfig(m.recv.URL), m.args...)
	if logs := m.h.logs.String(); !strings.Contains(logs, `msg="a Silence in herald's own namespace no longer mutes other namespaces: it mutes only incidents in herald. To mute across namespaces, recreate it as a ClusterSilence`) ||
		!strings.Contains(logs, "silence=herald/team-f-maintenance") {
		t.Errorf("no warning at start about herald/team-f-maintenance:\n%s", logs)
	}
	sentinel()
	if early := got.matching(func(p sinks.Payload) bool { return p.Object.Namespace != "team-c" && p.Object.Namespace != "team-f" }); len(early) != 0 ||
		len(got.matching(inNamespace("team-c"))) != before+2 || len(got.matching(inNamespace("team-f"))) != 1 {
		t.Fatalf("under the silences, across a restart: %s; want only the two sentinels' firings and team-f's", got)
	}

	// The api silence ends: one firing within a few seconds.
	api := got.await(t, 1, 30*time.Second, ofWorkload("team-a", "api"))
	late := api[0].at.Sub(ends)
	if late < 0 || late > 3*time.Second {
		t.Errorf("api's firing arrived %s after its silence ended, want within 3s", late)
	}
	if p := api[0].p; p.Transition != "firing" || !strings.Contains(p.Title, "3/3 pods") {
		t.Errorf("when the silence ended: %s %q, want the firing of 3/3 pods", p.Transition, p.Title)
	}
	sentinel()
	silenceStatus(t, dyn, "team-a", "deploy-api", "expired", 0)
	if n := len(got.matching(ofWorkload("team-a", "api"))); n != 1 {
		t.Errorf("%d notifications for api, want 1: %s", n, got)
	}
	if n := len(got.matching(ofWorkload("team-a", "worker"))) + len(got.matching(inNamespace("team-d"))); n != 0 {
		t.Errorf("worker (recovered under its silence) or team-d (cluster-wide silence) notified: %s", got)
	}
	if n := metricValue(t, metrics, `herald_notifications_silenced_total{rule="crash"}`); n == 0 {
		t.Errorf("herald_notifications_silenced_total is 0 after a restart with muted incidents open")
	}
	// A silence that starts covering an announced incident: one
	// "silenced" notification saying until when and which silence.
	createSilence(t, dyn, "team-c", "quiet-sentinel", map[string]any{"workload": "sentinel-1"}, time.Now().Add(time.Hour))
	quiet := got.await(t, 2, 10*time.Second, ofWorkload("team-c", "sentinel-1"))[1].p
	if quiet.Transition != "silenced" || !strings.Contains(quiet.Change, "(silence team-c/quiet-sentinel)") || !strings.HasPrefix(quiet.Change, "silenced until ") {
		t.Errorf("a silence covering an announced incident sent %s %q; want silenced, saying until when and which silence", quiet.Transition, quiet.Change)
	}
	// An annotation 10 years out on an announced incident's pod: one
	// "silenced" saying which annotation, on which object, and the cap
	// (30 days), which is also when herald incidents says it ends.
	decade := time.Now().AddDate(10, 0, 0).UTC().Truncate(time.Second)
	patch := `{"metadata":{"annotations":{"herald.io/silence-until":"` + decade.Format(time.RFC3339) + `"}}}`
	if _, err := client.CoreV1().Pods("team-c").Patch(ctx, "sentinel-2-5d8f-0", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	capped := got.await(t, 2, 10*time.Second, ofWorkload("team-c", "sentinel-2"))[1].p
	wantBy := "annotation herald.io/silence-until on Pod/team-c/sentinel-2-5d8f-0; it asks until " + decade.Format(time.RFC3339) + ", capped at 30 days"
	if capped.Transition != "silenced" || !strings.HasSuffix(capped.Change, "("+wantBy+")") {
		t.Errorf("an annotation 10 years out sent %s %q; want silenced by %q", capped.Transition, capped.Change, wantBy)
	}
	kc := t.TempDir() + "/admin.kubeconfig"
	m.env.WriteKubeconfig(kc)
	var said openIncident
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		var out, errOut bytes.Buffer
		if code := runMain(ctx, []string{"incidents", "--kubeconfig", kc, "--namespace", "herald", "-o", "json"}, &out, &errOut); code != 0 {
			return false, fmt.Errorf("herald incidents: exit %d: %s", code, errOut.String())
		}
		var open []openIncident
		if err := json.Unmarshal(out.Bytes(), &open); err != nil {
			return false, err
		}
		if i := slices.IndexFunc(open, func(o openIncident) bool { return strings.HasSuffix(o.Object, "/team-c/sentinel-2") }); i >= 0 {
			said = open[i]
		}
		return said.MutedBy != "", nil // the ledger is written within a second or so
	})
	if err != nil || said.MutedBy != wantBy || said.MutedUntil == nil || said.MutedUntil.After(time.Now().Add(30*24*time.Hour)) || said.MutedUntil.Before(time.Now().Add(30*24*time.Hour-time.Minute)) {
		t.Errorf("herald incidents says of sentinel-2: %+v (%v); want muted by %q until 30 days from now", said, err, wantBy)
	}
	t.Logf("api's firing %s after its silence ended; all deliveries: %s", late.Round(10*time.Millisecond), got)
}

// setNodeReady creates node (first call) and writes its Ready condition.
func setNodeReady(t *testing.T, client kubernetes.Interface, name string, ready bool) {
	t.Helper()
	ctx := context.Background()
	node, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		node, err = client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
	cond := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		LastTransitionTime: metav1.NewTime(time.Now().Add(-10 * time.Minute))}
	if !ready {
		cond.Status, cond.Reason, cond.Message = corev1.ConditionUnknown, "NodeStatusUnknown", "Kubelet stopped posting node status."
	}
	node.Status.Conditions = []corev1.NodeCondition{cond}
	if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// setRolloutStuck creates Deployment name in ns whose rollout has passed
// its progress deadline, as the deployment controller reports it.
func setRolloutStuck(t *testing.T, client kubernetes.Interface, ns, name string) {
	t.Helper()
	ctx := context.Background()
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example.com/app:2"}}}},
	}}
	d, err := client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.Status = appsv1.DeploymentStatus{Replicas: 3, UnavailableReplicas: 3, Conditions: []appsv1.DeploymentCondition{{
		Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded",
		Message: `ReplicaSet "` + name + `-5d8f" has timed out progressing.`, LastTransitionTime: metav1.Now()}}}
	if _, err := client.AppsV1().Deployments(ns).UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// inhibition: a NotReady node with 12 crash-looping pods on it is one
// alert, the node's (updated to say it explains 12); when the node
// recovers while the pods still crash,
// their incidents go out then. A stuck rollout and its pods' crash loop
// are one alert, whichever comes first.
func (m *mutingHarness) inhibition(t *testing.T) {
	client, got := m.client, m.got
	onNode := func(p sinks.Payload) bool { return p.Object.Kind == "Node" || p.Object.Namespace == "team-e" }

	setNodeReady(t, client, "node-1", false)
	got.await(t, 1, 15*time.Second, func(p sinks.Payload) bool { return p.Object.Kind == "Node" && p.Transition == "firing" })
	for i := range 12 {
		pods := deploymentPodsOn(t, client, "team-e", fmt.Sprintf("app-%d", i), 1, "node-1")
		setStatusIn(t, client, "team-e", pods[0], crashLooping, 3)
	}
	m.sentinel(t)
	// One alert, the node's: its firing, then (paced) an update that
	// says how many pods' incidents it explains.
	sent := got.await(t, 2, 20*time.Second, onNode)
	if len(sent) != 2 || sent[1].p.Object.Kind != "Node" || sent[1].p.Transition != "updated" || sent[1].p.Change != "explains 0 → 12 other incidents (muted while it is open)" {
		t.Fatalf("node NotReady with 12 crash-looping pods: %s; want the node's firing and one update saying it explains 12", got)
	}
	if muted := metricValue(t, m.metrics, `herald_incidents_muted{rule="crash"}`); muted < 12 {
		t.Errorf("herald_incidents_muted{rule=crash} = %v, want at least the 12 inhibited", muted)
	}
	setNodeReady(t, client, "node-1", true)
	got.await(t, 2+1+12, 15*time.Second, onNode) // the node's resolved, then the pods' firings
	for _, x := range got.matching(onNode)[2:] {
		if x.p.Object.Kind == "Node" && x.p.Transition != "resolved" || x.p.Object.Kind != "Node" && x.p.Transition != "firing" {
			t.Errorf("after the node recovered: %s %s/%s", x.p.Transition, x.p.Object.Namespace, x.p.Object.Name)
		}
	}

	// The rollout is stuck first: its pods' crash loop adds nothing.
	setRolloutStuck(t, client, "team-e", "api")
	got.await(t, 1, 15*time.Second, func(p sinks.Payload) bool { return p.Incident.Rule == "rollout" && p.Object.Name == "api" })
	crashDeployment(t, client, "team-e", "api", 3)
	// The crash loop first: the stuck rollout later adds nothing.
	crashDeployment(t, client, "team-e", "web", 3)
	got.await(t, 1, 15*time.Second, ofWorkload("team-e", "web"))
	setRolloutStuck(t, client, "team-e", "web")
	m.sentinel(t)
	// One alert: one incident, whose own updates may follow.
	for _, name := range []string{"api", "web"} {
		incidents, firings := map[string]bool{}, 0
		for _, x := range got.matching(ofWorkload("team-e", name)) {
			incidents[x.p.Incident.ID] = true
			if x.p.Transition == "firing" {
				firings++
			}
		}
		if len(incidents) != 1 || firings != 1 {
			t.Errorf("stuck rollout %s with crash-looping pods: %d incidents, %d firings, want 1: %s", name, len(incidents), firings, got)
		}
	}
}
