package sinks

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/herald-k8s/herald/internal/fence"
	"github.com/herald-k8s/herald/internal/incident"
)

// This file is a lane's worker: it takes notifications (or a digest's
// worth) from the queue and delivers them, retrying what may succeed later.

// start runs the lane's worker, and its refresher if the sink is one.
func (d *Dispatcher) start(ctx context.Context, wg *sync.WaitGroup, l *lane) {
	wg.Go(func() { d.work(ctx, l) })
	if l.open != nil {
		wg.Go(func() { d.refresh(ctx, l, l.every) })
	}
}

func (d *Dispatcher) work(ctx context.Context, l *lane) {
	if l.Close != nil {
		defer l.Close()
	}
	closed, retired := d.closed, l.retired
	draining := false
	for {
		if ctx.Err() != nil {
			if left := l.depth(); left > 0 {
				d.logger.Error("notifications left undelivered when the sinks stopped; the ledger keeps them for the next leader", "sink", l.Sink.Name(), "count", left, "why", context.Cause(ctx))
			}
			return
		}
		batch := l.take(d.batchSize(l))
		if len(batch) == 0 {
			if draining {
				return
			}
			select {
			case <-l.ready:
			case <-closed:
				draining, closed = true, nil
			case <-retired:
				draining, retired = true, nil
			case <-ctx.Done():
			}
			continue
		}
		if batch[0].refresh { // batches of a Refresher are single
			cur, ok := l.current(batch[0].n)
			if !ok {
				continue // resolved meanwhile
			}
			batch[0].n = cur
		}
		for _, part := range byDestination(batch, l.Sink.Name()) {
			d.deliver(ctx, l, part)
		}
	}
}

// batchSize is 1, unless the sink is rate limited, can send digests, and
// more wait than the limit lets out within digestWindow.
func (d *Dispatcher) batchSize(l *lane) int {
	if l.limiter == nil || l.open != nil {
		return 1
	}
	if _, ok := l.Sink.(BatchSender); !ok {
		return 1
	}
	if l.depth() > float64(l.limiter.Limit())*digestWindow.Seconds() {
		return maxDigest
	}
	return 1
}

