package realnode

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/herald-k8s/herald/internal/testenv"
	"github.com/herald-k8s/herald/sinks"
)

// One cluster, one herald and one receiver for the package: a node takes
// seconds to start, and each test works in a namespace of its own.
var (
	env    *testenv.Env
	client kubernetes.Interface
	hook   *receiver
	herald *heraldProcess
)

// Seven of the chart's default rules (charts/herald/values.yaml), and
// volume-filling (the chart's volumeStats.enabled) with a window of 40 s
// (half of it, the samples a forecast needs, longer than the resolve
// hold-down) and every node read each second, with
// shorter waits where the defaults would only make the tests slow:
// image-pull's and node-not-ready's `for` (2m, 1m) and the resolve
// hold-down (30s), and the "What changed" window (30m; changesWindow).
// Crash context is on, as by default. Not here (yet):
// pod-pending, deployment-unavailable, job-failed, node-pressure and the
// chart's inhibitions (cmd/herald's TestChartDefaultsWorkloadRules runs
// them on the test control plane).
// resolveHoldDown is herald's resolve hold-down here.
const resolveHoldDown = 15 * time.Second

const heraldConfig = `
incidents:
  updateInterval: 30s
  # Half herald's default. A restarted kubelet rewrites every pod's
  # status and can drop a container's last termination until it ends
  # again: on a loaded machine the OOM-killed hog's next kill came 5.4 s
  # after, and a 5 s hold-down resolved and reopened its incident.
  resolveHoldDown: %s
context:
  changes: {window: 1m}
rules:
  - {name: pod-crashloop, kind: Pod, detector: crashloop, severity: critical, groupBy: workload, except: [OOMKilled], sinks: [hook]}
  - {name: pod-oomkilled, kind: Pod, detector: oomkilled, severity: critical, groupBy: workload, sinks: [hook]}
  - {name: pod-image-pull, kind: Pod, detector: image-pull, for: 5s, groupBy: workload, sinks: [hook]}
  - {name: pod-config-error, kind: Pod, detector: container-error, severity: critical, groupBy: workload, sinks: [hook]}
  - {name: pod-evicted, kind: Pod, detector: evicted, groupBy: workload, sinks: [hook]}
  - {name: rollout-stuck, kind: Deployment, detector: rollout-stuck, sinks: [hook]}
  - {name: node-not-ready, kind: Node, detector: node-not-ready, for: 15s, severity: critical, sinks: [hook]}
  - {name: volume-filling, kind: PersistentVolumeClaim, detector: volume-filling, window: 40s, horizon: 5m, sinks: [hook]}
volumeStats: {interval: 1s}
sinks:
  - {name: hook, webhook: {url: %s/herald}}
`

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

// allAtOnce is the package's -parallel unless one is given: the pod tests
// wait on the kubelet far more than they compute, and go test's default,
// GOMAXPROCS (two on these machines), would run them two at a time.
const allAtOnce = "16"

func run(m *testing.M) int {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		if err := flag.Set("test.parallel", allAtOnce); err != nil {
			fmt.Println(err)
			return 1
		}
	}
	return runCluster(m)
}

func runCluster(m *testing.M) int {
	if os.Getenv("HERALD_SKIP_REAL_NODE") != "" {
		fmt.Println("realnode: HERALD_SKIP_REAL_NODE is set: not running the real-node tests")
		return 0
	}
	logf := func(format string, args ...any) { fmt.Printf(format+"\n", args...) }
	dir, err := os.MkdirTemp("", "herald-realnode-")
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer os.RemoveAll(dir)
	start := time.Now()
	env, err = testenv.Start(context.Background(), testenv.WithNode(testenv.Options{Logf: logf, Dir: dir}))
	if err != nil {
		fmt.Printf("realnode: starting the cluster (set HERALD_SKIP_REAL_NODE=1 to leave these tests out where a real node cannot run): %v\n", err)
		return 1
	}
	defer func() {
		if err := env.StopChecked(); err != nil {
			fmt.Println("realnode: teardown:", err)
		}
	}()
	if client, err = env.Client(); err != nil {
		fmt.Println(err)
		return 1
	}
	hook = newReceiver()
	defer hook.Close()
	if herald, err = startHerald(filepath.Join(dir, "herald"), fmt.Sprintf(heraldConfig, resolveHoldDown, hook.URL)); err != nil {
		fmt.Println("realnode:", err)
		return 1
	}
	defer herald.stop()
	logf("realnode: cluster and herald up in %s", time.Since(start).Round(100*time.Millisecond))
	code := m.Run()
	herald.stop()
	if logs := herald.logs(); strings.Contains(logs, "DATA RACE") || strings.Contains(logs, "panic:") {
		fmt.Println("realnode: herald reported a data race or a panic")
		code = 1
	}
	if code != 0 {
		fmt.Printf("--- herald's log:\n%s\n", herald.logs())
	}
	return code
}

