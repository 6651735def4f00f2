package sinks

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/herald-k8s/herald/internal/incident"
)

// refreshingSink records the sequence numbers it is sent.
type refreshingSink struct {
	every time.Duration
	mu    sync.Mutex
	seqs  []int
}

func (s *refreshingSink) Name() string                   { return "am" }
func (s *refreshingSink) RefreshInterval() time.Duration { return s.every }
func (s *refreshingSink) Send(_ context.Context, n incident.Notification) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seqs = append(s.seqs, n.Seq)
	return nil
}

func (s *refreshingSink) sent() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.seqs)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestRefreshRestatesTheLatestUntilResolved: a Refresher hears the last
// notification it accepted again every interval; after an update only the
// update is restated, never the older one; a resolution ends it; a reload
// (Replace) keeps what the receiver knows; and only real notifications
// count as sent.
func TestRefreshRestatesTheLatestUntilResolved(t *testing.T) {
	s := &refreshingSink{every: 20 * time.Millisecond}
	metrics := NewMetrics(nil)
	d := NewDispatcher(slog.New(slog.DiscardHandler), metrics, LaneOptions{Sink: s})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { d.Run(ctx) })
	inc := incident.Incident{ID: "fp-1", Sinks: []string{"am"}}
	send := func(tr incident.Transition, seq int) {
		if err := d.Dispatch(ctx, incident.Notification{Incident: inc, Transition: tr, Seq: seq}); err != nil {
			t.Fatal(err)
		}
	}
	count := func(seq int) int {
		n := 0
		for _, q := range s.sent() {
			if q == seq {
				n++
			}
		}
		return n
	}
	send(incident.Firing, 1)
	waitFor(t, "three refreshes of the firing", func() bool { return count(1) >= 4 })
	send(incident.Updated, 2)
	waitFor(t, "three refreshes of the update", func() bool { return count(2) >= 4 })
	got := s.sent()
	if i := slices.Index(got, 2); slices.Contains(got[i:], 1) {
		t.Fatalf("the firing was restated after the update: %v", got)
	}

	// A reload: the new lane keeps refreshing what the receiver knows.
	s2 := &refreshingSink{every: 20 * time.Millisecond}
	d.Replace([]LaneOptions{{Sink: s2}})
	waitFor(t, "refreshes by the reloaded sink", func() bool { return len(s2.sent()) >= 2 })
	if got := s2.sent(); slices.ContainsFunc(got, func(q int) bool { return q != 2 }) {
		t.Errorf("the reloaded sink restated %v, want only seq 2", got)
	}

	if err := d.Dispatch(ctx, incident.Notification{Incident: inc, Transition: incident.Resolved, Seq: 3}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the resolution", func() bool { return slices.Contains(s2.sent(), 3) })
	after := len(s2.sent())
	// An absence can only be seen over time: ten intervals without a send.
	<-time.After(10 * s2.every)
	if got := s2.sent(); len(got) != after {
		t.Errorf("still refreshed after the resolution: %v", got)
	}
	if sent := testutil.ToFloat64(metrics.Sent.WithLabelValues("am")); sent != 3 {
		t.Errorf("sent = %v, want 3 (refreshes are counted apart)", sent)
	}
	if r := testutil.ToFloat64(metrics.Refreshes.WithLabelValues("am")); r < 8 {
		t.Errorf("refreshes = %v", r)
	}
	d.Close()
	wg.Wait()
}
