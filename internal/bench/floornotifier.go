package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// The floor notifier is the least any notifier does per crash: receive
// the pod's watch event (protobuf, as herald's informer does) and POST one
// small JSON document to a webhook, with nothing kept, judged or
// deduplicated. It runs in a process of its own, as herald does, so that
// its CPU per 1,000 notifications can be measured the same way: the figure
// herald's is read against (docs/performance.md).

// floorNotifierEnv, set to "<kubeconfig> <url>", makes the benchmark's
// binary (herald-bench, or this package's test binary) run the floor
// notifier instead of itself, and cacheNotifierEnv the cache notifier
// (cachenotifier.go): see RunFloorNotifierIfAsked.
const (
	floorNotifierEnv = "HERALD_BENCH_FLOOR_NOTIFIER"
	cacheNotifierEnv = "HERALD_BENCH_CACHE_NOTIFIER"
)

// floorReady is the line a reference notifier prints once its watch runs
// (the cache notifier: once its cache has synced).
const floorReady = "floor notifier: watching"

// RunFloorNotifierIfAsked runs the floor notifier or the cache notifier
// and exits if this process was started as one; otherwise it returns at
// once. herald-bench's main and this package's TestMain call it first.
func RunFloorNotifierIfAsked() {
	run, arg, ok := runFloorNotifier, "", false
	if arg, ok = os.LookupEnv(floorNotifierEnv); !ok {
		if arg, ok = os.LookupEnv(cacheNotifierEnv); !ok {
			return
		}
		run = runCacheNotifier
	}
	kubeconfig, url, _ := strings.Cut(arg, " ")
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, kubeconfig, url); err != nil && ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, "reference notifier:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func runFloorNotifier(ctx context.Context, kubeconfig, url string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	// As herald asks: protobuf, and no gzip.
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cfg.DisableCompression = true
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	w, err := watchPods(ctx, client)
	if err != nil {
		return err
	}
	defer w.Stop()
	fmt.Println(floorReady)
	hc := &http.Client{Timeout: 10 * time.Second}
	for {
		var ev watch.Event
		select {
		case <-ctx.Done():
			return ctx.Err()
		case e, ok := <-w.ResultChan():
			if !ok {
				return errors.New("the pod watch ended")
			}
			ev = e
		}
		if pod, ok := ev.Object.(*corev1.Pod); ok && ev.Type == watch.Modified {
			postPod(hc, url, pod, "floor notifier")
		}
	}
}

// postPod POSTs the small JSON document a reference notifier sends for
// each pod update; who names the notifier in errors.
func postPod(hc *http.Client, url string, pod *corev1.Pod, who string) {
	restarts, crash, _ := appState(pod)
	body, _ := json.Marshal(map[string]any{"namespace": pod.Namespace, "name": pod.Name, "restartCount": restarts, "crashLooping": crash})
	resp, err := hc.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		fmt.Fprintln(os.Stderr, who+": POST:", err)
		return
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// floorNotifier is a running reference notifier (the floor notifier or
// the cache notifier) and the receiver counting what it posts.
type floorNotifier struct {
	proc   *heraldProc // for its CPU time and log; not a herald
	recv   *httptest.Server
	posted atomic.Int64
}

// startFloorNotifier starts the floor notifier against kubeconfig and
// waits until its watch runs.
func startFloorNotifier(kubeconfig, dir string, gomaxprocs int, limit int64) (*floorNotifier, error) {
	return startReferenceNotifier("floor notifier", floorNotifierEnv, kubeconfig, dir, gomaxprocs, limit)
}

// startCacheNotifier starts the cache notifier against kubeconfig and
// waits until its cache has synced.
func startCacheNotifier(kubeconfig, dir string, gomaxprocs int, limit int64) (*floorNotifier, error) {
	return startReferenceNotifier("cache notifier", cacheNotifierEnv, kubeconfig, dir, gomaxprocs, limit)
}

// startReferenceNotifier starts a reference notifier; with limit > 0
// held to it as herald is, so that both meet the same container.
func startReferenceNotifier(name, env, kubeconfig, dir string, gomaxprocs int, limit int64) (*floorNotifier, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	f := &floorNotifier{}
	f.recv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		f.posted.Add(1)
	}))
	p, err := startProc(name, self, nil, append(procEnv(gomaxprocs), env+"="+kubeconfig+" "+f.recv.URL),
		filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".log"), limit)
	if err != nil {
		f.recv.Close()
		return nil, err
	}
	f.proc = p
	if err := p.waitFor("the "+name+"'s watch", 5*time.Minute, func() bool {
		b, _ := os.ReadFile(p.log)
		return bytes.Contains(b, []byte(floorReady))
	}); err != nil {
		f.stop()
		return f, err // its process has exited: f.container says whether at its memory limit
	}
	return f, nil
}

// container reports what the notifier's memory cgroup saw (nil without
// one, or without a notifier).
func (f *floorNotifier) container() *Container {
	if f == nil || f.proc == nil {
		return nil
	}
	return f.proc.container()
}

func (f *floorNotifier) stop() {
	f.proc.stop()
	f.recv.Close()
}
