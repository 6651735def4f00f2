package realnode

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/herald-k8s/herald/internal/testenv"
)

// namespace creates a namespace for one test.
func namespace(t *testing.T, name string) {
	t.Helper()
	_, err := client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

var workload = testenv.WorkloadContainer

// deployment creates a Deployment of replicas pods of container.
func deployment(t *testing.T, ns, name string, replicas int32, c corev1.Container) *appsv1.Deployment {
	t.Helper()
	d, err := client.AppsV1().Deployments(ns).Create(context.Background(), testenv.WorkloadDeployment(ns, name, replicas, c), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// patchDeployment applies a strategic merge patch.
func patchDeployment(t *testing.T, ns, name, patch string) *appsv1.Deployment {
	t.Helper()
	d, err := client.AppsV1().Deployments(ns).Patch(context.Background(), name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("patching deployment %s/%s: %v", ns, name, err)
	}
	return d
}

// podsOf returns the pods of app in ns.
func podsOf(t *testing.T, ns, app string) []corev1.Pod {
	t.Helper()
	pods, err := client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		t.Fatal(err)
	}
	return pods.Items
}

// awaitPods waits until cond holds for app's pods.
func awaitPods(t *testing.T, ns, app string, timeout time.Duration, what string, cond func([]corev1.Pod) bool) {
	t.Helper()
	var pods []corev1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		pods = podsOf(t, ns, app)
		return cond(pods), nil
	})
	if err != nil {
		var states []string
		for _, p := range pods {
			for _, cs := range p.Status.ContainerStatuses {
				states = append(states, p.Name+": "+stateOf(cs))
			}
		}
		t.Fatalf("%s: not within %s; pods: %v", what, timeout, states)
	}
}

func stateOf(cs corev1.ContainerStatus) string {
	switch {
	case cs.State.Waiting != nil:
		return "waiting " + cs.State.Waiting.Reason
	case cs.State.Terminated != nil:
		return "terminated " + cs.State.Terminated.Reason
	case cs.State.Running != nil:
		return "running"
	}
	return "unknown"
}

func restarts(pods []corev1.Pod) int32 {
	var n int32
	for _, p := range pods {
		for _, cs := range p.Status.ContainerStatuses {
			n += cs.RestartCount
		}
	}
	return n
}

// TestRealNode runs the pod failures in parallel, each in its namespace,
// and beside them what changed before a crash; then the node failure,
// which would disturb them.
func TestRealNode(t *testing.T) {
	heraldRestarted = newGate()
	// The "What changed" tests wait for CrashLoop's herald restart, then
	// wait out a minute's window: they run beside the pod tests, not
	// among them, so that they hold none of go test's parallel slots
	// while they wait (with a small -parallel, CrashLoop could be left
	// waiting for the slot they hold).
	var whatChanged sync.WaitGroup
	whatChanged.Go(func() { t.Run("WhatChanged", testWhatChanged) })
	t.Run("pods", func(t *testing.T) {
		t.Run("CrashLoop", testCrashLoop)
		t.Run("OOMKilled", testOOMKilled)
		t.Run("ConfigError", testConfigError)
		t.Run("ImagePull", testImagePull)
		t.Run("QuietChanges", testQuietChanges)
	})
	heraldRestarted.open() // CrashLoop did not run (go test -run)
	whatChanged.Wait()
	t.Run("NodeNotReady", testNodeNotReady)
	t.Run("NothingSentTwice", testNothingSentTwice)
}

