package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/herald-k8s/herald/internal/testenv"
	"github.com/herald-k8s/herald/sinks"
)

// buildHerald builds the herald binary the way make build does.
func buildHerald(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "herald")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// replica is one herald process.
type replica struct {
	cmd *exec.Cmd
	log string
}

func (r *replica) logs() string {
	b, _ := os.ReadFile(r.log)
	return string(b)
}

var leaderLine = regexp.MustCompile(`"msg":"became the leader","lease":"default/herald","identity":"([^"]+)"`)

func (r *replica) leads() (string, bool) {
	m := leaderLine.FindStringSubmatch(r.logs())
	if m == nil {
		return "", false
	}
	return m[1], true
}

// setPodStatus is setStatus for goroutines: it returns the error.
func setPodStatus(client kubernetes.Interface, name string, crashing bool, restarts int32) error {
	ctx := context.Background()
	pod, err := client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	now := metav1.Now()
	app := corev1.ContainerStatus{Name: "app", Image: "example.com/app:1", RestartCount: restarts,
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", FinishedAt: now}}}
	if crashing {
		app.State.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}
	} else {
		app.State.Running, app.Ready = &corev1.ContainerStateRunning{StartedAt: now}, true
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{app}}
	_, err = client.CoreV1().Pods("default").UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	return err
}

// TestFailoverUnderLoad: three herald processes, one leader; 1,000 crash
// transitions over about a minute; the leader is SIGKILLed in the middle.
// Every transition is delivered at least once, and any duplicate carries
// the same idempotency key as the first delivery.
func TestFailoverUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("a minute of load against three processes")
	}
	env := testenv.New(t)
	client, _ := env.Client()
	bin := buildHerald(t)
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	env.WriteKubeconfig(kc)

	type delivery struct {
		at time.Time
		p  sinks.Payload
	}
	var mu sync.Mutex
	var got []delivery
	recv := newReceiver(t)
	go func() {
		for p := range recv.got {
			mu.Lock()
			got = append(got, delivery{time.Now(), p})
			mu.Unlock()
		}
	}()
	cfgPath := filepath.Join(dir, "herald.yaml")
	os.WriteFile(cfgPath, []byte(fmt.Sprintf(`
incidents: {startup: notify}
rules:
  - {name: pod-crashloop, kind: Pod, detector: crashloop, restartStep: -1, sinks: [hook]}
sinks:
  - {name: hook, webhook: {url: %s/herald}, queueSize: 5000}
`, recv.URL)), 0o600)

	var replicas []*replica
	for i := range 3 {
		r := &replica{log: filepath.Join(dir, fmt.Sprintf("herald-%d.log", i))}
		logFile, _ := os.Create(r.log)
		r.cmd = exec.Command(bin, "run", "--config", cfgPath, "--kubeconfig", kc, "--metrics-addr", "127.0.0.1:0",
			"--lease-duration", "5s", "--renew-deadline", "3s", "--retry-period", "1s")
		r.cmd.Stdout, r.cmd.Stderr = logFile, logFile
		r.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := r.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.cmd.Process.Kill(); r.cmd.Wait(); logFile.Close() })
		replicas = append(replicas, r)
	}
	ctx := context.Background()
	var leader *replica
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		n := 0
		for _, r := range replicas {
			if _, ok := r.leads(); ok {
				leader, n = r, n+1
			}
		}
		if n > 1 {
			return false, fmt.Errorf("%d replicas lead at once", n)
		}
		return n == 1, nil
	})
	if err != nil {
		t.Fatalf("no single leader: %v", err)
	}
	identity, _ := leader.leads()
	lease, _ := client.CoordinationV1().Leases("default").Get(ctx, "herald", metav1.GetOptions{})
	if *lease.Spec.HolderIdentity != identity {
		t.Fatalf("Lease holder %s, leader's log says %s", *lease.Spec.HolderIdentity, identity)
	}

	// 200 pods, each crashing, recovering, crashing, recovering and
	// crashing again 12 s apart (longer than a takeover): 1,000
	// transitions, started evenly over the first 12 s.
	const pods, steps, period = 200, 5, 12 * time.Second
	for i := range pods {
		if _, err := client.CoreV1().Pods("default").Create(ctx, newPod(fmt.Sprintf("load-%03d", i)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	var load sync.WaitGroup
	errs := make(chan error, pods)
	for i := range pods {
		load.Go(func() {
			time.Sleep(time.Duration(i) * period / pods) // the schedule of the load, not a wait for a condition
			for step := range steps {
				if err := setPodStatus(client, fmt.Sprintf("load-%03d", i), step%2 == 0, int32(step+1)); err != nil {
					errs <- err
					return
				}
				time.Sleep(period)
			}
		})
	}
	time.Sleep(30 * time.Second) // kill the leader in the middle of the load
	killedAt := time.Now()
	leader.cmd.Process.Signal(syscall.SIGKILL)
	load.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	// Expected: per pod, occurrence 1 firing/resolved, 2 firing/resolved,
	// 3 firing.
	want := map[string]bool{}
	for i := range pods {
		for occ := 1; occ <= 3; occ++ {
			want[fmt.Sprintf("load-%03d/%d/firing", i, occ)] = true
			if occ < 3 {
				want[fmt.Sprintf("load-%03d/%d/resolved", i, occ)] = true
			}
		}
	}
	key := func(p sinks.Payload) string {
		occ := p.Incident.ID[len(p.Incident.Fingerprint)+1:]
		return fmt.Sprintf("%s/%s/%s", p.Object.Name, occ, p.Transition)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		seen := map[string]bool{}
		for _, d := range got {
			seen[key(d.p)] = true
		}
		for k := range want {
			if !seen[k] {
				return false, nil
			}
		}
		return true, nil
	})
	mu.Lock()
	defer mu.Unlock()
	if err != nil {
		missing := 0
		seen := map[string]bool{}
		for _, d := range got {
			seen[key(d.p)] = true
		}
		for k := range want {
			if !seen[k] {
				missing++
			}
		}
		t.Fatalf("%d of %d transitions never delivered", missing, len(want))
	}
	firstKey := map[string]string{}
	dups, sameKeyDups := 0, 0
	var lastBefore, firstAfter time.Time
	for _, d := range got {
		k := key(d.p)
		if id, ok := firstKey[k]; ok {
			dups++
			if id == d.p.ID {
				sameKeyDups++
			} else {
				t.Errorf("%s delivered again with another idempotency key: %s then %s", k, id, d.p.ID)
			}
		} else {
			firstKey[k] = d.p.ID
		}
		if !want[k] {
			t.Errorf("unexpected notification %s", k)
		}
		if d.at.Before(killedAt) {
			lastBefore = d.at
		} else if firstAfter.IsZero() {
			firstAfter = d.at
		}
	}
	t.Logf("%d transitions over %s: %d deliveries, %d duplicates (all with the first key: %v); takeover (last delivery before SIGKILL → first after): %s",
		len(want), time.Since(start).Round(time.Second), len(got), dups, dups == sameKeyDups, firstAfter.Sub(lastBefore).Round(time.Millisecond))
}
