package slackact

import (
	"context"
	"sync"

	"github.com/slack-go/slack"
)

// Presses are handled one at a time per person, in the order Slack sent
// them, and people side by side: a press whose answer is slow (a hung
// log fetch, a slow API server) holds that person's next presses only.

// queuedPress is one press waiting for its person's worker, and the
// acknowledgement to send once it is handled.
type queuedPress struct {
	cb  slack.InteractionCallback
	ack func()
}

const (
	// maxQueuedPerPerson bounds one person's waiting presses: more in a
	// burst than pressesPerMinute would refuse anyway.
	maxQueuedPerPerson = pressesPerMinute
	// maxPeopleAtOnce bounds the workers.
	maxPeopleAtOnce = 64
)

// enqueue hands cb to its person's worker, starting one if none runs. A
// press over the bounds is counted as limited and not acknowledged:
// Slack delivers it again a few seconds later (three times at most).
func (r *Receiver) enqueue(ctx context.Context, wg *sync.WaitGroup, cb slack.InteractionCallback, ack func()) {
	user := cb.User.ID
	r.mu.Lock()
	q, running := r.queues[user]
	if !running && len(r.queues) >= maxPeopleAtOnce {
		r.mu.Unlock()
		r.count("any", "limited")
		return
	}
	if !running {
		q = make(chan queuedPress, maxQueuedPerPerson)
		r.queues[user] = q
		wg.Go(func() { r.work(ctx, user, q) })
	}
	select {
	case q <- queuedPress{cb: cb, ack: ack}:
		r.mu.Unlock()
	default:
		r.mu.Unlock()
		r.count("any", "limited")
	}
}

// work handles one person's presses until none wait, then ends.
func (r *Receiver) work(ctx context.Context, user string, q chan queuedPress) {
	for {
		r.mu.Lock()
		if len(q) == 0 || ctx.Err() != nil {
			delete(r.queues, user) // under mu: enqueue sees either this worker or none
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
		p := <-q
		r.handle(ctx, p.cb)
		p.ack()
	}
}
