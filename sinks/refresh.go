package sinks

import (
	"context"
	"slices"
	"time"

	"github.com/herald-k8s/herald/internal/incident"
)

// This file is the dispatcher's refresh stage: some receivers forget an
// alert they do not hear of again (Alertmanager resolves it once its
// resolve_timeout passes), so while an incident is open its last delivered
// notification is sent again, through the sink's own queue, retries and
// rate limit.

// Refresher is implemented by sinks whose receiver must hear of an open
// incident every RefreshInterval to keep it open.
type Refresher interface {
	RefreshInterval() time.Duration
}

func refreshInterval(s Sink) time.Duration {
	if r, ok := s.(Refresher); ok {
		return r.RefreshInterval()
	}
	return 0
}

// remember records what a refreshing lane's receiver now knows of n's
// incident: its last delivered notification, or nothing once resolved.
// Older notifications never replace newer ones.
func (l *lane) remember(n incident.Notification) {
	if l.open == nil {
		return
	}
	if n.Transition == incident.Digest {
		for _, d := range n.Digest {
			l.remember(d)
		}
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	id := n.Incident.ID
	if n.Transition == incident.Resolved {
		delete(l.open, id)
		return
	}
	if prev, ok := l.open[id]; ok && prev.Seq > n.Seq {
		return
	}
	n.Context = nil // a refresh restates the alert; the context was told once
	l.open[id] = n
}

// Resume tells the refreshing sinks which incidents their receivers have
// heard of before this process started (the open, announced incidents the
// ledger holds), so that a restart or a new leader keeps them open there.
// Call after the ledger is loaded, before or after Run.
func (d *Dispatcher) Resume(announced []incident.Notification) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	for name, l := range d.lanes {
		if l.open == nil {
			continue
		}
		for _, n := range announced {
			if slices.Contains(n.Incident.Sinks, name) {
				l.remember(n)
			}
		}
	}
}

// refresh queues a refresh of every incident the lane's receiver knows of,
// every interval, until the lane is retired, the dispatcher closed or ctx
// ended. A refresh names the incident only: the worker sends what is
// remembered when it takes it, so it never restates an older notification
// after a newer one, nor an incident resolved meanwhile.
func (d *Dispatcher) refresh(ctx context.Context, l *lane, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
		case <-l.retired:
			return
		case <-d.closed:
			return
		case <-ctx.Done():
			return
		}
		l.mu.Lock()
		waiting := map[string]bool{}
		for _, q := range l.queue {
			waiting[q.n.Incident.ID] = true
		}
		added := 0
		for id, n := range l.open {
			// One that waits to be sent is about to say as much; and a
			// full queue is no place for a keep-alive.
			if waiting[id] || len(l.queue) >= l.QueueSize {
				continue
			}
			l.queue = append(l.queue, queued{n: n, enqueued: time.Now(), refresh: true})
			added++
		}
		l.mu.Unlock()
		if added > 0 {
			signal(l.ready)
		}
	}
}

// current is what a refresh sends: the incident's notification the
// receiver last accepted, unless it resolved since.
func (l *lane) current(n incident.Notification) (incident.Notification, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	cur, ok := l.open[n.Incident.ID]
	return cur, ok
}
