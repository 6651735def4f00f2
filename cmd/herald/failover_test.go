package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/herald-k8s/herald/internal/testenv"
	"github.com/herald-k8s/herald/sinks"
)

// buildHerald returns the herald binary, built once for all of the
// package's tests (each process test used to link its own: ~5 CPU-s a
// time). TestMain removes it.
func buildHerald(t *testing.T) string {
	t.Helper()
	b := &heraldBinary
	b.once.Do(func() {
		if b.dir, b.err = os.MkdirTemp("", "herald-bin-"); b.err != nil {
			return
		}
		b.path = filepath.Join(b.dir, "herald")
		b.out, b.err = exec.Command("go", "build", "-o", b.path, ".").CombinedOutput()
	})
	if b.err != nil {
		t.Fatalf("go build: %v\n%s", b.err, b.out)
	}
	return b.path
}

// heraldBinary is the one herald binary the process tests run.
var heraldBinary struct {
	once      sync.Once
	dir, path string
	out       []byte
	err       error
}

// replica is one herald process.
type replica struct {
	cmd     *exec.Cmd
	log     string
	done    chan struct{} // closed when the process has exited
	exitErr error
}

// state says whether the process still runs, and how it ended if not:
// a replica that exited by itself (not killed by the test) explains
// deliveries that never came, since nothing here restarts it.
func (r *replica) state() string {
	select {
	case <-r.done:
		if r.exitErr == nil {
			return "exited with status 0"
		}
		return "exited: " + r.exitErr.Error()
	default:
		return "running"
	}
}

// dumpGoroutines ends a running replica with SIGQUIT, so that its log
// ends with what each goroutine was doing: a replica that runs but does
// not deliver is stuck somewhere.
func (r *replica) dumpGoroutines() {
	r.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
	}
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

// loadHarness is herald processes (three for failover) against one
// control plane and one receiver, and a steady load of crash transitions.
type loadHarness struct {
	t        *testing.T
	env      *testenv.Env
	client   kubernetes.Interface
	bin, dir string
	kc, cfg  string
	args     []string // herald run flags beyond config and kubeconfig
	replicas []*replica

	mu  sync.Mutex
	got []delivery
	// lastWait is how long the last check waited for missing deliveries
	// after the load ended; dupKeys are the transitions it saw twice.
	lastWait time.Duration
	dupKeys  []string
}

type delivery struct {
	at time.Time
	p  sinks.Payload
}

// harnessOptions shape a loadHarness; the zero value is the failover
// setup: three replicas, 5 s leases.
type harnessOptions struct {
	replicas int
	env      testenv.Options
	args     []string
}

func newLoadHarness(t *testing.T) *loadHarness {
	return newLoadHarnessWith(t, harnessOptions{replicas: 3})
}

func newLoadHarnessWith(t *testing.T, opts harnessOptions) *loadHarness {
	opts.env.Logf, opts.env.Dir = t.Logf, t.TempDir()
	env, err := testenv.Start(context.Background(), opts.env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Stop)
	client, _ := env.Client()
	h := &loadHarness{t: t, env: env, client: client, bin: buildHerald(t), dir: t.TempDir(), args: opts.args}
	if h.args == nil {
		h.args = []string{"--lease-duration", "5s", "--renew-deadline", "3s", "--retry-period", "1s"}
	}
	h.kc = filepath.Join(h.dir, "kubeconfig")
	env.WriteKubeconfig(h.kc)
	recv := newReceiver(t)
	go func() {
		for p := range recv.got {
			h.mu.Lock()
			h.got = append(h.got, delivery{time.Now(), p})
			h.mu.Unlock()
		}
	}()
	h.cfg = filepath.Join(h.dir, "herald.yaml")
	os.WriteFile(h.cfg, []byte(fmt.Sprintf(`
# The load counts every crash and every recovery as a transition to
# deliver: the damping that merges them (docs/incidents.md) is off, and
# so is the cap on a namespace's open incidents (storms of 2,000 pods).
incidents: {startup: notify, resolveHoldDown: 0s, flapping: {starts: 0}, maxOpenPerNamespace: 0}
rules:
  - {name: pod-crashloop, kind: Pod, detector: crashloop, restartStep: -1, settle: 0s, sinks: [hook]}
sinks:
  - {name: hook, webhook: {url: %s/herald}, queueSize: 5000}
`, recv.URL)), 0o600)
	for range opts.replicas {
		h.start()
	}
	return h
}

