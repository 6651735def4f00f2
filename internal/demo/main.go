// Command demo shows herald's main job on a machine with nothing but Go:
// it starts a local control plane, runs the herald binary against it with
// examples/demo.yaml, makes a pod crash-loop and recover, deletes another
// while it crash-loops, and prints herald's notifications as they arrive.
//
//	go run ./internal/demo -herald bin/herald -config examples/demo.yaml
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

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
	say("creating pods web-1, web-2 and api in namespace %s, all healthy", ns)
	for _, name := range []string{"web-1", "web-2", "api"} {
		if err := createPod(ctx, client, name); err != nil {
			return err
		}
		if err := setStatus(ctx, client, name, "ready", 0); err != nil {
			return err
		}
	}

	say("api starts crash-looping (exit code 1): expect one FIRING")
	if err := setStatus(ctx, client, "api", "crashloop", 1); err != nil {
		return err
	}
	if err := expect(lines, "FIRING", "demo/api"); err != nil {
		return err
	}
	say("api keeps crashing, five more restarts: between crashes herald stays quiet; one UPDATED once the count has risen by 5 (restartStep)")
	for i := range int32(5) {
		state := "starting"
		if i%2 == 1 {
			state = "crashloop"
		}
		if err := setStatus(ctx, client, "api", state, 2+i); err != nil {
			return err
		}
	}
	if err := expect(lines, "UPDATED", "demo/api"); err != nil {
		return err
	}
	say("api recovers (running and ready): expect one RESOLVED")
	if err := setStatus(ctx, client, "api", "ready", 7); err != nil {
		return err
	}
	if err := expect(lines, "RESOLVED", "demo/api"); err != nil {
		return err
	}
	say("web-2 crash-loops and is then deleted: expect FIRING, then RESOLVED")
	if err := setStatus(ctx, client, "web-2", "crashloop", 4); err != nil {
		return err
	}
	if err := expect(lines, "FIRING", "demo/web-2"); err != nil {
		return err
	}
	zero := int64(0)
	if err := client.CoreV1().Pods(ns).Delete(ctx, "web-2", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		return err
	}
	if err := expect(lines, "RESOLVED", "demo/web-2"); err != nil {
		return err
	}
	say("demo complete: 5 notifications, one per change that matters")
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

// expect waits for herald to print a line containing every word.
func expect(lines <-chan string, words ...string) error {
	timeout := time.After(30 * time.Second)
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				return fmt.Errorf("herald exited before printing %v", words)
			}
			match := true
			for _, w := range words {
				match = match && strings.Contains(line, w)
			}
			if match {
				return nil
			}
		case <-timeout:
			return fmt.Errorf("no notification with %v within 30s", words)
		}
	}
}

func createPod(ctx context.Context, client kubernetes.Interface, name string) error {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": name}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example.com/" + name + ":1"}}},
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
