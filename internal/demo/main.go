// Command demo shows herald's main job on a machine with nothing but Go:
// it starts a local control plane, runs the herald binary against it with
// examples/demo.yaml, and prints herald's notifications as they arrive: a
// Deployment's pods crashing together (one alert, one paced update), a
// crash loop that is ready between crashes (one incident), recoveries
// after the settle time, and a pod deleted while it crash-loops.
//
//	go run ./internal/demo -herald bin/herald -config examples/demo.yaml
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/herald-k8s/herald/internal/testenv"
)

const ns = "demo"

func main() {
	heraldBin := flag.String("herald", "bin/herald", "the herald binary")
	configPath := flag.String("config", "examples/demo.yaml", "herald's configuration")
	flag.Parse()
	if err := run(*heraldBin, *configPath); err != nil {
		fmt.Fprintln(os.Stderr, "demo failed:", err)
		os.Exit(1)
	}
}

func say(format string, args ...any) {
	fmt.Printf("\033[1m==> "+format+"\033[0m\n", args...)
}

func run(heraldBin, configPath string) error {
	ctx := context.Background()
	say("starting a local control plane (etcd %s, kube-apiserver %s); the first run builds them, which takes minutes", testenv.EtcdVersion, testenv.KubeVersion)
	env, err := testenv.Start(ctx, testenv.Options{Logf: func(f string, a ...any) { fmt.Printf("    "+f+"\n", a...) }})
	if err != nil {
		return err
	}
	defer func() {
		say("stopping the control plane")
		env.Stop()
	}()
	client, err := env.Client()
	if err != nil {
		return err
	}
	// The demo's pods run on a stand-in kubelet: the API server fetches
	// their logs from it, as it would from a node's, for the crash context.
	kubelet, err := testenv.StartKubelet(ctx, client, "demo-node", func(_ context.Context, r testenv.LogRequest) ([]string, int) {
		return demoLog(r.Pod, r.Previous), http.StatusOK
	})
	if err != nil {
		return err
	}
	defer kubelet.Close()
	kubeconfig := filepath.Join(env.Dir, "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		return err
	}

	say("starting herald: %s run --config %s", heraldBin, configPath)
	logPath := filepath.Join(os.TempDir(), "herald-demo.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logFile.Close()
	herald := exec.Command(heraldBin, "run", "--config", configPath, "--kubeconfig", kubeconfig, "--log-format", "text", "--metrics-addr", "127.0.0.1:0")
	herald.Stderr = logFile
	stdout, err := herald.StdoutPipe()
	if err != nil {
		return err
	}
	if err := herald.Start(); err != nil {
		return err
	}
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			fmt.Printf("    \033[32mherald>\033[0m %s\n", sc.Text())
			lines <- sc.Text()
		}
		close(lines)
	}()
	defer func() {
		say("stopping herald (SIGTERM); its logs are in %s", logPath)
		herald.Process.Signal(syscall.SIGTERM)
		herald.Wait()
	}()

	say("waiting for herald to lead and start its workers")
	if err := waitForLog(logPath, `msg="starting workers"`, 60*time.Second); err != nil {
		return err
	}
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	web := []string{"web-5d8f-a", "web-5d8f-b", "web-5d8f-c", "web-5d8f-d", "web-5d8f-e"}
	say("creating the Deployment web's 5 pods, and pods api and worker, in namespace %s, all healthy", ns)
	for _, name := range append(slices.Clone(web), "api", "worker") {
		if err := createPod(ctx, client, name); err != nil {
			return err
		}
		if err := setStatus(ctx, client, name, "ready", 0); err != nil {
			return err
		}
	}
	sent := 0
	seen := func(lines []string) { sent += len(lines) }

	say("a storm: web's 5 pods crash within 2 s. Expect one FIRING at once (with the crashed container's last log lines and a hint), and one UPDATED when the 10s update interval ends (without pacing: 1 firing + 4 updates)")
	start := time.Now()
	for i, name := range web {
		if err := setStatus(ctx, client, name, "crashloop", 1); err != nil {
			return err
		}
		if i == 0 {
			if err := expect(lines, seen, "FIRING", "demo/web"); err != nil {
				return err
			}
			say("first alert %s after the first crash", time.Since(start).Round(time.Millisecond))
		}
		time.Sleep(400 * time.Millisecond) // the storm's pace
	}
	if err := expect(lines, seen, "UPDATED", "1 → 5 of 5 pods"); err != nil {
		return err
	}
	say("one update, %s after the first crash, saying what changed", time.Since(start).Round(time.Second))

	say("a flapping crash loop: api crashes 4 times and is running and ready for 2 s between crashes. Expect one FIRING and nothing more while it cycles (without the settle time: a firing and a resolved per cycle)")
	var recovered time.Time
	for i := range int32(4) {
		if err := setStatus(ctx, client, "api", "crashloop", 1+i); err != nil {
			return err
		}
		if i == 0 {
			if err := expect(lines, seen, "FIRING", "demo/api"); err != nil {
				return err
			}
		}
		time.Sleep(time.Second) // the crash loop's pace: 1 s in back-off
		recovered = time.Now()
		if err := setStatus(ctx, client, "api", "ready", 1+i); err != nil {
			return err
		}
		time.Sleep(2 * time.Second) // 2 s ready before the next crash
	}
	say("api stays ready: expect one RESOLVED once it has been up for the 10s settle time")
	if err := expectOnly(lines, seen, "demo/api", "RESOLVED"); err != nil {
		return err
	}
	say("api resolved %s after it recovered", time.Since(recovered).Round(time.Second))

	say("web's pods recover together: expect one RESOLVED after the settle time (no update per pod)")
	for _, name := range web {
		if err := setStatus(ctx, client, name, "ready", 1); err != nil {
			return err
		}
	}
	if err := expectOnly(lines, seen, "demo/web", "RESOLVED"); err != nil {
		return err
	}

	say("worker crash-loops and is then deleted: expect FIRING, then RESOLVED at once (a deleted pod cannot come back)")
	if err := setStatus(ctx, client, "worker", "crashloop", 4); err != nil {
		return err
	}
	if err := expect(lines, seen, "FIRING", "demo/worker"); err != nil {
		return err
	}
	zero := int64(0)
	if err := client.CoreV1().Pods(ns).Delete(ctx, "worker", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		return err
	}
	if err := expect(lines, seen, "RESOLVED", "demo/worker"); err != nil {
		return err
	}
	say("demo complete: %d notifications for 3 incidents, 5 pods in a storm and 4 crash cycles", sent)
	return nil
}

