package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/kubernetes"
)

// patchKey identifies one status patch: which pod, the app container's
// restart count it wrote, and whether it put the container into
// CrashLoopBackOff (herald: firing) or back to ready (resolved).
type patchKey struct {
	pod      int
	restarts int
	crash    bool
}

// op is one planned patch and the moment it is due. Latency is counted
// from the due time, not from when a patcher got round to sending it, so
// a control plane that falls behind shows as latency (no coordinated
// omission).
type op struct {
	patchKey
	due time.Duration // after the step's start
}

// pods tracks the benchmark's pods between steps: each pod's restart
// count only grows, so every patch key is unique for the whole run.
type pods struct {
	n        int
	restarts []int
	next     int // round-robin cursor for the next pod to crash
}

func newPods(n int) *pods { return &pods{n: n, restarts: make([]int, n)} }

// grow makes room for pods added to the cluster.
func (p *pods) grow(n int) {
	p.restarts = append(p.restarts, make([]int, n-p.n)...)
	p.n = n
}

// plan lays out rate·d patches, open loop: crashes of pods taken round
// robin, each followed by that pod's recovery about lag later, then the
// recoveries still outstanding at the end at the same rate. A pod is
// never crashed twice in one plan, so herald cannot fold two crashes of
// one pod into one notification.
func (p *pods) plan(rate float64, d time.Duration) []op {
	total := int(rate * d.Seconds())
	interval := time.Duration(float64(time.Second) / rate)
	// A pod recovers ~2 s (lagTicks) after its crash, or sooner where
	// that would keep more than a quarter of the pods down at once.
	lagTicks := max(min(int(2*rate), p.n/2), 2)
	var ops []op
	var down []int // pods crashed and not yet recovered, oldest first
	crashedAt := map[int]int{}
	used := map[int]bool{}
	for tick := 0; tick < total || len(down) > 0; tick++ {
		due := time.Duration(tick) * interval
		recover := len(down) > 0 && (tick >= total || tick%2 == 1 && tick-crashedAt[down[0]] >= lagTicks)
		if !recover && len(used) >= p.n {
			if len(down) == 0 {
				break
			}
			recover = true // every pod has crashed once: wind down
		}
		if recover {
			pod := down[0]
			down = down[1:]
			ops = append(ops, op{patchKey{pod, p.restarts[pod], false}, due})
			continue
		}
		for used[p.next] {
			p.next = (p.next + 1) % p.n
		}
		pod := p.next
		used[pod] = true
		p.restarts[pod]++
		crashedAt[pod] = tick
		down = append(down, pod)
		ops = append(ops, op{patchKey{pod, p.restarts[pod], true}, due})
	}
	return ops
}

// sendResult is how a plan went on the API side.
type sendResult struct {
	sent     int
	failed   []patchKey    // patches the API server refused: nothing to notify
	elapsed  time.Duration // first due to last patch answered
	firstErr error
}

// send runs a plan with one patcher goroutine per shard; a pod always
// goes to the same shard, so its patches are sent in order.
func send(ctx context.Context, client kubernetes.Interface, ops []op, start time.Time, shards int) sendResult {
	queues := make([]chan op, shards)
	var wg sync.WaitGroup
	var sent atomic.Int64
	var errOnce sync.Once
	var res sendResult
	var failedMu sync.Mutex
	for i := range queues {
		queues[i] = make(chan op, len(ops))
		q := queues[i]
		wg.Go(func() {
			for o := range q {
				if err := patchStatus(ctx, client, o.pod, statusPatch(o.crash, o.restarts, time.Now())); err != nil {
					failedMu.Lock()
					res.failed = append(res.failed, o.patchKey)
					failedMu.Unlock()
					errOnce.Do(func() { res.firstErr = err })
					continue
				}
				sent.Add(1)
			}
		})
	}
	for _, o := range ops {
		if wait := time.Until(start.Add(o.due)); wait > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(wait): // the open-loop schedule
			}
		}
		queues[o.pod%shards] <- o
	}
	for _, q := range queues {
		close(q)
	}
	wg.Wait()
	res.sent, res.elapsed = int(sent.Load()), time.Since(start)
	return res
}

