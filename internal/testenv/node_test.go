package testenv

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
)

// TestRealNodeRunsContainersAndLeavesNothing brings a real node up, runs a
// container that crashes into a real CrashLoopBackOff whose previous log
// the API server fetches from the real kubelet, and checks that Stop
// leaves no process, mount, cgroup or network behind.
func TestRealNodeRunsContainersAndLeavesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real node")
	}
	dir := t.TempDir()
	ctx := context.Background()
	env, err := Start(ctx, WithNode(Options{Logf: t.Logf, Dir: dir}))
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			env.Stop()
		}
	})
	node := env.Node
	client, _ := env.Client()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "crasher", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "app", Image: WorkloadImage, ImagePullPolicy: corev1.PullNever,
			Args: []string{"-log", "starting,config: missing key DATABASE_URL", "-exit", "1"},
		}}},
	}
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A real crash loop: the kubelet restarts the container and shows
	// CrashLoopBackOff between back-offs.
	var last *corev1.Pod
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		last, err = client.CoreV1().Pods("default").Get(ctx, "crasher", metav1.GetOptions{})
		if err != nil || len(last.Status.ContainerStatuses) == 0 {
			return false, nil
		}
		cs := last.Status.ContainerStatuses[0]
		return cs.RestartCount >= 1 && cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff", nil
	})
	if err != nil {
		t.Fatalf("no CrashLoopBackOff: %v; last status %+v", err, last.Status)
	}
	if last.Spec.NodeName != node.Name {
		t.Errorf("scheduled to %q, want %q", last.Spec.NodeName, node.Name)
	}
	if ip := last.Status.PodIP; !strings.HasPrefix(ip, "198.19.") {
		t.Errorf("pod IP %q, want one from the node's pod range in 198.18.0.0/15", ip)
	}
	if term := last.Status.ContainerStatuses[0].LastTerminationState.Terminated; term == nil || term.ExitCode != 1 {
		t.Errorf("last termination %+v, want exit code 1", term)
	}
	logs, err := client.CoreV1().Pods("default").GetLogs("crasher", &corev1.PodLogOptions{Container: "app", Previous: true, TailLines: ptr.To[int64](10)}).DoRaw(ctx)
	if err != nil || !strings.Contains(string(logs), "config: missing key DATABASE_URL") {
		t.Errorf("previous logs through the API server: %q, %v", logs, err)
	}
	events, err := client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=crasher,reason=BackOff"})
	if err != nil || len(events.Items) == 0 {
		t.Errorf("no BackOff event from the kubelet: %v", err)
	}

	podNetNS := node.runtime.podNetworkNamespaces(ctx)
	if len(podNetNS) == 0 {
		t.Errorf("containerd lists no pod network namespace for the running pod")
	}

	if err := env.StopChecked(); err != nil {
		t.Errorf("teardown: %v", err)
	}
	stopped = true
	if got := pgrep(t, dir); len(got) != 0 {
		t.Errorf("processes left after Stop: %v", got)
	}
	// By whole name: another package's node beside this one may be
	// herald-node-146 while this one is herald-node-14.
	if out, _ := exec.Command("ip", "netns", "list").Output(); slices.ContainsFunc(strings.Split(string(out), "\n"), func(line string) bool {
		name, _, _ := strings.Cut(line, " ")
		return name == node.Name
	}) {
		t.Errorf("network namespace %s left: %s", node.Name, out)
	}
	if out, _ := exec.Command("ip", "-o", "addr").Output(); strings.Contains(string(out), node.network.HostIP+"/") {
		t.Errorf("host end %s left:\n%s", node.network.HostIP, out)
	}
	if mounts, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(mounts), dir) {
		t.Errorf("mounts left under %s", dir)
	}
	for _, p := range podNetNS {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("pod network namespace %s left", p)
		}
	}
	hierarchies, _ := cgroupHierarchies()
	for _, h := range hierarchies {
		if _, err := os.Stat(filepath.Join(h, node.cgroupRoot)); err == nil {
			t.Errorf("cgroup %s left", filepath.Join(h, node.cgroupRoot))
		}
	}
}

// TestAbandonedNodeIsSweptAway: the network and cgroups of a node whose
// test process died without tearing it down are removed by the next node
// set-up.
func TestAbandonedNodeIsSweptAway(t *testing.T) {
	if err := checkNodePrerequisites(); err != nil {
		t.Fatal(err)
	}
	n, err := setUpNodeNetwork()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.tearDown(); removeCgroupRoot("/" + n.Namespace) })
	if err := prepareCgroupRoot("/" + n.Namespace); err != nil {
		t.Fatal(err)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	// The slot now belongs to a process that has exited.
	if err := os.WriteFile(n.slotFile(), []byte(strconv.Itoa(dead.Process.Pid)), 0o644); err != nil {
		t.Fatal(err)
	}
	sweepAbandonedSlots()
	if out, _ := exec.Command("ip", "netns", "list").Output(); strings.Contains(string(out), n.Namespace+" ") || strings.HasSuffix(strings.TrimSpace(string(out)), n.Namespace) {
		t.Errorf("abandoned namespace %s not removed: %s", n.Namespace, out)
	}
	if err := exec.Command("ip", "link", "show", n.hostLink).Run(); err == nil {
		t.Errorf("abandoned link %s not removed", n.hostLink)
	}
	hierarchies, _ := cgroupHierarchies()
	for _, h := range hierarchies {
		if _, err := os.Stat(filepath.Join(h, n.Namespace)); err == nil {
			t.Errorf("abandoned cgroup %s not removed", filepath.Join(h, n.Namespace))
		}
	}
	if _, err := os.Stat(n.slotFile()); err == nil {
		t.Errorf("abandoned claim %s not removed", n.slotFile())
	}
}
