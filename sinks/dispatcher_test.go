package sinks

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

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

func TestDispatchUnknownSink(t *testing.T) {
	d := NewDispatcher(slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	n := incident.Notification{Incident: incident.Incident{ID: "x", Sinks: []string{"nope"}}, Seq: 1}
	if err := d.Dispatch(context.Background(), n); err == nil {
		t.Error("dispatch to an unknown sink succeeded")
	}
}
