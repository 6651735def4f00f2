package enrich

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/kube"
)

// recorder is the next stage: it records what it is handed, in order.
type recorder struct {
	mu  sync.Mutex
	got []incident.Notification
	at  []time.Time
}

func (r *recorder) Dispatch(_ context.Context, n incident.Notification) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got, r.at = append(r.got, n), append(r.at, time.Now())
	return nil
}

func (r *recorder) wait(t *testing.T, n int) []incident.Notification {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.got) >= n, nil
	})
	if err != nil {
		t.Fatalf("%d notifications passed, want %d", len(r.got), n)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]incident.Notification(nil), r.got...)
}

// slowSource answers after a delay (or never, until the request ends).
type slowSource struct{ delay time.Duration }

func (s slowSource) Logs(ctx context.Context, _, _ string, _ *corev1.PodLogOptions) ([]byte, error) {
	select {
	case <-time.After(s.delay):
		return []byte("line 1\nline 2\n"), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s slowSource) Events(ctx context.Context, _, _ string) ([]corev1.Event, error) {
	return []corev1.Event{{Type: "Warning", Reason: "BackOff", Message: "back-off", Count: 3}}, nil
}

func crash(id string, tr incident.Transition) incident.Notification {
	return incident.Notification{Transition: tr, Seq: 1, Incident: incident.Incident{
		ID: id, Reason: "CrashLoopBackOff", Container: "app", Members: []string{"Pod/shop/" + id},
		Facts: map[string]string{"restartCount": "3", "exitCode": "1"}}}
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func start(t *testing.T, opts Options) *Enricher {
	t.Helper()
	opts.Logger, opts.Logs = quiet(), true
	e := New(opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return e
}

// TestAnIncidentKeepsItsOrder: a resolved that comes while its firing's
// context is gathered goes out after the firing, with the same context;
// another incident's notification does not wait.
func TestAnIncidentKeepsItsOrder(t *testing.T) {
	next := &recorder{}
	e := start(t, Options{Next: next, Source: slowSource{delay: 300 * time.Millisecond}})
	ctx := context.Background()
	e.Dispatch(ctx, crash("a", incident.Firing))
	e.Dispatch(ctx, crash("a", incident.Resolved))
	other := crash("b", incident.Resolved)
	e.Dispatch(ctx, other)
	got := next.wait(t, 3)
	if got[0].Incident.ID != "b" {
		t.Errorf("first out: %s %s, want b's resolved (it waits for nothing)", got[0].Incident.ID, got[0].Transition)
	}
	if got[1].Transition != incident.Firing || got[2].Transition != incident.Resolved {
		t.Fatalf("incident a: %s then %s, want firing then resolved", got[1].Transition, got[2].Transition)
	}
	if got[1].Context == nil || got[1].Context.Logs == nil || got[2].Context != got[1].Context {
		t.Errorf("the resolved does not carry the firing's context: %+v / %+v", got[1].Context, got[2].Context)
	}
}

// TestWaitBound: a source that never answers delays a firing by the wait
// bound, no more; it goes out with what arrived and says what did not.
func TestWaitBound(t *testing.T) {
	next := &recorder{}
	e := start(t, Options{Next: next, Source: slowSource{delay: time.Hour}, Wait: 300 * time.Millisecond})
	start := time.Now()
	e.Dispatch(context.Background(), crash("a", incident.Firing))
	got := next.wait(t, 1)
	took := next.at[0].Sub(start)
	c := got[0].Context
	if took < 300*time.Millisecond || took > time.Second {
		t.Errorf("went out after %s, want the 300ms wait", took)
	}
	if c == nil || c.Logs != nil || len(c.Events) != 1 || c.Unavailable != "logs: no answer within 300ms" || c.Hint == "" {
		t.Errorf("context %+v, want events and hint, logs unavailable", c)
	}
}

// TestBudget: past the rate budget, notifications go out at once without
// API calls, saying so; none is lost.
func TestBudget(t *testing.T) {
	next := &recorder{}
	e := start(t, Options{Next: next, Source: slowSource{delay: 10 * time.Millisecond}, Rate: 1, Wait: time.Second})
	for i := range 20 {
		e.Dispatch(context.Background(), crash(string(rune('a'+i)), incident.Firing))
	}
	got := next.wait(t, 20)
	with, skipped := 0, 0
	for _, n := range got {
		switch {
		case n.Context != nil && n.Context.Logs != nil:
			with++
		case n.Context != nil && strings.Contains(n.Context.Unavailable, "budget") && n.Context.Hint != "":
			skipped++
		}
	}
	// Burst of max(rate × wait, 2) = 2 tokens: one context of 2 requests.
	if with != 1 || skipped != 19 {
		t.Errorf("%d with context, %d skipped for the budget; want 1 and 19", with, skipped)
	}
}

// TestNoGrowthWhenTheAPIHangs: 1,000 crashes while every context request
// hangs (a real HTTP client against a server that never answers): each
// notification goes out at the wait bound, and afterwards no goroutine or
// memory is left behind.
func TestNoGrowthWhenTheAPIHangs(t *testing.T) {
	hang := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(hang)
	client, err := kube.New(&rest.Config{Host: srv.URL, QPS: -1})
	if err != nil {
		t.Fatal(err)
	}
	next := &recorder{}
	runtime.GC()
	baseGoroutines := runtime.NumGoroutine()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	e := start(t, Options{Next: next, Source: KubeSource{Client: client}, Wait: 50 * time.Millisecond, Rate: 1e6, Workers: 16})
	for i := range 1000 {
		e.Dispatch(context.Background(), crash(fmt.Sprintf("hung-%d", i), incident.Firing))
		if i%50 == 49 { // the crashes' pace: stay within the worker queue
			next.wait(t, i-40)
		}
	}
	got := next.wait(t, 1000)
	for _, n := range got {
		if n.Context == nil || n.Context.Unavailable == "" {
			t.Fatalf("a notification does not say its context is missing: %+v", n.Context)
		}
	}
	srv.CloseClientConnections()
	err = wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return runtime.NumGoroutine() <= baseGoroutines+16+8, nil // the workers, and the HTTP client's idle connections
	})
	if err != nil {
		t.Errorf("%d goroutines after 1,000 hung requests, %d before", runtime.NumGoroutine(), baseGoroutines)
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > 8<<20 {
		t.Errorf("heap grew by %d bytes over 1,000 notifications", grown)
	}
	t.Logf("1,000 hung contexts: goroutines %d → %d, heap %d → %d KB", baseGoroutines, runtime.NumGoroutine(), before.HeapAlloc>>10, after.HeapAlloc>>10)
}

// TestAFiringNotAboutAPodHasItsHint: an autoscaler's or a CronJob's
// firing gathers nothing (no pod, no request) and goes on at once, with
// its hint; its resolution has none of its own; a rule that turned
// context off gets no hint.
func TestAFiringNotAboutAPodHasItsHint(t *testing.T) {
	next := &recorder{}
	e := start(t, Options{Next: next, Source: slowSource{delay: time.Hour}})
	ctx := context.Background()
	cron := incident.Notification{Transition: incident.Firing, Seq: 1, Incident: incident.Incident{
		ID: "c", Reason: "MissedSchedule", Members: []string{"CronJob/shop/backup"}, Facts: map[string]string{"schedule": "0 * * * *"}}}
	e.Dispatch(ctx, cron)
	resolved := cron
	resolved.Transition, resolved.Seq = incident.Resolved, 2
	e.Dispatch(ctx, resolved)
	got := next.wait(t, 2)
	if got[0].Context == nil || !strings.Contains(got[0].Context.Hint, "No Job was created for this run") || got[0].Context.Logs != nil {
		t.Errorf("the firing's context: %+v, want the hint alone", got[0].Context)
	}
	if got[1].Context != nil {
		t.Errorf("the resolution's context: %+v, want none", got[1].Context)
	}

	// A rule that turned context off: no hint either, about a CronJob
	// or a pod.
	quiet := cron
	quiet.Incident.ID, quiet.Incident.NoContext = "q", true
	e.Dispatch(ctx, quiet)
	pod := crash("p", incident.Firing)
	pod.Incident.NoContext = true
	e.Dispatch(ctx, pod)
	got = next.wait(t, 4)
	if got[2].Context != nil || got[3].Context != nil {
		t.Errorf("context under a rule that turned it off: %+v, %+v", got[2].Context, got[3].Context)
	}
}
