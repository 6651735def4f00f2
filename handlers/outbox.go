package handlers

import (
	"context"
	"errors"
	"sync"

	"github.com/herald-k8s/herald/internal/incident"
)

// outbox hands notifications to the dispatcher in the order the incident
// tracker made them. The tracker numbers an incident's notifications
// under its lock, but several workers (and the pacer) call it: without
// the outbox, two pods of one grouped incident reconciled at once could
// hand "5 → 4 pods" to the sinks after "4 → 3", or the resolved before
// the last update. Making and queueing happen under one lock, so the
// queue is in the tracker's order; one caller at a time then sends it.
type outbox struct {
	next Dispatcher

	mu      sync.Mutex
	queue   []incident.Notification
	sending bool
	idle    *sync.Cond // signalled when sending ends
}

func newOutbox(next Dispatcher) *outbox {
	o := &outbox{next: next}
	o.idle = sync.NewCond(&o.mu)
	return o
}

// hand calls produce (which asks the tracker for notifications), queues what
// it returns, and returns once they are with the dispatcher. While another
// caller is sending, it waits, and that caller sends its notifications
// too: the wait is the back-pressure a full sink queue puts on the
// workers. The error is the dispatcher's (only when ctx ends): what was
// not handed on stays pending in the ledger for the next leader.
func (o *outbox) hand(ctx context.Context, produce func() []incident.Notification) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.queue = append(o.queue, produce()...)
	for o.sending {
		o.idle.Wait()
	}
	o.sending = true
	defer o.idle.Broadcast()
	var errs []error
	for len(o.queue) > 0 {
		batch := o.queue
		o.queue = nil
		o.mu.Unlock()
		for _, n := range batch {
			if err := o.next.Dispatch(ctx, n); err != nil {
				errs = append(errs, err)
			}
		}
		o.mu.Lock()
	}
	o.sending = false
	return errors.Join(errs...)
}