// start launches one more replica.
func (h *loadHarness) start(extra ...string) *replica { return h.startEnv(nil, extra...) }

// startEnv launches one more replica with env added to its environment.
func (h *loadHarness) startEnv(env []string, extra ...string) *replica {
	r := &replica{log: filepath.Join(h.dir, fmt.Sprintf("herald-%d.log", len(h.replicas)))}
	logFile, _ := os.Create(r.log)
	args := append([]string{"run", "--config", h.cfg, "--kubeconfig", h.kc, "--metrics-addr", "127.0.0.1:0"}, h.args...)
	r.cmd = exec.Command(h.bin, append(args, extra...)...)
	r.cmd.Stdout, r.cmd.Stderr = logFile, logFile
	if env != nil {
		r.cmd.Env = append(os.Environ(), env...)
	}
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := r.cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	r.done = make(chan struct{})
	go func() { r.exitErr = r.cmd.Wait(); logFile.Close(); close(r.done) }()
	h.t.Cleanup(func() { r.cmd.Process.Kill(); <-r.done })
	h.replicas = append(h.replicas, r)
	return r
}

// leader waits until exactly one live replica says it leads, and checks
// the Lease names it.
func (h *loadHarness) leader(live []*replica) *replica {
	h.t.Helper()
	ctx := context.Background()
	var leader *replica
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		n := 0
		for _, r := range live {
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
		h.t.Fatalf("no single leader: %v", err)
	}
	identity, _ := leader.leads()
	lease, _ := h.client.CoordinationV1().Leases("default").Get(ctx, "herald", metav1.GetOptions{})
	if *lease.Spec.HolderIdentity != identity {
		h.t.Fatalf("Lease holder %s, leader's log says %s", *lease.Spec.HolderIdentity, identity)
	}
	return leader
}

// load runs 200 pods through crash, recover, crash, recover, crash, 12 s
// apart (longer than a takeover), started evenly over the first 12 s:
// 1,000 transitions. disrupt runs meanwhile.
func (h *loadHarness) load(disrupt func()) map[string]bool {
	return h.loadShaped(200, 5, 12*time.Second, disrupt)
}

// loadShaped is load with pods pods, steps transitions each (crash on
// even steps), period apart. A status write the API server cannot take
// (it is down) is retried until it can: the crash happens when it is
// written.
func (h *loadHarness) loadShaped(pods, steps int, period time.Duration, disrupt func()) map[string]bool {
	ctx := context.Background()
	for i := range pods {
		if _, err := h.client.CoreV1().Pods("default").Create(ctx, newPod(fmt.Sprintf("load-%03d", i)), metav1.CreateOptions{}); err != nil {
			h.t.Fatal(err)
		}
	}
	var load sync.WaitGroup
	errs := make(chan error, pods)
	for i := range pods {
		load.Go(func() {
			time.Sleep(time.Duration(i) * period / time.Duration(pods)) // the schedule of the load, not a wait for a condition
			for step := range steps {
				state := ready
				if step%2 == 0 {
					state = crashLooping
				}
				err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
					return writePodStatus(h.client, fmt.Sprintf("load-%03d", i), state, int32(step+1)) == nil, nil
				})
				if err != nil {
					errs <- fmt.Errorf("pod load-%03d step %d never written: %w", i, step, err)
					return
				}
				time.Sleep(period)
			}
		})
	}
	disrupt()
	load.Wait()
	close(errs)
	for err := range errs {
		h.t.Fatal(err)
	}
	want := map[string]bool{}
	for i := range pods {
		for step := range steps {
			occ := step/2 + 1
			if step%2 == 0 {
				want[fmt.Sprintf("load-%03d/%d/firing", i, occ)] = true
			} else {
				want[fmt.Sprintf("load-%03d/%d/resolved", i, occ)] = true
			}
		}
	}
	return want
}

func deliveryKey(p sinks.Payload) string {
	occ := p.Incident.ID[len(p.Incident.Fingerprint)+1:]
	return fmt.Sprintf("%s/%s/%s", p.Object.Name, occ, p.Transition)
}

// check waits until every wanted transition was delivered and returns the
// number of duplicates; a duplicate with another idempotency key fails.
func (h *loadHarness) check(want map[string]bool) (deliveries, dups int) {
	h.t.Helper()
	return h.checkWithin(want, time.Minute)
}