// waitForLog polls herald's log file until it holds text.
func waitForLog(path, text string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if data, err := os.ReadFile(path); err == nil && strings.Contains(string(data), text) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("herald did not log %s within %s (see %s)", text, timeout, path)
}

// expect waits for herald to print a line containing every word; the
// lines it read on the way (this one included) go to seen.
func expect(lines <-chan string, seen func([]string), words ...string) error {
	timeout := time.After(40 * time.Second)
	var read []string
	defer func() { seen(read) }()
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				return fmt.Errorf("herald exited before printing %v", words)
			}
			read = append(read, line)
			match := true
			for _, w := range words {
				match = match && strings.Contains(line, w)
			}
			if match {
				return nil
			}
		case <-timeout:
			return fmt.Errorf("no notification with %v within 40s", words)
		}
	}
}

// expectOnly is expect for object's next line, which must say word:
// anything else about object before it is an error.
func expectOnly(lines <-chan string, seen func([]string), object, word string) error {
	var read []string
	err := expect(lines, func(l []string) { read = l; seen(l) }, object)
	if err == nil && !strings.Contains(read[len(read)-1], word) {
		return fmt.Errorf("herald printed %q, want %s for %s", read[len(read)-1], word, object)
	}
	return err
}

// createPod makes a pod; web-5d8f-* belong to the ReplicaSet web-5d8f of
// the Deployment web, as its controller would make them.
func createPod(ctx context.Context, client kubernetes.Interface, name string) error {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": name}},
		Spec:       corev1.PodSpec{NodeName: "demo-node", Containers: []corev1.Container{{Name: "app", Image: "example.com/" + name + ":1"}}},
	}
	if strings.HasPrefix(name, "web-5d8f-") {
		pod.Labels = map[string]string{"app": "web", "pod-template-hash": "5d8f"}
		pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-5d8f", UID: "web-5d8f", Controller: ptr.To(true)}}
	}
	_, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	return err
}

// setStatus plays the kubelet: there is none in the demo's control plane.
func setStatus(ctx context.Context, client kubernetes.Interface, name, state string, restarts int32) error {
	pod, err := client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	now := metav1.Now()
	cs := corev1.ContainerStatus{Name: "app", Image: pod.Spec.Containers[0].Image, RestartCount: restarts}
	if restarts > 0 {
		cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", FinishedAt: now}
	}
	switch state {
	case "crashloop":
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 40s restarting failed container"}
	case "starting":
		cs.State.Running = &corev1.ContainerStateRunning{StartedAt: now}
	case "ready":
		cs.State.Running = &corev1.ContainerStateRunning{StartedAt: now}
		cs.Ready = true
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{cs}}
	_, err = client.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	return err
}

// demoLog is what the demo's containers wrote: the crashed instance ends
// with why it died (and prints a password, which herald redacts).
func demoLog(pod string, previous bool) []string {
	if !previous {
		return []string{"starting " + pod}
	}
	return []string{
		"2026-11-23T10:00:00Z INFO starting " + pod,
		"2026-11-23T10:00:00Z INFO config: db_password=hunter2 pool=10",
		"2026-11-23T10:00:01Z INFO connecting to postgres://db:5432/shop",
		"2026-11-23T10:00:31Z ERROR dial tcp db:5432: i/o timeout",
		"panic: cannot reach the database after 30s",
	}
}