// maxRate measures r_max: the status patches per second the control
// plane answers with workers patching back to back for d. The patches
// keep every pod ready (they only raise its restart count), so they
// open no incident.
func maxRate(ctx context.Context, client kubernetes.Interface, p *pods, workers int, d time.Duration) (float64, error) {
	var done atomic.Int64
	var firstErr error
	var errOnce sync.Once
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	start := time.Now()
	for w := range workers {
		wg.Go(func() {
			// Worker w owns pods w, w+workers, ...: no pod is patched by
			// two workers, so its restart count is never raced.
			for i := w; ctx.Err() == nil && w < p.n; i = (i + workers) % p.n {
				if i < workers && i != w {
					i = w // wrapped round: start again at our first pod
				}
				p.restarts[i]++
				if err := patchStatus(context.Background(), client, i, statusPatch(false, p.restarts[i], time.Now())); err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	return float64(done.Load()) / time.Since(start).Seconds(), firstErr
}

// observer records when each expected patch key is seen (a watch event
// or a notification), and what was seen twice or never planned.
type observer struct {
	mu         sync.Mutex
	due        map[patchKey]time.Time
	latency    map[patchKey]time.Duration
	duplicated int
	unexpected int
}

func newObserver(ops []op, start time.Time) *observer {
	o := &observer{due: make(map[patchKey]time.Time, len(ops)), latency: make(map[patchKey]time.Duration, len(ops))}
	o.expect(ops, start)
	return o
}

// expect adds a plan started at start to what the observer waits for.
func (o *observer) expect(ops []op, start time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, op := range ops {
		o.due[op.patchKey] = start.Add(op.due)
	}
}

// forget drops patches that were never made from what the observer
// waits for.
func (o *observer) forget(keys []patchKey) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, k := range keys {
		delete(o.due, k)
	}
}

// see records k arriving at now.
func (o *observer) see(k patchKey, now time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	due, ok := o.due[k]
	switch {
	case !ok:
		o.unexpected++
	case o.latency[k] != 0:
		o.duplicated++
	default:
		o.latency[k] = max(now.Sub(due), time.Nanosecond)
	}
}

// complete reports whether every planned key has been seen.
func (o *observer) complete() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.latency) == len(o.due)
}

// missedKeys names up to n planned keys not seen (yet), earliest due
// first: "app-00042 restarts=7 crash due +1234.5s" (since start).
func (o *observer) missedKeys(n int, start time.Time) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var keys []patchKey
	for k := range o.due {
		if o.latency[k] == 0 {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b patchKey) int { return o.due[a].Compare(o.due[b]) })
	var out []string
	for _, k := range keys[:min(n, len(keys))] {
		what := "ready"
		if k.crash {
			what = "crash"
		}
		out = append(out, fmt.Sprintf("%s restarts=%d %s due +%.1fs", podName(k.pod), k.restarts, what, o.due[k].Sub(start).Seconds()))
	}
	return out
}

// Latency summarises one step's latencies (milliseconds), exact sort.
type Latency struct {
	P50  float64 `json:"p50_ms"`
	P99  float64 `json:"p99_ms"`
	P999 float64 `json:"p999_ms"`
	Max  float64 `json:"max_ms"`
}

// MarshalJSON writes a step with nothing delivered (its percentiles NaN,
// which JSON cannot hold) as null percentiles, rather than failing the
// whole report at its end.
func (l Latency) MarshalJSON() ([]byte, error) {
	v := func(f float64) any {
		if math.IsNaN(f) {
			return nil
		}
		return f
	}
	return json.Marshal(map[string]any{"p50_ms": v(l.P50), "p99_ms": v(l.P99), "p999_ms": v(l.P999), "max_ms": v(l.Max)})
}

// summary returns the latency percentiles and the delivered, missed,
// duplicated and unexpected counts.
func (o *observer) summary() (lat Latency, delivered, missed, duplicated, unexpected int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	all := make([]time.Duration, 0, len(o.latency))
	for _, l := range o.latency {
		all = append(all, l)
	}
	slices.Sort(all)
	q := func(p float64) float64 {
		if len(all) == 0 {
			return math.NaN()
		}
		i := min(int(math.Ceil(p*float64(len(all))))-1, len(all)-1)
		return float64(all[max(i, 0)]) / float64(time.Millisecond)
	}
	lat = Latency{P50: q(0.50), P99: q(0.99), P999: q(0.999), Max: q(1)}
	return lat, len(o.latency), len(o.due) - len(o.latency), o.duplicated, o.unexpected
}