// checkWithin is check, waiting up to timeout for the last deliveries.
func (h *loadHarness) checkWithin(want map[string]bool, timeout time.Duration) (deliveries, dups int) {
	h.t.Helper()
	seen := func() map[string]bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		s := map[string]bool{}
		for _, d := range h.got {
			s[deliveryKey(d.p)] = true
		}
		return s
	}
	missing := func() int {
		s, n := seen(), 0
		for k := range want {
			if !s[k] {
				n++
			}
		}
		return n
	}
	start := time.Now()
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return missing() == 0, nil
	})
	h.lastWait = time.Since(start)
	if err != nil {
		var missed []string
		s := seen()
		for k := range want {
			if !s[k] && len(missed) < 10 {
				missed = append(missed, k)
			}
		}
		for i, r := range h.replicas {
			state := r.state()
			if state == "running" {
				r.dumpGoroutines()
			}
			lines := strings.Split(strings.TrimSpace(r.logs()), "\n")
			h.t.Logf("replica %d (%s), last log lines:\n%s", i, state, strings.Join(lines[max(0, len(lines)-4000):], "\n"))
		}
		h.t.Fatalf("%d of %d transitions never delivered, e.g. %v", missing(), len(want), missed)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	first := map[string]string{}
	for _, d := range h.got {
		k := deliveryKey(d.p)
		if !want[k] {
			h.t.Errorf("unexpected notification %s", k)
		}
		if id, ok := first[k]; ok {
			dups++
			h.dupKeys = append(h.dupKeys, fmt.Sprintf("%s (%s, again at %s)", k, d.p.ID, d.at.Format("15:04:05.000")))
			if id != d.p.ID {
				h.t.Errorf("%s delivered again with another idempotency key: %s then %s", k, id, d.p.ID)
			}
			continue
		}
		first[k] = d.p.ID
	}
	return len(h.got), dups
}

// TestFailoverUnderLoad: the leader is SIGKILLed in the middle of 1,000
// crash transitions. Every transition is delivered at least once, and any
// duplicate carries the same idempotency key as the first delivery.
func TestFailoverUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("a minute of load against three processes")
	}
	besideHeavy(t)
	h := newLoadHarness(t)
	leader := h.leader(h.replicas)
	var killedAt time.Time
	start := time.Now()
	want := h.load(func() {
		time.Sleep(30 * time.Second) // kill the leader in the middle of the load
		killedAt = time.Now()
		leader.cmd.Process.Signal(syscall.SIGKILL)
	})
	deliveries, dups := h.check(want)
	var lastBefore, firstAfter time.Time
	h.mu.Lock()
	for _, d := range h.got {
		if d.at.Before(killedAt) {
			lastBefore = d.at
		} else if firstAfter.IsZero() {
			firstAfter = d.at
		}
	}
	h.mu.Unlock()
	t.Logf("%d transitions over %s: %d deliveries, %d duplicates (same key); takeover (last delivery before SIGKILL → first after): %s",
		len(want), time.Since(start).Round(time.Second), deliveries, dups, firstAfter.Sub(lastBefore).Round(time.Millisecond))
}

// TestRollingRestartUnderLoad: during 1,000 crash transitions, each of the
// three replicas in turn gets SIGTERM and a replacement: nothing is lost,
// and no notification is sent twice.
func TestRollingRestartUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("a minute of load against three processes")
	}
	besideHeavy(t)
	h := newLoadHarness(t)
	h.leader(h.replicas)
	want := h.load(func() {
		for _, old := range append([]*replica(nil), h.replicas[:3]...) {
			time.Sleep(15 * time.Second) // one replica every 15 s, as a rollout would
			old.cmd.Process.Signal(syscall.SIGTERM)
			<-old.done
			if old.exitErr != nil {
				t.Errorf("replica exited with %v after SIGTERM:\n%s", old.exitErr, old.logs())
			}
			// Its log is buffered (internal/logbuf): what it logged up to
			// its exit was written out before it.
			if logs := strings.TrimSpace(old.logs()); !strings.HasSuffix(logs, `"msg":"herald stopped"}`) {
				t.Errorf("the log of a replica stopped by SIGTERM does not end with \"herald stopped\": lines lost at exit, or something logged after it:\n%s", logs[max(0, len(logs)-2000):])
			}
			h.start()
		}
	})
	deliveries, dups := h.check(want)
	if dups != 0 {
		t.Errorf("%d duplicates during a rolling restart", dups)
	}
	t.Logf("%d transitions, %d deliveries, %d duplicates across a rolling restart of 3 replicas", len(want), deliveries, dups)
}
