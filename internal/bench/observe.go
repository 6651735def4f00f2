package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/herald-k8s/herald/sinks"
)

// podIndex is the inverse of podName.
func podIndex(name string) (int, bool) {
	s, ok := strings.CutPrefix(name, "app-")
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(s)
	return i, err == nil
}

// receiver is the webhook endpoint herald notifies: a real HTTP server on
// loopback that hands each notification's patch key to the observer of
// the step in progress.
type receiver struct {
	*httptest.Server
	current atomic.Pointer[observer]
	strays  atomic.Int64 // notifications outside any step
}

func newReceiver() *receiver {
	r := &receiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		now := time.Now()
		var p sinks.Payload
		if err := json.NewDecoder(req.Body).Decode(&p); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		o := r.current.Load()
		if o == nil {
			r.strays.Add(1)
			return
		}
		pod, ok1 := podIndex(p.Object.Name)
		restarts, err := strconv.Atoi(p.Facts["restartCount"])
		if !ok1 || err != nil || (p.Transition != "firing" && p.Transition != "resolved") {
			o.see(patchKey{pod: -1}, now) // counted as unexpected
			return
		}
		o.see(patchKey{pod, restarts, p.Transition == "firing"}, now)
	}))
	return r
}

// watchFloor is the bare client-go watch the floor is measured with: the
// same protobuf decoding herald's informer does, nothing else. It feeds
// the observer of the step in progress until ctx ends.
func watchFloor(ctx context.Context, client kubernetes.Interface, current *atomic.Pointer[observer]) error {
	w, err := watchPods(ctx, client)
	if err != nil {
		return err
	}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			now := time.Now()
			pod, ok := ev.Object.(*corev1.Pod)
			if ev.Type != watch.Modified || !ok {
				continue
			}
			o := current.Load()
			i, ok1 := podIndex(pod.Name)
			restarts, crash, ok2 := appState(pod)
			if o != nil && ok1 && ok2 {
				o.see(patchKey{i, restarts, crash}, now)
			}
		}
	}()
	return nil
}

// watchPods watches the bench's pods from now on. A RetryWatcher resumes
// from the last event seen when the server closes a watch (it drops
// watchers that fall behind), as an informer's reflector does.
func watchPods(ctx context.Context, client kubernetes.Interface) (watch.Interface, error) {
	list, err := client.CoreV1().Pods(Namespace).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return nil, err
	}
	return watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return client.CoreV1().Pods(Namespace).Watch(ctx, opts)
		},
	})
}

// awaitComplete waits until the observer has seen every planned key or
// timeout passes (what is still missing then counts as missed).
func awaitComplete(o *observer, timeout time.Duration) {
	// A timeout is a result here (the misses are counted), not an error.
	_ = wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return o.complete(), nil
	})
}

// heraldConfig is the configuration herald runs with: the crash-loop
// rule on every pod, notifying the loopback webhook.
func heraldConfig(url string, crashContext, cluster bool) string {
	more := ""
	if cluster {
		// As the chart's default rules do: the Deployments and Nodes are
		// cached and assessed. The bench changes neither, so neither
		// notifies (a notification would count as unexpected).
		more = `
  - name: rollout-stuck
    kind: Deployment
    detector: rollout-stuck
    sinks: [hook]
  - name: node-not-ready
    kind: Node
    detector: node-not-ready
    sinks: [hook]`
	}
	return fmt.Sprintf(`# herald-bench: one crash-loop rule, one webhook. The bench measures the
# delivery of every crash and every recovery, so the damping that merges
# them (settle time, hold-down, flap damping; docs/incidents.md) is off,
# and so is the cap on a namespace's open incidents (one storm is 10,000).
incidents: {startup: silent, resolveHoldDown: 0s, flapping: {starts: 0}, maxOpenPerNamespace: 0}
context: {enabled: %t}
rules:
  - name: pod-crashloop
    kind: Pod
    detector: crashloop
    settle: 0s
    restartStep: -1
    sinks: [hook]%s
sinks:
  - name: hook
    queueSize: 100000
    webhook: {url: %s/herald}
`, crashContext, more, url)
}
