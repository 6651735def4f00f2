package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/herald-k8s/herald/internal/testenv"
)

// renderChartConfig renders the chart with helm, its default values but
// for the sinks (one webhook sink named slack, so the default rules'
// routes hold), and returns the herald configuration it ships.
func renderChartConfig(t *testing.T, hookURL string) string {
	t.Helper()
	return renderChart(t, "--set-json", fmt.Sprintf(`config.sinks=[{"name":"slack","webhook":{"url":"%s/herald"}}]`, hookURL),
		"--set-json", "secrets=[]")
}

// renderChart renders the chart with helm and the given value flags and
// returns the herald configuration its ConfigMap ships.
func renderChart(t *testing.T, args ...string) string {
	t.Helper()
	helmBin, err := testenv.EnsureHelm(context.Background(), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(helmBin, append([]string{"template", "herald", "../../charts/herald", "-n", "herald", "--kube-version", "1.36.3"}, args...)...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm template %v: %v\n%s", args, err, stderr.String())
	}
	for _, doc := range strings.Split(string(out), "\n---\n") {
		var cm struct {
			Kind string            `yaml:"kind"`
			Data map[string]string `yaml:"data"`
		}
		if yaml.Unmarshal([]byte(doc), &cm) == nil && cm.Kind == "ConfigMap" && cm.Data["config.yaml"] != "" {
			return cm.Data["config.yaml"]
		}
	}
	t.Fatalf("no ConfigMap with config.yaml in the rendered chart:\n%s", out)
	return ""
}

// podOf makes a pod owned (as controller) by kind/name, scheduled on a
// node so that a graceful delete leaves it terminating, as on a cluster.
func podOf(name, kind, owner string) *corev1.Pod {
	pod := newPod(name)
	pod.Spec.NodeName = "node-1"
	pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: owner, UID: types.UID("uid-" + owner), Controller: ptr.To(true)}}
	if kind == "Job" {
		pod.OwnerReferences[0].APIVersion = "batch/v1"
	}
	if kind == "ReplicaSet" {
		hash := owner[strings.LastIndex(owner, "-")+1:]
		pod.Labels["pod-template-hash"] = hash
	}
	return pod
}

// writeStatus creates pod if needed and writes its status as a kubelet
// would.
func writeStatus(t *testing.T, client kubernetes.Interface, pod *corev1.Pod, status corev1.PodStatus) {
	t.Helper()
	ctx := context.Background()
	cur, err := client.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		if cur, err = client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cur.Status = status
	if _, err := client.CoreV1().Pods("default").UpdateStatus(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func running(ready bool) corev1.PodStatus {
	c := func(name string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, Image: "example.com/" + name + ":1", Ready: ready,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}}
	}
	return corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{c("app"), c("sidecar")}}
}

func waiting(reason, message string) corev1.PodStatus {
	s := running(false)
	s.Phase = corev1.PodPending
	s.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}
	return s
}

// TestChartDefaultsCatchCommonFailures runs herald with the configuration
// the chart renders by default: a pod that cannot start for a missing
// Secret and an evicted pod each alert; a rolling update, a scale-down, a
// completed Job and label edits say nothing.
func TestChartDefaultsCatchCommonFailures(t *testing.T) {
	beside(t)
	env := controlPlanes.Get(t)
	client, _ := env.Client()
	recv := newReceiver(t)
	h := startedHerald(t, env, renderChartConfig(t, recv.URL))
	defer h.stop()
	ctx := context.Background()

	writeStatus(t, client, podOf("shop-7c9d-a", "ReplicaSet", "shop-7c9d"), waiting("CreateContainerConfigError", `secret "db-password" not found`))
	evicted := running(false)
	evicted.Phase, evicted.Reason, evicted.Message = corev1.PodFailed, "Evicted", "The node was low on resource: memory. Threshold quantity: 100Mi, available: 80Mi."
	writeStatus(t, client, podOf("batch-5f6a-b", "ReplicaSet", "batch-5f6a"), evicted)
	var reasons []string
	for range 2 {
		p := recv.next(t, 10*time.Second)
		if p.Transition != "firing" || p.Object.Kind != "Deployment" {
			t.Errorf("got %s for %s %s, want a firing for the Deployment", p.Transition, p.Object.Kind, p.Object.Name)
		}
		reasons = append(reasons, p.Incident.Rule+"/"+p.Incident.Reason)
	}
	slices.Sort(reasons)
	if want := []string{"pod-config-error/CreateContainerConfigError", "pod-evicted/Evicted"}; !slices.Equal(reasons, want) {
		t.Errorf("alerts %v, want %v", reasons, want)
	}

	// A rolling update of a healthy Deployment: new pods come up (pending,
	// creating, running, ready) while the old ones terminate and go.
	var old []*corev1.Pod
	for i := range 3 {
		p := podOf(fmt.Sprintf("web-1a2b-%d", i), "ReplicaSet", "web-1a2b")
		writeStatus(t, client, p, running(true))
		old = append(old, p)
	}
	for i := range 3 {
		p := podOf(fmt.Sprintf("web-3c4d-%d", i), "ReplicaSet", "web-3c4d")
		writeStatus(t, client, p, corev1.PodStatus{Phase: corev1.PodPending})
		writeStatus(t, client, p, waiting("ContainerCreating", ""))
		writeStatus(t, client, p, running(false))
		writeStatus(t, client, p, running(true))
		if err := client.CoreV1().Pods("default").Delete(ctx, old[i].Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(30))}); err != nil {
			t.Fatal(err)
		}
		killed := running(false)
		for j := range killed.ContainerStatuses {
			killed.ContainerStatuses[j].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 143, Reason: "Error"}}
		}
		writeStatus(t, client, old[i], killed)
		if err := client.CoreV1().Pods("default").Delete(ctx, old[i].Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))}); err != nil {
			t.Fatal(err)
		}
	}
	// A scale-down: two of the new pods go.
	for _, name := range []string{"web-3c4d-1", "web-3c4d-2"} {
		if err := client.CoreV1().Pods("default").Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))}); err != nil {
			t.Fatal(err)
		}
	}
	// A Job's pod that completed.
	job := podOf("report-29001-x", "Job", "report-29001")
	writeStatus(t, client, job, running(true))
	done := corev1.PodStatus{Phase: corev1.PodSucceeded}
	for _, name := range []string{"app", "sidecar"} {
		done.ContainerStatuses = append(done.ContainerStatuses, corev1.ContainerStatus{Name: name, Image: "example.com/" + name + ":1",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}})
	}
	writeStatus(t, client, job, done)
	// Label edits.
	for _, patch := range []string{`{"metadata":{"labels":{"team":"payments"}}}`, `{"metadata":{"labels":{"team":null,"tier":"web"}}}`} {
		if _, err := client.CoreV1().Pods("default").Patch(ctx, "web-3c4d-0", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// None of that alerted: the next notification is the sentinel's.
	expectSentinel(t, client, recv, "sentinel")
}
