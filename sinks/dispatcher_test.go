package sinks

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/herald-k8s/herald/internal/incident"
)

// flakySink fails its first failures sends with err, then accepts.
type flakySink struct {
	name     string
	failures int
	err      error

	mu       sync.Mutex
	attempts int
	got      []string
	done     chan struct{}
}

func (s *flakySink) Name() string { return s.name }

func (s *flakySink) Send(_ context.Context, n incident.Notification) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attempts++
	if s.attempts <= s.failures {
		return s.err
	}
	s.got = append(s.got, n.ID())
	close(s.done)
	return nil
}

func TestDispatcherRetriesTransientFailures(t *testing.T) {
	s := &flakySink{name: "a", failures: 2, err: &Retryable{Err: errors.New("503")}, done: make(chan struct{})}
	d := NewDispatcher(slog.New(slog.NewTextHandler(io.Discard, nil)), nil, LaneOptions{Sink: s})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go d.Run(ctx)
	n := incident.Notification{Incident: incident.Incident{ID: "x", Sinks: []string{"a"}}, Seq: 1}
	if err := d.Dispatch(ctx, n); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		t.Fatal("not delivered after retries")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.attempts != 3 || len(s.got) != 1 || s.got[0] != "x-1" {
		t.Errorf("attempts %d, delivered %v; want 3 attempts, [x-1]", s.attempts, s.got)
	}
}

func TestDispatcherDoesNotRetryPermanentFailures(t *testing.T) {
	s := &flakySink{name: "a", failures: 100, err: errors.New("HTTP 400"), done: make(chan struct{})}
	d := NewDispatcher(slog.New(slog.NewTextHandler(io.Discard, nil)), nil, LaneOptions{Sink: s})
	n := incident.Notification{Incident: incident.Incident{ID: "x", Sinks: []string{"a"}}, Seq: 1}
	if err := d.Dispatch(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	d.Close()
	d.Run(context.Background()) // returns once the queue is drained
	if s.attempts != 1 {
		t.Errorf("a permanent failure was tried %d times, want 1", s.attempts)
	}
}

// TestDispatchUnknownSink: a sink a reload removed is skipped and
// counted, and the ledger is told to forget it.
func TestDispatchUnknownSink(t *testing.T) {
	metrics := NewMetrics(nil)
	d := NewDispatcher(slog.New(slog.NewTextHandler(io.Discard, nil)), metrics)
	forgotten := ""
	d.OnDelivered(func(_ incident.Notification, sink string) { forgotten = sink })
	n := incident.Notification{Incident: incident.Incident{ID: "x", Sinks: []string{"nope"}}, Seq: 1}
	if err := d.Dispatch(context.Background(), n); err != nil {
		t.Errorf("dispatch to a removed sink: %v", err)
	}
	if forgotten != "nope" || testutil.ToFloat64(metrics.Dropped.WithLabelValues("nope")) != 1 {
		t.Errorf("removed sink not accounted: forgotten %q", forgotten)
	}
}

// recordingSink records what it was sent.
type recordingSink struct {
	name string
	mu   sync.Mutex
	got  []string
}

func (s *recordingSink) Name() string { return s.name }
func (s *recordingSink) Send(_ context.Context, n incident.Notification) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, n.ID())
	return nil
}
func (s *recordingSink) sent() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.got...)
}

// TestReplaceSinks: after a reload, new notifications go to the new sink
// of that name, the old one's worker stops and its Close runs.
func TestReplaceSinks(t *testing.T) {
	old, fresh := &recordingSink{name: "a"}, &recordingSink{name: "a"}
	closed := make(chan struct{})
	d := NewDispatcher(slog.New(slog.NewTextHandler(io.Discard, nil)), nil, LaneOptions{Sink: old, Close: func() { close(closed) }})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { d.Run(ctx); close(done) }()
	n := func(id string) incident.Notification {
		return incident.Notification{Incident: incident.Incident{ID: id, Sinks: []string{"a"}}, Seq: 1}
	}
	d.Dispatch(ctx, n("before"))
	d.Replace([]LaneOptions{{Sink: fresh}})
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the replaced sink was not closed")
	}
	d.Dispatch(ctx, n("after"))
	d.Close()
	<-done
	if got := old.sent(); len(got) != 1 || got[0] != "before-1" {
		t.Errorf("old sink got %v", got)
	}
	if got := fresh.sent(); len(got) != 1 || got[0] != "after-1" {
		t.Errorf("new sink got %v", got)
	}
}

// TestGateCountsADeliveryOnceTheTrackerHasIt: the ledger lag gate counts
// a delivery only after the tracker was told of it. Counted before, a
// ledger save starting in between would mark it recorded without
// writing it, and a failover would repeat more than the gate allows.
func TestGateCountsADeliveryOnceTheTrackerHasIt(t *testing.T) {
	lag, err := incident.NewLedgerLag(10, time.Hour, incident.LagPause, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := &flakySink{name: "a", done: make(chan struct{})}
	d := NewDispatcher(slog.New(slog.NewTextHandler(io.Discard, nil)), nil, LaneOptions{Sink: s})
	d.GateOn(lag)
	var countedWhenTold = uint64(99)
	d.OnDelivered(func(incident.Notification, string) { countedWhenTold = lag.Mark() })
	n := incident.Notification{Incident: incident.Incident{ID: "x", Sinks: []string{"a"}}, Seq: 1}
	if err := d.Dispatch(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	d.Close()
	d.Run(context.Background()) // returns once the queue is drained
	if countedWhenTold != 0 {
		t.Errorf("the gate had counted %d deliveries when the tracker was told of the first, want 0", countedWhenTold)
	}
	if got := lag.Mark(); got != 1 {
		t.Errorf("the gate counted %d deliveries, want 1", got)
	}
}
