package main

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/herald-k8s/herald/sinks"
)

// TestDryRunShowsExclusions: herald test names, for each excluded
// finding, the exclusion that dropped it and what it matched.
func TestDryRunShowsExclusions(t *testing.T) {
	beside(t)
	var stdout, stderr bytes.Buffer
	code := runMain(context.Background(), []string{"test", "-f", "testdata/exclude.yaml", "--object", "testdata/exclude-pods.yaml"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	want := `Pod shop/web: rule crash FIRES [critical → out]
  title: CrashLoopBackOff: Pod shop/web container app
  text:  CrashLoopBackOff: Pod shop/web container app: restarted 5 times, last exit code 2 (Error)
Pod shop/web: rule crash EXCLUDED (CrashLoopBackOff container istio-proxy): excluded by rules[0].exclude.containers "istio-proxy" (container istio-proxy)
Pod shop/db-client: rule crash EXCLUDED (CrashLoopBackOff container app): excluded by rules[0].exclude.logPattern "connection refused .* retrying" (fact lastMessage)
2 objects tested, 1 findings, 2 excluded
`
	if stdout.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", stdout.String(), want)
	}
}

// crashPod is a pod whose containers all crash-loop, each with its last
// termination message (msgs: container name → message).
type crashPod struct {
	ns, name    string
	labels      map[string]string
	annotations map[string]string
	owner       *metav1.OwnerReference
	msgs        map[string]string
}

// create makes the pod and writes its status through /status, as a
// kubelet would.
func (p crashPod) create(t *testing.T, client kubernetes.Interface) {
	t.Helper()
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: p.ns, Labels: p.labels, Annotations: p.annotations}}
	if p.owner != nil {
		pod.OwnerReferences = []metav1.OwnerReference{*p.owner}
	}
	for _, c := range slices.Sorted(maps.Keys(p.msgs)) {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: c, Image: "example.com/" + c + ":1"})
	}
	created, err := client.CoreV1().Pods(p.ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status = corev1.PodStatus{Phase: corev1.PodRunning}
	for _, c := range pod.Spec.Containers {
		created.Status.ContainerStatuses = append(created.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, RestartCount: 3,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 1, Reason: "Error", Message: p.msgs[c.Name], FinishedAt: metav1.Now()}},
		})
	}
	if _, err := client.CoreV1().Pods(p.ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestExcludeEndToEnd: for each kind of exclusion, on the real API
// server and through herald run (watch, cache, rules, incidents,
// webhook): the excluded pod (or container) is evaluated — the exclusion
// is counted — and sends nothing, while a pod of the same rule that the
// exclusion does not match fires in the same run.
func TestExcludeEndToEnd(t *testing.T) {
	beside(t)
	env := controlPlanes.Get(t)
	client, err := env.Client()
	if err != nil {
		t.Fatal(err)
	}
	recv := newReceiver(t)
	metricsAddr := freeAddr(t)
	rule := func(name, exclude string) string {
		return fmt.Sprintf("  - {name: ex-%s, kind: Pod, detector: crashloop, labels: case=%s, restartStep: -1, sinks: [hook], exclude: %s}\n", name, name, exclude)
	}
	startHeraldArgs(t, env, "rules:\n"+
		rule("names", `{names: ["batch-*", "*-canary"]}`)+
		rule("containers", `{containers: ["istio-*"]}`)+
		rule("namespaces", `{namespaces: ["sandbox-*"]}`)+
		rule("labels", `{labels: "team=experiments"}`)+
		rule("logpattern", `{logPattern: "connection refused .* retrying"}`)+
		rule("when", `{when: "has(object.metadata.annotations) && object.metadata.annotations['example.com/expected-crash'] == 'true'"}`)+
		fmt.Sprintf("sinks:\n  - {name: hook, webhook: {url: %s/herald}}\n", recv.URL),
		"--metrics-addr", metricsAddr)
	ctx := context.Background()
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "sandbox-1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// excluded: default/name or default/name:container, for every
	// notification received.
	excluded := map[string]bool{}
	check := func(t *testing.T, p sinks.Payload) {
		t.Helper()
		if excluded[p.Object.Namespace+"/"+p.Object.Name] || excluded[p.Object.Namespace+"/"+p.Object.Name+":"+p.Container] {
			t.Errorf("excluded %s/%s container %s was notified: %+v", p.Object.Namespace, p.Object.Name, p.Container, p)
		}
	}
	// fires waits for the firing of ns/name's container, checking every
	// notification on the way.
	fires := func(t *testing.T, ns, name, container string) {
		t.Helper()
		for {
			p := recv.next(t, 15*time.Second)
			check(t, p)
			if p.Transition == "firing" && p.Object.Namespace == ns && p.Object.Name == name && p.Container == container {
				return
			}
		}
	}
	counted := func(t *testing.T, rule, by string, want float64) {
		t.Helper()
		sample := fmt.Sprintf(`herald_findings_excluded_total{by=%q,rule=%q}`, by, rule)
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 15*time.Second, true, func(context.Context) (bool, error) {
			return metricValue(t, metricsAddr, sample) >= want, nil
		})
		if err != nil {
			t.Errorf("%s = %v, want %v or more: the excluded finding was not made and dropped", sample, metricValue(t, metricsAddr, sample), want)
		}
	}
	app := map[string]string{"app": "panic: boom"}
	caseLabels := func(c string, extra ...string) map[string]string {
		l := map[string]string{"case": c}
		for i := 0; i+1 < len(extra); i += 2 {
			l[extra[i]] = extra[i+1]
		}
		return l
	}
	yes := true

	t.Run("names", func(t *testing.T) {
		excluded["default/batch-7"], excluded["default/web-canary-5d4f-x1"] = true, true
		crashPod{ns: "default", name: "batch-7", labels: caseLabels("names"), msgs: app}.create(t, client)
		// Excluded by its Deployment's name (through the ReplicaSet).
		crashPod{ns: "default", name: "web-canary-5d4f-x1", labels: caseLabels("names", "pod-template-hash", "5d4f"), msgs: app,
			owner: &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-canary-5d4f", UID: "rs-1", Controller: &yes}}.create(t, client)
		crashPod{ns: "default", name: "api-1", labels: caseLabels("names"), msgs: app}.create(t, client)
		fires(t, "default", "api-1", "app")
		counted(t, "ex-names", "names", 2)
	})
	t.Run("containers", func(t *testing.T) {
		excluded["default/mesh-1:istio-proxy"] = true
		crashPod{ns: "default", name: "mesh-1", labels: caseLabels("containers"), msgs: map[string]string{"app": "panic", "istio-proxy": "envoy exited"}}.create(t, client)
		fires(t, "default", "mesh-1", "app")
		counted(t, "ex-containers", "containers", 1)
	})
	t.Run("namespaces", func(t *testing.T) {
		excluded["sandbox-1/try-1"] = true
		crashPod{ns: "sandbox-1", name: "try-1", labels: caseLabels("namespaces"), msgs: app}.create(t, client)
		crashPod{ns: "default", name: "try-1", labels: caseLabels("namespaces"), msgs: app}.create(t, client)
		fires(t, "default", "try-1", "app")
		counted(t, "ex-namespaces", "namespaces", 1)
	})
	t.Run("labels", func(t *testing.T) {
		excluded["default/exp-1"] = true
		crashPod{ns: "default", name: "exp-1", labels: caseLabels("labels", "team", "experiments"), msgs: app}.create(t, client)
		crashPod{ns: "default", name: "pay-1", labels: caseLabels("labels", "team", "payments"), msgs: app}.create(t, client)
		fires(t, "default", "pay-1", "app")
		counted(t, "ex-labels", "labels", 1)
	})
	t.Run("logPattern", func(t *testing.T) {
		excluded["default/client-1"] = true
		crashPod{ns: "default", name: "client-1", labels: caseLabels("logpattern"),
			msgs: map[string]string{"app": "dial db:5432: connection refused (attempt 3), retrying"}}.create(t, client)
		crashPod{ns: "default", name: "client-2", labels: caseLabels("logpattern"),
			msgs: map[string]string{"app": "panic: nil map"}}.create(t, client)
		fires(t, "default", "client-2", "app")
		counted(t, "ex-logpattern", "logPattern", 1)
	})
	t.Run("when on a built-in detector", func(t *testing.T) {
		excluded["default/quiet-1"] = true
		crashPod{ns: "default", name: "quiet-1", labels: caseLabels("when"), msgs: app,
			annotations: map[string]string{"example.com/expected-crash": "true"}}.create(t, client)
		crashPod{ns: "default", name: "loud-1", labels: caseLabels("when"), msgs: app,
			annotations: map[string]string{"example.com/expected-crash": "false"}}.create(t, client)
		fires(t, "default", "loud-1", "app")
		counted(t, "ex-when", "when", 1)
	})
	// Every excluded object has been evaluated (counted) before this
	// one is made: a notification of theirs would arrive before its.
	crashPod{ns: "default", name: "sentinel", labels: caseLabels("names"), msgs: app}.create(t, client)
	fires(t, "default", "sentinel", "app")
}
