package sinks

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/herald-k8s/herald/internal/fence"
	"github.com/herald-k8s/herald/internal/incident"
)

// TestAFrozenLeaderSendsNothing: a leader's process is paused (a GC, CPU
// starvation, SIGSTOP) past the end of its hold on the Lease and resumes
// with a notification to send. Whatever goroutine reaches the sink first,
// the dispatcher checks the hold just before the send, by the clock as it
// is now: no Send call, the notification counted as fenced (the ledger
// keeps it for the next leader). On a simulated clock.
func TestAFrozenLeaderSendsNothing(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	var now atomic.Int64
	now.Store(t0.Add(time.Second).UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	held := fence.New(func() time.Time { return t0.Add(10 * time.Second) }, clock)
	ctx := fence.With(context.Background(), held)

	s := &recordingSink{name: "a"}
	metrics := NewMetrics(nil)
	d := NewDispatcher(slog.New(slog.NewTextHandler(io.Discard, nil)), metrics, LaneOptions{Sink: s})
	if err := d.Dispatch(ctx, incident.Notification{Incident: incident.Incident{ID: "before", Sinks: []string{"a"}}, Seq: 1}); err != nil {
		t.Fatal(err)
	}
	now.Store(t0.Add(30 * time.Second).UnixNano()) // resumed 20 s past the hold
	if err := d.Dispatch(ctx, incident.Notification{Incident: incident.Incident{ID: "after", Sinks: []string{"a"}}, Seq: 1}); err != nil {
		t.Fatal(err)
	}
	d.Close()
	d.Run(ctx) // returns once the queue is drained

	// Both were queued while the process "slept": the first is sent
	// after the resume too, so neither may go.
	if got := s.sent(); len(got) != 0 {
		t.Errorf("sent %v after the hold on the Lease had ended, want nothing", got)
	}
	if n := testutil.ToFloat64(metrics.Fenced.WithLabelValues("a")); n != 2 {
		t.Errorf("herald_sink_fenced_total = %v, want 2", n)
	}

	// Within the hold, the same dispatcher path sends.
	now.Store(t0.Add(2 * time.Second).UnixNano())
	d2 := NewDispatcher(slog.New(slog.NewTextHandler(io.Discard, nil)), nil, LaneOptions{Sink: s})
	if err := d2.Dispatch(ctx, incident.Notification{Incident: incident.Incident{ID: "held", Sinks: []string{"a"}}, Seq: 1}); err != nil {
		t.Fatal(err)
	}
	d2.Close()
	d2.Run(ctx)
	if got := s.sent(); len(got) != 1 {
		t.Errorf("within the hold: sent %v, want the one notification", got)
	}
}
