package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/herald-k8s/herald/internal/testenv"
	"github.com/herald-k8s/herald/sinks"
)

// receiver is a real HTTP webhook endpoint that records what it gets.
type receiver struct {
	*httptest.Server
	got chan sinks.Payload
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{got: make(chan sinks.Payload, 100)}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var p sinks.Payload
		if err := json.NewDecoder(req.Body).Decode(&p); err != nil {
			t.Errorf("receiver: bad JSON: %v", err)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if id := req.Header.Get("webhook-id"); id != p.ID {
			t.Errorf("receiver: webhook-id header %q != payload id %q", id, p.ID)
		}
		r.got <- p
	}))
	t.Cleanup(r.Close)
	return r
}

// next waits for the next delivery, failing the test after timeout.
func (r *receiver) next(t *testing.T, timeout time.Duration) sinks.Payload {
	t.Helper()
	select {
	case p := <-r.got:
		return p
	case <-time.After(timeout):
		t.Fatalf("no notification within %s", timeout)
		return sinks.Payload{}
	}
}

// startHerald runs `herald run` in-process against env, as the binary
// would, and stops it (checking its exit code) when the test ends.
func startHerald(t *testing.T, env *testenv.Env, configYAML string) *syncBuffer {
	return startHeraldArgs(t, env, configYAML, "--metrics-addr", "127.0.0.1:0")
}

func startHeraldArgs(t *testing.T, env *testenv.Env, configYAML string, extra ...string) *syncBuffer {
	h := runHerald(t, env, configYAML, extra...)
	t.Cleanup(h.stop)
	h.waitReady()
	return h.logs
}

// heraldRun is one herald process (in-process), stoppable mid-test.
type heraldRun struct {
	t      *testing.T
	config string
	logs   *syncBuffer
	cancel context.CancelFunc
	done   chan int
	once   sync.Once
}

func runHerald(t *testing.T, env *testenv.Env, configYAML string, extra ...string) *heraldRun {
	t.Helper()
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	if err := env.WriteKubeconfig(kc); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "herald.yaml")
	if err := os.WriteFile(cfgPath, []byte(configYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &heraldRun{t: t, config: cfgPath, logs: &syncBuffer{}, cancel: cancel, done: make(chan int, 1)}
	go func() {
		args := append([]string{"run", "--config", cfgPath, "--kubeconfig", kc, "--log-format", "text", "--metrics-addr", "127.0.0.1:0"}, extra...)
		h.done <- runMain(ctx, args, h.logs, h.logs)
	}()
	t.Cleanup(func() {
		if t.Failed() { // what herald said it did, beside what the test saw
			t.Logf("herald's leadership, start-up, notifications, warnings and errors (the last %d):\n%s", logTail, lastLines(h.logs.String(), logTail,
				`msg="incident `, `msg="became the leader"`, `msg="startup reconcile done"`, `msg="starting workers"`, "level=WARN", "level=ERROR"))
		}
	})
	return h
}

// logTail is how many of herald's log lines a failed test prints.
const logTail = 60

// lastLines returns the last n lines of text that contain any of subs.
func lastLines(text string, n int, subs ...string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if slices.ContainsFunc(subs, func(s string) bool { return strings.Contains(l, s) }) {
			out = append(out, l)
		}
	}
	return strings.Join(out[max(0, len(out)-n):], "\n")
}

// startedHerald is runHerald followed by waitReady.
func startedHerald(t *testing.T, env *testenv.Env, configYAML string, extra ...string) *heraldRun {
	h := runHerald(t, env, configYAML, extra...)
	h.waitReady()
	return h
}

// waitReady waits until herald has finished its startup reconcile and
// runs its workers: from then on, every change is a live change.
func (h *heraldRun) waitReady() {
	h.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !strings.Contains(h.logs.String(), `msg="starting workers"`) {
		select {
		case code := <-h.done:
			h.t.Fatalf("herald exited %d during start-up:\n%s", code, h.logs)
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("herald not ready within 30s:\n%s", h.logs)
		}
	}
}

// stop sends the equivalent of SIGTERM and checks herald exits cleanly.
func (h *heraldRun) stop() {
	h.once.Do(func() {
		h.cancel()
		select {
		case code := <-h.done:
			if code != 0 {
				h.t.Errorf("herald exited %d; logs:\n%s", code, h.logs)
			}
		case <-time.After(30 * time.Second):
			h.t.Errorf("herald did not stop within 30s of cancellation")
		}
	})
}

// syncBuffer is a log sink several goroutines write to. The buffer is a
// named field, not embedded: embedding would promote bytes.Buffer's
// ReadFrom, which io.Copy (os/exec) would call past the lock.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "app", Image: "example.com/app:1"},
			{Name: "sidecar", Image: "example.com/sidecar:1"},
		}},
	}
}