// A Deployment whose container exits 1: one firing crash-loop alert,
// with the container's real log lines and its restart count, and nothing
// more while the kubelet keeps restarting it, across a herald restart.
func testCrashLoop(t *testing.T) {
	defer heraldRestarted.open() // failed before the restart
	t.Parallel()
	namespace(t, "crash")
	created := deployment(t, "crash", "api", 1, workload("-log", "starting api v2,config: missing key DATABASE_URL,exiting", "-exit", "1")).CreationTimestamp.Time
	got := hook.await(t, "crash", 90*time.Second, "crash-loop firing", func(ds []delivery) bool { return count(ds, "pod-crashloop", "firing") > 0 })
	firing := got[0]
	if firing.Incident.Rule != "pod-crashloop" || firing.Transition != "firing" || firing.Incident.Reason != "CrashLoopBackOff" {
		t.Fatalf("first delivery %s %s %s, want a pod-crashloop firing (CrashLoopBackOff): %s", firing.Transition, firing.Incident.Rule, firing.Incident.Reason, describe(got))
	}
	if firing.Facts["restartCount"] == "" || firing.Facts["restartCount"] == "0" {
		t.Errorf("firing facts %v: want the restart count", firing.Facts)
	}
	// The kubelet removes dead containers as it goes: the first try
	// attached its "unable to retrieve container logs" line instead.
	ctx := firing.Context
	if ctx == nil || ctx.Logs == nil || !strings.Contains(strings.Join(ctx.Logs.Lines, "\n"), "config: missing key DATABASE_URL") ||
		strings.Contains(strings.Join(ctx.Logs.Lines, "\n"), "unable to retrieve") {
		t.Fatalf("firing context %+v: want the container's real log lines", ctx)
	}
	t.Logf("firing: %s (restarts %s), %s after the Deployment was created; log lines %q (previous instance: %v)", firing.Title, firing.Facts["restartCount"],
		firing.at.Sub(created).Round(100*time.Millisecond), ctx.Logs.Lines, ctx.Logs.Previous)

	// The kubelet keeps crashing it; herald restarts meanwhile.
	before := restarts(podsOf(t, "crash", "api"))
	if err := herald.restart(); err != nil {
		t.Fatal(err)
	}
	heraldRestarted.open()
	awaitPods(t, "crash", "api", 120*time.Second, "two more crash cycles", func(pods []corev1.Pod) bool { return restarts(pods) >= before+2 })
	got = hook.in("crash")
	if n := count(got, "pod-crashloop", "firing"); n != 1 {
		t.Errorf("%d crash-loop firings, want 1: %s", n, describe(got))
	}
	if n := count(got, "pod-crashloop", "resolved"); n != 0 {
		t.Errorf("a crash loop that never recovered resolved: %s", describe(got))
	}
	for _, d := range got {
		if d.Incident.Rule != "pod-crashloop" {
			t.Errorf("unexpected alert beside the crash loop: %s", describe([]delivery{d}))
		}
	}
}

// A container over its memory limit, killed by the kernel: one OOMKilled
// alert (and not a second one for the crash loop it then is in).
func testOOMKilled(t *testing.T) {
	t.Parallel()
	namespace(t, "oom")
	c := workload("-alloc-mb", "256")
	c.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("48Mi")}
	deployment(t, "oom", "hog", 1, c)
	got := hook.await(t, "oom", 90*time.Second, "OOMKilled firing", func(ds []delivery) bool { return count(ds, "pod-oomkilled", "firing") > 0 })
	awaitPods(t, "oom", "hog", 120*time.Second, "three OOM kills", func(pods []corev1.Pod) bool { return restarts(pods) >= 3 })
	got = hook.in("oom")
	if n := count(got, "pod-oomkilled", "firing"); n != 1 {
		t.Errorf("%d OOMKilled firings, want 1: %s", n, describe(got))
	}
	for _, d := range got {
		if d.Transition == "firing" && d.Incident.Rule != "pod-oomkilled" {
			t.Errorf("a second alert for the same OOM kills: %s", describe([]delivery{d}))
		}
	}
	if f := got[0].Facts; f["memoryLimit"] != "48Mi" {
		t.Errorf("OOMKilled facts %v: want memoryLimit 48Mi", f)
	}
}

