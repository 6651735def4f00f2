package sinks

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/herald-k8s/herald/internal/incident"
)

// DefaultQueueSize is how many notifications wait per sink before
// Dispatch blocks (back-pressure rather than dropping).
const DefaultQueueSize = 1024

// Backoff bounds between retries of one notification.
const (
	minBackoff = 500 * time.Millisecond
	maxBackoff = time.Minute
)

// Dispatcher routes notifications to their sinks. Each sink has its own
// queue and worker, so a slow or failing sink never holds up another one
// or the reconcile workers (until its queue is full).
type Dispatcher struct {
	logger *slog.Logger
	queues map[string]chan incident.Notification
	sinks  map[string]Sink
	closed chan struct{}
	close  sync.Once
	// delivered is told of every notification a sink accepted.
	delivered func(n incident.Notification, sink string)
}

// OnDelivered sets the function told of every notification a sink
// accepted (the incident ledger's bookkeeping). Call before Run.
func (d *Dispatcher) OnDelivered(f func(n incident.Notification, sink string)) { d.delivered = f }

// NewDispatcher makes a dispatcher for sinks; names must be unique.
func NewDispatcher(logger *slog.Logger, sinks ...Sink) *Dispatcher {
	d := &Dispatcher{logger: logger, queues: map[string]chan incident.Notification{}, sinks: map[string]Sink{}, closed: make(chan struct{})}
	for _, s := range sinks {
		d.sinks[s.Name()] = s
		d.queues[s.Name()] = make(chan incident.Notification, DefaultQueueSize)
	}
	return d
}

// Dispatch queues n for each sink its incident names. It blocks while a
// queue is full and returns an error only when ctx ends first or a sink
// is unknown (a configuration bug that validation should have caught).
func (d *Dispatcher) Dispatch(ctx context.Context, n incident.Notification) error {
	for _, name := range n.Incident.Sinks {
		q, ok := d.queues[name]
		if !ok {
			return fmt.Errorf("notification %s names unknown sink %q", n.ID(), name)
		}
		select {
		case q <- n:
		case <-ctx.Done():
			return fmt.Errorf("notification %s not queued for sink %s: %w", n.ID(), name, ctx.Err())
		}
	}
	return nil
}

// Close says no more notifications will be dispatched: Run returns once
// the queues are empty. Dispatch must not be called after Close.
func (d *Dispatcher) Close() { d.close.Do(func() { close(d.closed) }) }

// Run delivers queued notifications until Close was called and the queues
// are empty, or until ctx ends (logging what was still queued); it returns
// once every sink worker has stopped.
func (d *Dispatcher) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for name, s := range d.sinks {
		wg.Go(func() { d.work(ctx, s, d.queues[name]) })
	}
	wg.Wait()
}

func (d *Dispatcher) work(ctx context.Context, s Sink, q chan incident.Notification) {
	for {
		select {
		case n := <-q:
			d.deliver(ctx, s, n)
		case <-d.closed:
			for {
				select {
				case n := <-q:
					d.deliver(ctx, s, n)
				default:
					return
				}
			}
		case <-ctx.Done():
			if left := len(q); left > 0 {
				d.logger.Error("notifications left undelivered at shutdown", "sink", s.Name(), "count", left)
			}
			return
		}
	}
}

// deliver sends n to s, retrying transient failures with exponential
// backoff (or the wait the receiver asked for) until it succeeds, fails
// permanently, or ctx ends.
func (d *Dispatcher) deliver(ctx context.Context, s Sink, n incident.Notification) {
	backoff := minBackoff
	for attempt := 1; ; attempt++ {
		err := s.Send(ctx, n)
		if err == nil {
			d.logger.Debug("notification delivered", "sink", s.Name(), "id", n.ID(), "transition", n.Transition, "attempt", attempt)
			if d.delivered != nil {
				d.delivered(n, s.Name())
			}
			return
		}
		retry, after := IsRetryable(err)
		if !retry {
			d.logger.Error("notification rejected, not retrying", "sink", s.Name(), "id", n.ID(), "error", err)
			return
		}
		wait := max(after, backoff)
		d.logger.Warn("notification not delivered, will retry", "sink", s.Name(), "id", n.ID(), "attempt", attempt, "retryIn", wait, "error", err)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			d.logger.Error("notification undelivered at shutdown", "sink", s.Name(), "id", n.ID(), "error", err)
			return
		}
		backoff = min(backoff*2, maxBackoff)
	}
}
