// Package bench measures herald against a real kube-apiserver and etcd
// (internal/testenv): memory and time to sync a cache of N realistic
// pods, and the latency from a crash written to the API to its webhook
// notification, beside the floor a bare client-go watch sees on the same
// control plane. cmd/herald-bench runs it; docs/performance.md keeps the
// figures.
package bench

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/herald-k8s/herald/internal/testenv"
)

// Options say what to measure.
type Options struct {
	// Herald is the herald binary (the release build, bin/herald).
	Herald string
	// Sizes are the pod counts to measure sync and memory at, ascending.
	Sizes []int
	// ChurnAt is the size the churn steps run at (default: the largest).
	ChurnAt int
	// Rates are the status patches per second to offer; rates above the
	// measured r_max are skipped, and 80% and 100% of r_max are added.
	Rates []float64
	// OnlyAsked skips the r_max rates (for a quick smoke run).
	OnlyAsked bool
	// Step is how long each rate is offered.
	Step time.Duration
	// Drain is how long to wait after a step for late events.
	Drain time.Duration
	// NoContext turns herald's crash context off (context.enabled:
	// false); on, as by default, it lists each crashed pod's Events and
	// reads its log through the API server's pods/log proxy from the
	// stand-in kubelet that serves the bench's nodes (within the
	// context's own budget of API requests per second).
	NoContext bool
	// GOMAXPROCS, if set, runs herald and the floor and cache notifiers
	// alike with that many Ps (the GOMAXPROCS environment variable); 0
	// leaves them at Go's default, one per core.
	GOMAXPROCS int
	// NoPprof runs herald as deployed, without --pprof: no profiles are
	// taken, and memory is read without forcing a collection first (the
	// heap figure is then the heap allocated, garbage included): the RSS
	// of herald as a cluster runs it.
	NoPprof bool
	// Cluster adds what goes with the pods in a real cluster (Objects:
	// Deployments, ReplicaSets, ConfigMaps, Secrets, Nodes), rules on the
	// Deployments and Nodes, and those kinds to the bare LIST herald's
	// sync is compared with.
	Cluster bool
	// APIServerMemoryLimit, if set, is the API server's GOMEMLIMIT (as
	// "16GiB"): at the largest sizes its garbage outgrows the machine.
	APIServerMemoryLimit string
	// MemoryLimit, if set, is the memory limit herald is told of
	// (HERALD_MEMORY_LIMIT, as the chart passes the container's limit):
	// it holds its heap to 85% of it.
	MemoryLimit int64
	// Idle is how long herald's idle CPU is measured, and before that
	// profiled (default IdleWindow; at least a second: the profile is
	// asked for in whole seconds).
	Idle time.Duration
	// Dir receives the report (bench.json), profiles and herald's logs.
	Dir  string
	Logf func(format string, args ...any)
}

// IdleWindow is how long herald's idle CPU is measured (and before that
// profiled), unless Options.Idle says otherwise.
const IdleWindow = 15 * time.Second

// Patchers is how many goroutines send status patches, for r_max and the
// open-loop steps alike.
const Patchers = 64

// Run starts a control plane, fills it, and measures.
func Run(ctx context.Context, opts Options) (*Report, error) {
	if opts.ChurnAt == 0 {
		opts.ChurnAt = slices.Max(opts.Sizes)
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, err
	}
	env, err := startControlPlane(ctx, opts.Dir, opts.APIServerMemoryLimit, opts.Logf)
	if err != nil {
		return nil, err
	}
	defer env.Stop()
	r := &run{opts: opts, env: env, report: newReport(opts)}
	if err := r.setUp(ctx); err != nil {
		return nil, err
	}
	defer r.recv.Close()
	defer r.kubelet.Close()
	for _, n := range opts.Sizes {
		if err := r.size(ctx, n); err != nil {
			return r.report, err
		}
		if n == opts.ChurnAt {
			if err := r.churn(ctx); err != nil {
				return r.report, err
			}
		}
	}
	r.report.finish()
	return r.report, r.report.write(filepath.Join(opts.Dir, "bench.json"))
}

// startControlPlane starts a fresh etcd and kube-apiserver under dir.
func startControlPlane(ctx context.Context, dir, apiserverMemoryLimit string, logf func(string, ...any)) (*testenv.Env, error) {
	cpDir := filepath.Join(dir, "controlplane")
	if err := os.RemoveAll(cpDir); err != nil { // a previous run's cluster
		return nil, err
	}
	if err := os.MkdirAll(cpDir, 0o755); err != nil {
		return nil, err
	}
	return testenv.Start(ctx, testenv.Options{Logf: logf, Dir: cpDir, APIServerMemoryLimit: apiserverMemoryLimit})
}