// A container that references a Secret that does not exist: the kubelet
// holds it in CreateContainerConfigError; one alert.
func testConfigError(t *testing.T) {
	t.Parallel()
	namespace(t, "config")
	c := workload()
	c.Env = []corev1.EnvVar{{Name: "DATABASE_URL", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "db-credentials"}, Key: "url"}}}}
	deployment(t, "config", "billing", 1, c)
	got := hook.await(t, "config", 90*time.Second, "config-error firing", func(ds []delivery) bool { return len(ds) > 0 })
	// The kubelet's message names the Secret, and the alert names it
	// (text and facts); or, when the kubelet's Secret cache did not sync
	// within its time (a loaded machine), the alert says what the kubelet
	// said (docs/testing.md).
	named := func(d delivery) bool {
		return d.Facts["missingKind"] == "Secret" && d.Facts["missingName"] == "db-credentials" && strings.Contains(d.Text, "Secret config/db-credentials not found")
	}
	if d := got[0]; d.Incident.Rule != "pod-config-error" || d.Incident.Reason != "CreateContainerConfigError" ||
		!named(d) && !strings.Contains(d.Text, "failed to sync secret cache") {
		t.Errorf("first delivery: %s %s %s %q %v; want pod-config-error CreateContainerConfigError naming the missing Secret", d.Transition, d.Incident.Rule, d.Incident.Reason, d.Text, d.Facts)
	}
	t.Logf("config error: %s", got[0].Text)
	// The kubelet retries with each sync: still one alert.
	awaitPods(t, "config", "billing", 60*time.Second, "kubelet retries", func(pods []corev1.Pod) bool {
		return len(pods) == 1 && time.Since(pods[0].CreationTimestamp.Time) > 20*time.Second
	})
	if got := hook.in("config"); len(got) != 1 {
		t.Errorf("want one alert: %s", describe(got))
	}
}

// An image that does not exist: the kubelet's pull fails (no registry is
// reachable from the node) and alternates ErrImagePull and
// ImagePullBackOff; one alert.
func testImagePull(t *testing.T) {
	t.Parallel()
	namespace(t, "images")
	c := workload()
	c.Image, c.ImagePullPolicy = "herald.test/does-not-exist:1", corev1.PullIfNotPresent
	deployment(t, "images", "web", 1, c)
	got := hook.await(t, "images", 90*time.Second, "image-pull firing", func(ds []delivery) bool { return len(ds) > 0 })
	if d := got[0]; d.Incident.Rule != "pod-image-pull" || d.Transition != "firing" {
		t.Errorf("first delivery %s %s, want a pod-image-pull firing: %s", d.Transition, d.Incident.Rule, describe(got))
	}
	awaitPods(t, "images", "web", 90*time.Second, "the kubelet back off and retry", func(pods []corev1.Pod) bool {
		return len(pods) == 1 && time.Since(pods[0].CreationTimestamp.Time) > 30*time.Second
	})
	if got := hook.in("images"); len(got) != 1 {
		t.Errorf("want one alert: %s", describe(got))
	}
}

// A rolling update of a healthy Deployment, a scale-down and a Job that
// completes: no alert. A crashing sentinel pod started afterwards must
// be the namespace's first alert: herald has seen everything before it.
func testQuietChanges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	namespace(t, "quiet")
	c := workload("-ready-port", "8080")
	c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt(8080)}}, PeriodSeconds: 1}
	d := deployment(t, "quiet", "shop", 3, c)
	rolledOut := func(generation int64, replicas int32) func([]corev1.Pod) bool {
		return func([]corev1.Pod) bool {
			d, err := client.AppsV1().Deployments("quiet").Get(ctx, "shop", metav1.GetOptions{})
			return err == nil && d.Status.ObservedGeneration >= generation && d.Status.UpdatedReplicas == replicas &&
				d.Status.ReadyReplicas == replicas && d.Status.Replicas == replicas
		}
	}
	awaitPods(t, "quiet", "shop", 90*time.Second, "3 ready pods", rolledOut(d.Generation, 3))

	d = patchDeployment(t, "quiet", "shop", `{"spec":{"template":{"spec":{"containers":[{"name":"app","args":["-ready-port","8080","-log","v2"]}]}}}}`)
	awaitPods(t, "quiet", "shop", 90*time.Second, "rolling update done", rolledOut(d.Generation, 3))
	d = patchDeployment(t, "quiet", "shop", `{"spec":{"replicas":1}}`)
	awaitPods(t, "quiet", "shop", 60*time.Second, "scaled down to 1", func(pods []corev1.Pod) bool { return len(pods) == 1 && rolledOut(d.Generation, 1)(pods) })

	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "migrate", Namespace: "quiet"},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{workload("-log", "migrated", "-exit", "0")},
		}}},
	}
	if _, err := client.BatchV1().Jobs("quiet").Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		j, err := client.BatchV1().Jobs("quiet").Get(ctx, "migrate", metav1.GetOptions{})
		return err == nil && j.Status.Succeeded == 1, nil
	})
	if err != nil {
		t.Fatalf("job did not complete: %v", err)
	}

	deployment(t, "quiet", "sentinel", 1, workload("-exit", "1"))
	got := hook.await(t, "quiet", 90*time.Second, "the sentinel's alert", func(ds []delivery) bool { return len(ds) > 0 })
	if d := got[0]; d.Incident.Rule != "pod-crashloop" || !strings.Contains(d.Title, "sentinel") {
		t.Errorf("alerts for healthy changes: %s", describe(got))
	}
}