// deliver sends one notification (or a batch as one digest), retrying
// transient failures with exponential backoff and jitter, or the wait the
// receiver asked for, until it succeeds, fails permanently, passes the
// lane's MaxAge, or ctx ends.
func (d *Dispatcher) deliver(ctx context.Context, l *lane, batch []queued) {
	name := l.Sink.Name()
	ns := make([]incident.Notification, len(batch))
	for i, q := range batch {
		ns[i] = q.n
	}
	id := ns[0].ID()
	if len(ns) > 1 {
		id = fmt.Sprintf("%s (+%d in a digest)", id, len(ns)-1)
	}
	backoff := minBackoff
	for attempt := 1; ; attempt++ {
		if l.limiter != nil {
			if err := l.limiter.Wait(ctx); err != nil {
				return
			}
		}
		// The ledger's gate: no more deliveries the next leader would
		// repeat than the ledger lets go unrecorded (incident.LedgerLag).
		sent, err := d.ledgerLag.Acquire(ctx, len(ns))
		if err != nil {
			return
		}
		// The fence at the edge, after any wait: a goroutine that wakes
		// after the hold on the Lease ended (a paused process resuming)
		// sends nothing, even before the timer that fences the leader
		// has run.
		if err := fence.Check(ctx); err != nil {
			sent(0)
			d.metrics.Fenced.WithLabelValues(name).Add(float64(len(ns)))
			d.logger.Warn("notification not sent: this replica's hold on the leader lease has ended; the next leader sends it", "sink", name, "id", id, "error", err)
			return
		}
		start := time.Now()
		if len(ns) == 1 {
			err = l.Sink.Send(ctx, ns[0])
		} else {
			err = l.Sink.(BatchSender).SendBatch(ctx, ns)
		}
		if err != nil || batch[0].refresh {
			sent(0)
		}
		d.metrics.SendSeconds.WithLabelValues(name).Observe(time.Since(start).Seconds())
		if err == nil && batch[0].refresh {
			d.metrics.Refreshes.WithLabelValues(name).Inc()
			return
		}
		if err == nil {
			for _, n := range ns {
				l.remember(n)
			}
			d.metrics.Sent.WithLabelValues(name).Add(float64(len(ns)))
			if len(ns) > 1 {
				d.metrics.Digests.WithLabelValues(name).Inc()
			}
			d.logger.Debug("notification delivered", "sink", name, "id", id, "attempt", attempt)
			if d.delivered != nil {
				for _, n := range ns {
					d.delivered(n, name)
				}
			}
			// Counted for the gate only now that the tracker holds them:
			// a ledger save that began in between would otherwise count
			// them as recorded without writing them.
			sent(len(ns))
			return
		}
		if errors.Is(err, fence.ErrExpired) {
			d.metrics.Fenced.WithLabelValues(name).Add(float64(len(ns)))
			d.logger.Warn("notification not sent: this replica's hold on the leader lease ended while it was being sent; the next leader sends it", "sink", name, "id", id, "error", err)
			return
		}
		retry, after := IsRetryable(err)
		if !retry {
			d.metrics.Failed.WithLabelValues(name, "permanent").Add(float64(len(ns)))
			d.logger.Error("notification rejected by the sink, not retrying", "sink", name, "id", id, "error", err)
			return
		}
		d.metrics.Failed.WithLabelValues(name, "transient").Inc()
		if batch[0].refresh && time.Since(batch[0].enqueued) > l.every {
			d.logger.Warn("refresh not delivered before the next one is due; left to it", "sink", name, "id", id, "error", err)
			return
		}
		if age := time.Since(batch[0].enqueued); age > l.MaxAge {
			d.metrics.GaveUp.WithLabelValues(name).Add(float64(len(ns)))
			d.logger.Error("giving up on a notification after retrying it for the sink's maximum age; the ledger keeps it as undelivered",
				"sink", name, "id", id, "age", age.Round(time.Second), "attempts", attempt, "error", err)
			return
		}
		jittered := time.Duration(float64(backoff) * (0.5 + rand.Float64()/2))
		wait := max(after, jittered)
		d.metrics.Retries.WithLabelValues(name).Inc()
		d.logger.Warn("notification not delivered, will retry", "sink", name, "id", id, "attempt", attempt, "retryIn", wait.Round(time.Millisecond), "error", err)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return
		}
		backoff = min(backoff*2, l.MaxBackoff)
	}
}

// byDestination splits a batch by where in the sink its notifications go
// (a route's channel or destination, a rule's channel), in order of first
// appearance: a digest during a storm is one message per team, not one
// message in the default channel for everyone.
func byDestination(batch []queued, sink string) [][]queued {
	if len(batch) == 1 {
		return [][]queued{batch}
	}
	var parts [][]queued
	index := map[string]int{}
	for _, q := range batch {
		key := Destination(q.n, sink)
		i, ok := index[key]
		if !ok {
			i = len(parts)
			index[key] = i
			parts = append(parts, nil)
		}
		parts[i] = append(parts[i], q)
	}
	return parts
}

// Destination is where in the sink named sink n goes: the channel or
// destination name its route chose, else its rule's channel; "" for the
// sink's default.
func Destination(n incident.Notification, sink string) string {
	if n.Transition == incident.Digest && len(n.Digest) > 0 {
		return Destination(n.Digest[0], sink)
	}
	if d, ok := n.Incident.Dest[sink]; ok {
		return d
	}
	return n.Incident.Channel
}

// Pick returns the address among dests (a sink's destinations, by name)
// that n's route chose, and its name; def and "" when it chose none, or
// one the sink no longer has (a reload removed it: the default still
// gets the notification).
func Pick(n incident.Notification, sink string, dests map[string]string, def string) (addr, name string) {
	if n.Transition == incident.Digest && len(n.Digest) > 0 {
		n = n.Digest[0]
	}
	name = n.Incident.Dest[sink]
	if a, ok := dests[name]; ok && name != "" {
		return a, name
	}
	return def, ""
}