type run struct {
	opts       Options
	env        *testenv.Env
	client     kubernetes.Interface // protobuf, as herald's
	kubeconfig string
	config     string
	recv       *receiver
	kubelet    *testenv.Kubelet
	pods       *pods
	objects    Objects  // the other objects made so far (Options.Cluster)
	heraldEnv  []string // what every herald started is given
	// limit is the memory cgroup limit every herald started is held to
	// (Options.MemoryLimit, where this machine lets a cgroup be made).
	limit  int64
	report *Report
}

func (r *run) setUp(ctx context.Context) error {
	pb := rest.CopyConfig(r.env.Config)
	pb.ContentType = "application/vnd.kubernetes.protobuf"
	pb.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	pb.QPS, pb.Burst = -1, 0 // no client-side throttling: measure the server
	var err error
	if r.client, err = kubernetes.NewForConfig(pb); err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}
	if _, err := r.client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	// The pods' 300 nodes share one stand-in kubelet, so the crash
	// context (on, as by default) reads real log lines through the API
	// server's pods/log proxy.
	if r.kubelet, err = testenv.StartKubelet(ctx, r.client, nodeName(0), func(context.Context, testenv.LogRequest) ([]string, int) {
		return []string{"starting", "connecting to the database", "panic: the database did not answer"}, http.StatusOK
	}); err != nil {
		return err
	}
	for i := 1; i < nodes; i++ {
		if err := r.kubelet.Register(ctx, r.client, nodeName(i)); err != nil {
			return err
		}
	}
	r.kubeconfig = filepath.Join(r.opts.Dir, "kubeconfig")
	if err := r.env.WriteKubeconfig(r.kubeconfig); err != nil {
		return err
	}
	r.recv = newReceiver()
	r.config = filepath.Join(r.opts.Dir, "herald.yaml")
	r.pods = newPods(0)
	r.objects.Nodes = nodes
	if r.opts.MemoryLimit > 0 {
		r.heraldEnv = append(r.heraldEnv, fmt.Sprintf("HERALD_MEMORY_LIMIT=%d", r.opts.MemoryLimit))
		// The kernel holds herald to it too, as a container's runtime does.
		if probe, err := newMemcg(fmt.Sprintf("herald-bench-%d-probe", os.Getpid()), r.opts.MemoryLimit); err != nil {
			r.opts.Logf("bench: herald is told of its %d MiB memory limit, but the kernel cannot hold it to it here: %v", r.opts.MemoryLimit>>20, err)
		} else {
			probe.remove()
			r.limit = r.opts.MemoryLimit
			r.report.MemoryLimitHeld = true
		}
	}
	return os.WriteFile(r.config, []byte(heraldConfig(r.recv.URL, !r.opts.NoContext, r.opts.Cluster)), 0o600)
}

