package volumes

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/herald-k8s/herald/internal/rules"
)

// TestParseSummary: from a kubelet's summary of real shape, the volumes
// of claims (with their pod), not a pod's other volumes, nor a claim the
// kubelet has not measured yet.
func TestParseSummary(t *testing.T) {
	f, err := os.Open("testdata/summary.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	at := time.Date(2026, 11, 30, 2, 59, 30, 0, time.UTC)
	got, err := parseSummary(f, at.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	want := []reading{
		{claimKey{"shop", "pgdata-postgres-0"}, "postgres-0", rules.VolumeSample{At: at, Capacity: 21474836480, Available: 3221225472, Inodes: 1310720, InodesFree: 1300000}},
		{claimKey{"batch", "scratch-7f9c-scratch"}, "scratch-7f9c", rules.VolumeSample{At: at.Add(10 * time.Second), Capacity: 10737418240, Available: 1073741824}},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if !got[i].sample.At.Equal(want[i].sample.At) || got[i].claim != want[i].claim || got[i].pod != want[i].pod ||
			got[i].sample.Capacity != want[i].sample.Capacity || got[i].sample.Available != want[i].sample.Available || got[i].sample.InodesFree != want[i].sample.InodesFree {
			t.Errorf("reading %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	// A kubelet whose clock is ahead: its time stamp is taken as the
	// poll's, so that it cannot hold back every later reading.
	f.Seek(0, 0)
	early := at.Add(-5 * time.Minute)
	if got, _ := parseSummary(f, early); len(got) == 0 || !got[0].sample.At.Equal(early) {
		t.Errorf("a time stamp 5 min ahead kept: %+v", got)
	}
	if _, err := parseSummary(strings.NewReader(`{"pods": [`), time.Now()); err == nil || !strings.Contains(err.Error(), "cut short") {
		t.Errorf("a summary cut short: %v", err)
	}
}

// kubelets serves summaries by node: each a claim shop/c-NODE whose free
// bytes the test sets; a node in hang answers only when its request ends.
type kubelets struct {
	mu       sync.Mutex
	free     map[string]int64
	at       map[string]time.Time
	hang     map[string]bool
	inFlight atomic.Int32
	most     atomic.Int32
	hung     chan struct{} // told of each request a hanging node holds
}

func (k *kubelets) fetch(ctx context.Context, node string) (io.ReadCloser, error) {
	n := k.inFlight.Add(1)
	defer k.inFlight.Add(-1)
	for {
		m := k.most.Load()
		if n <= m || k.most.CompareAndSwap(m, n) {
			break
		}
	}
	k.mu.Lock()
	free, mounted := k.free[node]
	at, hang := k.at[node], k.hang[node]
	k.mu.Unlock()
	if hang {
		select {
		case k.hung <- struct{}{}:
		default:
		}
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if node == "forbidden" {
		return nil, apierrors.NewForbidden(schema.GroupResource{Resource: "nodes/proxy"}, node, errors.New(`User "system:serviceaccount:herald:herald" cannot get resource "nodes/proxy" in API group "" at the cluster scope`))
	}
	body := `{"pods": []}`
	if mounted {
		body = `{"pods": [{"podRef": {"name": "p-` + node + `", "namespace": "shop"}, "volume": [{"time": "` + at.Format(time.RFC3339) +
			`", "capacityBytes": 1000, "availableBytes": ` + strconv.FormatInt(free, 10) + `, "name": "data", "pvcRef": {"name": "c-` + node + `", "namespace": "shop"}}]}]}`
	}
	return io.NopCloser(strings.NewReader(body)), nil
}

func (k *kubelets) set(node string, free int64, at time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.free[node], k.at[node] = free, at
}

func (k *kubelets) unmount(node string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.free, node)
}

type queued struct {
	mu   sync.Mutex
	keys []string
}

func (q *queued) add(ns, name string) {
	q.mu.Lock()
	q.keys = append(q.keys, ns+"/"+name)
	q.mu.Unlock()
}
func (q *queued) take() string {
	q.mu.Lock()
	defer q.mu.Unlock()
	s := strings.Join(q.keys, ",")
	q.keys = nil
	return s
}

// TestPoll: nothing is read before the cache has listed the nodes; a
// round reads every node, at most Concurrency at once, each within
// Timeout (a hanging kubelet costs one timeout, not the round); after the
// first, the store is Measuring and every claim is queued once; a new
// measurement queues its claim, the same one served again (or one too
// soon after the last kept) does not; a claim its node no longer mounts,
// or whose kubelet does not answer, keeps its readings until the window
// ends; no rule, no polling, nothing kept.
func TestPoll(t *testing.T) {
	nodes := []string{"a", "b", "c", "d", "e", "hung", "forbidden"}
	t0 := time.Now().Add(-time.Minute).Truncate(time.Second)
	k := &kubelets{free: map[string]int64{}, at: map[string]time.Time{}, hang: map[string]bool{"hung": true}}
	for _, n := range nodes[:5] {
		k.set(n, 900, t0)
	}
	var q queued
	window := time.Hour
	ready, measured := false, 0
	reg := prometheus.NewRegistry()
	var logs strings.Builder
	store := NewStore()
	p := New(Options{Interval: time.Minute, Concurrency: 2, Timeout: 300 * time.Millisecond,
		Window: func() time.Duration { return window }, Ready: func() bool { return ready }, Nodes: func() []string { return nodes },
		Fetch: k.fetch, Changed: q.add, Measuring: func() { measured++ }, Store: store, Metrics: NewMetrics(reg),
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})

	p.Poll(context.Background())
	if store.Measuring() || k.most.Load() != 0 {
		t.Fatal("read before the cache listed the nodes")
	}
	ready = true
	start := time.Now()
	p.Poll(context.Background())
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("the round took %s: a hanging kubelet must cost one timeout", took)
	}
	if m := k.most.Load(); m > 2 {
		t.Errorf("%d requests at once, want at most 2", m)
	}
	if got := q.take(); len(strings.Split(got, ",")) != 5 {
		t.Errorf("queued %q, want the 5 claims", got)
	}
	if !store.Measuring() || measured != 1 {
		t.Errorf("measuring %v, told %d times, after the first round", store.Measuring(), measured)
	}
	if u, ok := store.Usage("shop", "c-a"); !ok || u.Node != "a" || u.Pod != "p-a" || len(u.Samples) != 1 || u.Samples[0].Available != 900 {
		t.Errorf("c-a: %+v %v", u, ok)
	}
	if v := testutil.ToFloat64(p.o.Metrics.Requests.WithLabelValues("error")); v != 2 {
		t.Errorf("%v failed requests counted, want 2", v)
	}
	if !strings.Contains(logs.String(), "herald may not get nodes/proxy") {
		t.Errorf("the log does not say what the refusal needs:\n%s", logs.String())
	}

	// Served again unchanged: nothing queued. A new measurement on a:
	// queued; one on c within a minute of its last (window/60): not
	// kept. b no longer mounts its claim: it keeps its reading.
	k.set("a", 800, t0.Add(90*time.Second))
	k.set("c", 700, t0.Add(30*time.Second))
	k.unmount("b")
	p.Poll(context.Background())
	if got := q.take(); got != "shop/c-a" {
		t.Errorf("queued %q, want shop/c-a", got)
	}
	if u, _ := store.Usage("shop", "c-a"); len(u.Samples) != 2 {
		t.Errorf("c-a has %d samples, want 2", len(u.Samples))
	}
	if u, _ := store.Usage("shop", "c-c"); len(u.Samples) != 1 {
		t.Errorf("c-c has %d samples, want 1 (the second came too soon)", len(u.Samples))
	}
	if _, ok := store.Usage("shop", "c-b"); !ok {
		t.Error("c-b was dropped at once when its pod stopped mounting it (a restart, a move)")
	}
	if measured != 1 {
		t.Errorf("told of measuring %d times in one term", measured)
	}

	// c stops answering: its claim keeps its reading ...
	k.mu.Lock()
	k.hang["c"] = true
	k.mu.Unlock()
	p.Poll(context.Background())
	if _, ok := store.Usage("shop", "c-c"); !ok {
		t.Error("c-c was dropped when its kubelet did not answer")
	}
	// ... until it is older than the window, as does b's; both queued.
	window = 30 * time.Second
	p.Poll(context.Background())
	if _, ok := store.Usage("shop", "c-c"); ok {
		t.Error("c-c is kept past the window")
	}
	if got := q.take(); !strings.Contains(got, "shop/c-b") || !strings.Contains(got, "shop/c-c") {
		t.Errorf("queued %q, want c-b and c-c, dropped", got)
	}

	// No rule reads volumes: everything goes, and is queued.
	window = time.Hour
	k.set("d", 700, time.Now())
	p.Poll(context.Background())
	if store.Len() == 0 {
		t.Fatal("no claim to drop")
	}
	q.take()
	window = 0
	p.Poll(context.Background())
	if store.Len() != 0 || q.take() == "" {
		t.Errorf("%d claims kept with no rule", store.Len())
	}
}

// TestPollerStopsWithTheTerm: Run ends when its context does, in the
// middle of a round.
func TestPollerStopsWithTheTerm(t *testing.T) {
	k := &kubelets{free: map[string]int64{}, at: map[string]time.Time{}, hang: map[string]bool{"hung": true}, hung: make(chan struct{}, 1)}
	p := New(Options{Interval: time.Hour, Concurrency: 1, Timeout: time.Hour,
		Window: func() time.Duration { return time.Hour }, Ready: func() bool { return true }, Nodes: func() []string { return []string{"hung", "hung"} },
		Fetch: k.fetch, Changed: func(string, string) {}, Measuring: func() {}, Store: NewStore(), Metrics: NewMetrics(prometheus.NewRegistry()),
		Logger: slog.New(slog.DiscardHandler)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	<-k.hung
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not end with its context")
	}
}

func mustRead(tb testing.TB, path string) []byte {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

func sampleAt(at time.Time) rules.VolumeSample {
	return rules.VolumeSample{At: at, Capacity: 1 << 30, Available: 1 << 29, Inodes: 65536, InodesFree: 60000}
}