// The kubelet stopped: the real node lifecycle controller marks the node
// NotReady; one node alert. The kubelet back: resolved.
func testNodeNotReady(t *testing.T) {
	ctx := context.Background()
	podAlerts := func() []delivery {
		var out []delivery
		for _, d := range hook.all() {
			if d.Object.Kind != "Node" && d.Transition != "updated" {
				out = append(out, d)
			}
		}
		return out
	}
	before := len(podAlerts())
	env.Node.StopKubelet()
	got := hook.await(t, "", 90*time.Second, "node alert", func(ds []delivery) bool { return count(ds, "node-not-ready", "firing") > 0 })
	if d := got[0]; d.Object.Kind != "Node" || d.Object.Name != env.Node.Name {
		t.Errorf("node alert about %s %s, want Node %s", d.Object.Kind, d.Object.Name, env.Node.Name)
	}
	if err := env.Node.StartKubelet(ctx); err != nil {
		t.Fatal(err)
	}
	got = hook.await(t, "", 60*time.Second, "node resolved", func(ds []delivery) bool { return count(ds, "node-not-ready", "resolved") > 0 })
	if n := count(got, "node-not-ready", "firing"); n != 1 || len(got) != 2 {
		t.Errorf("want one firing and one resolved: %s", describe(got))
	}
	// The restarted kubelet rewrites every pod's status; the failing pods
	// of the other tests are still failing: no alert opens or closes. A
	// new crash loop started now alerts after the kubelet's first restart
	// and back-off (~8 s), longer than image-pull's `for`: the rewrites
	// have been made by then. A problem a rewrite hid resolves only after
	// the hold-down: that long more, and anything they caused has gone
	// out.
	namespace(t, "barrier")
	deployment(t, "barrier", "late", 1, workload("-exit", "1"))
	hook.await(t, "barrier", 90*time.Second, "the barrier's alert", func(ds []delivery) bool { return len(ds) > 0 })
	time.Sleep(resolveHoldDown + time.Second) // herald's own timer: nothing to wait on but the time
	before++                                  // the barrier's own
	if after := podAlerts(); len(after) != before {
		t.Errorf("pod alerts opened or closed by the node going away and coming back: %s", describe(after[before:]))
	}
}

// No notification went out twice, across the herald restart.
func testNothingSentTwice(t *testing.T) {
	seen := map[string]bool{}
	firings := map[string]int{}
	for _, d := range hook.all() {
		if seen[d.ID] {
			t.Errorf("delivered twice: %s", describe([]delivery{d}))
		}
		seen[d.ID] = true
		if d.Transition == "firing" {
			firings[d.Incident.ID]++
		}
	}
	for id, n := range firings {
		if n > 1 {
			t.Errorf("incident %s fired %d times", id, n)
		}
	}
}