// appState is the state of the pod's app container.
type appState int

const (
	crashLooping appState = iota // waiting in CrashLoopBackOff
	starting                     // running between two crashes, not ready
	ready                        // running and ready
)

// setStatus writes the pod's status through the /status subresource, as
// a kubelet would; the sidecar is always fine.
func setStatus(t *testing.T, client kubernetes.Interface, name string, state appState, restarts int32) {
	t.Helper()
	if err := writePodStatus(client, name, state, restarts); err != nil {
		t.Fatal(err)
	}
}

// writePodStatus is setStatus for goroutines: it returns the error.
func writePodStatus(client kubernetes.Interface, name string, state appState, restarts int32) error {
	return writePodStatusIn(client, "default", name, state, restarts)
}

// writePodStatusIn is writePodStatus for a pod in namespace ns.
func writePodStatusIn(client kubernetes.Interface, ns, name string, state appState, restarts int32) error {
	ctx := context.Background()
	pod, err := client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	now := metav1.Now()
	app := corev1.ContainerStatus{Name: "app", Image: "example.com/app:1", RestartCount: restarts,
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", FinishedAt: now}}}
	if state == crashLooping {
		app.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off restarting failed container"}}
	} else {
		app.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}
		app.Ready = state == ready
	}
	sidecar := corev1.ContainerStatus{Name: "sidecar", Image: "example.com/sidecar:1", Ready: true,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}}
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{app, sidecar}}
	_, err = client.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	return err
}

func TestCrashLoopToWebhookEndToEnd(t *testing.T) {
	beside(t)
	env := controlPlanes.Get(t)
	client, err := env.Client()
	if err != nil {
		t.Fatal(err)
	}
	recv := newReceiver(t)
	startHerald(t, env, fmt.Sprintf(`
rules:
  - name: pod-crashloop
    kind: Pod
    detector: crashloop
    severity: critical
    restartStep: -1   # no updates on restart counts: this test wants silence
    settle: 2s        # recovered after 2s ready (default 60s), to keep the test short
    sinks: [hook]
sinks:
  - name: hook
    webhook:
      url: %s/herald
`, recv.URL))

	ctx := context.Background()
	for _, name := range []string{"web", "worker"} {
		if _, err := client.CoreV1().Pods("default").Create(ctx, newPod(name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		setStatus(t, client, name, ready, 0) // healthy: nothing to say
	}

	// web starts crash-looping: exactly one firing, naming pod and container.
	setStatus(t, client, "web", crashLooping, 3)
	first := recv.next(t, 5*time.Second)
	if first.Transition != "firing" || first.Object.Name != "web" || first.Object.Namespace != "default" ||
		first.Container != "app" || first.Incident.Rule != "pod-crashloop" || first.Incident.Reason != "CrashLoopBackOff" || first.Seq != 1 {
		t.Fatalf("first notification = %+v, want firing for default/web container app", first)
	}
	if first.Facts["restartCount"] != "3" || first.Facts["exitCode"] != "1" {
		t.Errorf("facts = %v, want restartCount 3 and exitCode 1", first.Facts)
	}

	// Ten more updates of the same crash loop, alternating between the
	// back-off and the brief runs between crashes: nothing new is sent.
	for i := range int32(10) {
		state := crashLooping
		if i%2 == 0 {
			state = starting
		}
		setStatus(t, client, "web", state, 4+i)
	}
	// Ready again: one resolved. Notifications of one object go out in
	// order, so had the ten updates sent anything it would arrive first.
	setStatus(t, client, "web", ready, 14)
	resolved := recv.next(t, 5*time.Second)
	if resolved.Transition != "resolved" || resolved.Object.Name != "web" || resolved.Incident.Fingerprint != first.Incident.Fingerprint || resolved.Seq != 2 {
		t.Fatalf("after recovery got %+v, want resolved seq 2 of %s", resolved, first.ID)
	}

	// A crash-looping pod that is deleted resolves its incident.
	setStatus(t, client, "worker", crashLooping, 5)
	fired := recv.next(t, 5*time.Second)
	if fired.Transition != "firing" || fired.Object.Name != "worker" {
		t.Fatalf("got %+v, want firing for worker", fired)
	}
	zero := int64(0)
	if err := client.CoreV1().Pods("default").Delete(ctx, "worker", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	gone := recv.next(t, 5*time.Second)
	if gone.Transition != "resolved" || gone.Object.Name != "worker" || gone.Incident.Fingerprint != fired.Incident.Fingerprint {
		t.Fatalf("after delete got %+v, want resolved for worker", gone)
	}
	select {
	case extra := <-recv.got:
		t.Errorf("unexpected extra notification %+v", extra)
	default:
	}
}