// receiver is a real webhook endpoint that keeps every delivery.
type receiver struct {
	*httptest.Server
	mu  sync.Mutex
	got []delivery
}

type delivery struct {
	at time.Time
	sinks.Payload
}

func newReceiver() *receiver {
	r := &receiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var p sinks.Payload
		if err := json.NewDecoder(req.Body).Decode(&p); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.got = append(r.got, delivery{time.Now(), p})
		r.mu.Unlock()
	}))
	return r
}

// in returns the deliveries about objects in namespace ("" for
// cluster-scoped objects such as nodes), in order of arrival.
func (r *receiver) in(namespace string) []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []delivery
	for _, d := range r.got {
		if d.Object.Namespace == namespace {
			out = append(out, d)
		}
	}
	return out
}

// all returns every delivery so far.
func (r *receiver) all() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.got...)
}

// await waits until cond holds for namespace's deliveries.
func (r *receiver) await(t *testing.T, namespace string, timeout time.Duration, what string, cond func([]delivery) bool) []delivery {
	t.Helper()
	var got []delivery
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		got = r.in(namespace)
		return cond(got), nil
	})
	if err != nil {
		t.Fatalf("%s: not within %s; deliveries in %q: %s", what, timeout, namespace, describe(got))
	}
	return got
}

func describe(ds []delivery) string {
	var b strings.Builder
	for _, d := range ds {
		fmt.Fprintf(&b, "\n  %s %s %s/%s %s: %s", d.at.Format("15:04:05.000"), d.Transition, d.Object.Kind, d.Object.Name, d.Incident.Rule, d.Title)
		if c := d.Changes; c != nil {
			fmt.Fprintf(&b, "\n    what changed (%s): %q", c.Workload, c.Lines)
			if c.Undo != "" {
				fmt.Fprintf(&b, " undo: %s", c.Undo)
			}
		}
	}
	if b.Len() == 0 {
		return "none"
	}
	return b.String()
}

// count returns how many deliveries have rule and transition.
func count(ds []delivery, rule, transition string) int {
	n := 0
	for _, d := range ds {
		if d.Incident.Rule == rule && d.Transition == transition {
			n++
		}
	}
	return n
}

// heraldProcess is the herald binary, run as in production.
type heraldProcess struct {
	dir, bin, config, kubeconfig string
	mu                           sync.Mutex
	cmd                          *exec.Cmd
	done                         chan struct{}
	runs                         int
}

func startHerald(dir, config string) (*heraldProcess, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	h := &heraldProcess{dir: dir, bin: filepath.Join(dir, "herald"), config: filepath.Join(dir, "herald.yaml"), kubeconfig: filepath.Join(dir, "kubeconfig")}
	args := []string{"build", "-o", h.bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, "github.com/herald-k8s/herald/cmd/herald")...)
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building herald: %v\n%s", err, out)
	}
	if err := os.WriteFile(h.config, []byte(config), 0o600); err != nil {
		return nil, err
	}
	if err := env.WriteKubeconfig(h.kubeconfig); err != nil {
		return nil, err
	}
	return h, h.start()
}

// start runs herald and waits until its workers run.
func (h *heraldProcess) start() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.runs++
	logPath := filepath.Join(h.dir, fmt.Sprintf("herald-%d.log", h.runs))
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	h.cmd = exec.Command(h.bin, "run", "--config", h.config, "--kubeconfig", h.kubeconfig, "--metrics-addr", "127.0.0.1:0",
		"--log-format", "text", "--lease-duration", "5s", "--renew-deadline", "3s", "--retry-period", "1s")
	h.cmd.Stdout, h.cmd.Stderr = logFile, logFile
	h.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := h.cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	h.done = done
	go func() { h.cmd.Wait(); logFile.Close(); close(done) }()
	return wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		select {
		case <-done:
			return false, fmt.Errorf("herald exited during start-up:\n%s", readFile(logPath))
		default:
		}
		return strings.Contains(readFile(logPath), `msg="starting workers"`), nil
	})
}

// stop sends SIGTERM and waits for herald to exit.
func (h *heraldProcess) stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	select {
	case <-h.done:
		return // stopped already
	default:
	}
	h.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-h.done:
	case <-time.After(30 * time.Second):
		h.cmd.Process.Kill()
		<-h.done
	}
}

// restart stops herald and starts it again.
func (h *heraldProcess) restart() error {
	h.stop()
	return h.start()
}

// logs returns every run's log.
func (h *heraldProcess) logs() string {
	var b strings.Builder
	for i := 1; i <= h.runs; i++ {
		fmt.Fprintf(&b, "--- run %d\n%s", i, readFile(filepath.Join(h.dir, fmt.Sprintf("herald-%d.log", i))))
	}
	return b.String()
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}