// churn measures r_max and the floor with herald stopped, then offers
// the same rates with herald running.
func (r *run) churn(ctx context.Context) error {
	rmax, err := maxRate(ctx, r.client, r.pods, Patchers, 5*time.Second)
	if err != nil {
		return fmt.Errorf("measuring r_max: %w", err)
	}
	r.report.RMax = rmax
	rates := r.report.rates(r.opts.Rates, rmax, !r.opts.OnlyAsked)
	r.opts.Logf("bench: r_max %.0f patches/s; offering %v", rmax, rates)

	var floorObs atomic.Pointer[observer]
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	if err := watchFloor(wctx, r.client, &floorObs); err != nil {
		return err
	}
	// The floor notifier runs beside the floor watch: the watch times
	// the events, the notifier's CPU is the floor of herald's.
	floor, err := startFloorNotifier(r.kubeconfig, r.opts.Dir, r.opts.GOMAXPROCS, r.limit)
	if err != nil {
		return err
	}
	floors := map[float64]StepResult{}
	for _, rate := range rates {
		floors[rate] = r.step(ctx, rate, &floorObs, floor.proc, floor.posted.Load)
	}
	r.report.FloorRSSAfterChurn = floor.proc.rss()
	floor.stop()
	// Then the cache notifier, the same steps again: what a notifier with
	// a cache of whole pods costs (kubewatch's design; cachenotifier.go),
	// held to herald's memory limit when herald is.
	caches := map[float64]StepResult{}
	cached, err := startCacheNotifier(r.kubeconfig, r.opts.Dir, r.opts.GOMAXPROCS, r.limit)
	switch c := cached.container(); {
	case err != nil && c != nil && c.OOMKills > 0:
		// What kubewatch is known for at a few thousand pods: it
		// cannot cache them all within the limit. herald's steps go on.
		r.report.CacheContainer = c
		r.opts.Logf("bench: the cache notifier was killed at its %d MiB memory limit before its cache synced (%s); its steps are skipped", c.Limit>>20, c)
	case err != nil:
		return err
	default:
		r.report.CacheRSSAfterSync = cached.proc.rss()
		for _, rate := range rates {
			caches[rate] = r.step(ctx, rate, &floorObs, cached.proc, cached.posted.Load)
		}
		r.report.CacheRSSAfterChurn = cached.proc.rss()
		r.report.CacheContainer = cached.container()
		cached.stop()
	}
	stopWatch()

	h, err := startHerald(r.opts.Herald, r.kubeconfig, r.config, r.opts.Dir, -r.pods.n, r.opts.GOMAXPROCS, !r.opts.NoPprof, r.limit, r.heraldEnv...)
	if err != nil {
		return err
	}
	defer h.stop()
	if _, err := h.waitSynced(5 * time.Minute); err != nil {
		return err
	}
	if err := h.waitWorking(5 * time.Minute); err != nil {
		return err
	}
	if r.report.IdleCPU, err = h.idle(max(cmp.Or(r.opts.Idle, IdleWindow), time.Second), filepath.Join(r.opts.Dir, "cpu-idle.pprof")); err != nil {
		return err
	}
	r.opts.Logf("bench: idle on %d pods: %.2f%% of a core", r.pods.n, 100*r.report.IdleCPU)
	for _, rate := range rates {
		// Every step is profiled (unless -no-pprof): what costs CPU differs between a
		// trickle (fixed costs) and a storm (per-notification costs).
		// So is what it allocates: the step's allocations (and its
		// drain's) are the difference of the two profiles, each read
		// after a forced GC so that it is complete (go tool pprof
		// -sample_index=alloc_space -base allocs-<rate>-start.pprof
		// allocs-<rate>-end.pprof).
		var profile <-chan error
		if h.profiling {
			h.saveProfile("/debug/pprof/allocs?gc=1", filepath.Join(r.opts.Dir, fmt.Sprintf("allocs-%.0f-start.pprof", rate)), r.opts.Logf)
			profile = h.cpuProfile(r.opts.Step, filepath.Join(r.opts.Dir, fmt.Sprintf("cpu-%.0f.pprof", rate)))
		}
		res := r.step(ctx, rate, &r.recv.current, h, nil)
		if h.profiling {
			if err := <-profile; err != nil {
				r.opts.Logf("bench: CPU profile: %v", err)
			}
			h.saveProfile("/debug/pprof/allocs?gc=1", filepath.Join(r.opts.Dir, fmt.Sprintf("allocs-%.0f-end.pprof", rate)), r.opts.Logf)
		}
		r.report.Churn = append(r.report.Churn, ChurnResult{Rate: rate, Floor: floors[rate], Cache: caches[rate], Herald: res})
	}
	r.report.HeraldRSSAfterChurn = h.rss()
	r.report.HeraldContainerAfterChurn = h.container()
	if m, err := h.get("/metrics"); err == nil {
		os.WriteFile(filepath.Join(r.opts.Dir, "metrics.txt"), m, 0o644)
	}
	return nil
}

// step offers rate patches per second for the step duration and reports
// what obs saw, and the CPU time proc spent per notification: herald's
// (each one obs saw), or with posted (the floor notifier's count of its
// POSTs so far), the floor notifier's per POST.
func (r *run) step(ctx context.Context, rate float64, obs *atomic.Pointer[observer], proc *heraldProc, posted func() int64) StepResult {
	ops := r.pods.plan(rate, r.opts.Step)
	cpu0, _ := proc.cpuSeconds()
	var posted0 int64
	if posted != nil {
		posted0 = posted()
	}
	start := time.Now().Add(50 * time.Millisecond)
	o := newObserver(ops, start)
	obs.Store(o)
	sent := send(ctx, r.client, ops, start, Patchers)
	awaitComplete(o, r.opts.Drain)
	obs.Store(nil)
	res := StepResult{Offered: len(ops), Sent: sent.sent, Failed: len(sent.failed),
		Achieved: float64(sent.sent) / sent.elapsed.Seconds()}
	res.Latency, res.Delivered, res.Missed, res.Duplicated, res.Unexpected = o.summary()
	notifications := res.Delivered
	if posted != nil {
		// The floor notifier posts what the floor watch saw, a moment
		// later: wait for it (a shortfall stays in Notified).
		_ = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			return posted()-posted0 >= int64(res.Delivered), nil
		})
		res.Notified = int(posted() - posted0)
		notifications = res.Notified
	}
	cpu1, _ := proc.cpuSeconds()
	res.CPUSeconds = cpu1 - cpu0
	if notifications > 0 {
		res.CPUPer1000 = res.CPUSeconds / float64(notifications) * 1000
	}
	who := "herald"
	if posted != nil {
		who = proc.name
	}
	errNote := ""
	if sent.firstErr != nil {
		errNote = fmt.Sprintf(" (first patch error: %v)", sent.firstErr)
	}
	r.opts.Logf("bench: %s %6.0f/s: %d patches, %d seen, %d missed, %d dup, %d unexpected; p50 %.1f p99 %.1f p99.9 %.1f ms; %.2f CPU-s/1000%s",
		who, rate, len(ops), res.Delivered, res.Missed, res.Duplicated, res.Unexpected, res.Latency.P50, res.Latency.P99, res.Latency.P999, res.CPUPer1000, errNote)
	return res
}

func mb(b int64) float64 { return float64(b) / 1e6 }
