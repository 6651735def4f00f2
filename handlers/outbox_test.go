package handlers

import (
	"context"
	"runtime"
	"sync"
	"testing"

	"github.com/herald-k8s/herald/internal/incident"
)

// recorder is a dispatcher that notes the order notifications reach it.
type recorder struct {
	mu   sync.Mutex
	seqs []int
}

func (r *recorder) Dispatch(_ context.Context, n incident.Notification) error {
	runtime.Gosched() // let the other callers overtake, if they can
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seqs = append(r.seqs, n.Seq)
	return nil
}

// TestOutboxKeepsTheTrackersOrder: workers that ask the tracker at the same
// time hand its notifications on in the order it numbered them (a grouped
// incident's updates and resolved arrived reordered before the outbox).
func TestOutboxKeepsTheTrackersOrder(t *testing.T) {
	const workers, rounds = 8, 500
	rec := &recorder{}
	o := newOutbox(rec)
	var tracker sync.Mutex // the tracker numbers under its own lock
	seq := 0
	makeOne := func() []incident.Notification {
		tracker.Lock()
		defer tracker.Unlock()
		seq++
		return []incident.Notification{{Seq: seq}}
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range rounds {
				if err := o.hand(context.Background(), makeOne); err != nil {
					t.Error(err)
				}
				runtime.Gosched()
			}
		})
	}
	wg.Wait()
	if len(rec.seqs) != workers*rounds {
		t.Fatalf("%d notifications dispatched, want %d", len(rec.seqs), workers*rounds)
	}
	for i, s := range rec.seqs {
		if s != i+1 {
			t.Fatalf("notification %d dispatched in place %d (after %d): out of the tracker's order", s, i+1, rec.seqs[max(i-1, 0)])
		}
	}
}

// TestOutboxReturnsOnceHandedOn: hand returns only after its own
// notifications reached the dispatcher, even when another caller sent them
// (the workers feel a full sink queue's back-pressure).
func TestOutboxReturnsOnceHandedOn(t *testing.T) {
	release := make(chan struct{})
	gate := &gatedDispatcher{release: release, entered: make(chan struct{}, 1)}
	o := newOutbox(gate)
	first := make(chan error, 1)
	go func() {
		first <- o.hand(context.Background(), func() []incident.Notification { return []incident.Notification{{Seq: 1}} })
	}()
	<-gate.entered // the first caller is sending, and blocked
	second := make(chan error, 1)
	go func() {
		second <- o.hand(context.Background(), func() []incident.Notification { return []incident.Notification{{Seq: 2}} })
	}()
	for queued := 0; queued == 0; { // the second caller has queued its own
		runtime.Gosched()
		o.mu.Lock()
		queued = len(o.queue)
		o.mu.Unlock()
	}
	select {
	case <-second:
		t.Fatal("hand returned while its notification waited behind a blocked dispatcher")
	case <-first:
		t.Fatal("the first hand returned while its dispatcher was blocked")
	default:
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	if got := gate.dispatched(); len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Fatalf("dispatched %v, want [1 2]", got)
	}
}

type gatedDispatcher struct {
	release chan struct{}
	entered chan struct{}
	recorder
}

func (g *gatedDispatcher) Dispatch(ctx context.Context, n incident.Notification) error {
	select {
	case g.entered <- struct{}{}:
	default:
	}
	<-g.release
	return g.recorder.Dispatch(ctx, n)
}

func (g *gatedDispatcher) dispatched() []int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]int(nil), g.seqs...)
}
