package handlers

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/herald-k8s/herald/internal/rules"
	"github.com/herald-k8s/herald/watcher"
)

// AlertSource gives findings that come from outside the cluster (alerts
// taken in from Alertmanager, internal/intake), read with an object's
// own in its reconcile.
type AlertSource interface {
	// Detached says key names no cluster object: its findings are the
	// source's alone.
	Detached(key watcher.Key) bool
	// Join returns own, the rules' findings on key, with the source's;
	// open says whether an incident is open.
	Join(key watcher.Key, own []rules.Finding, set *rules.Set, open func(fingerprint string) bool) []rules.Finding
}

// assessDetached is the assessment of a key with no object in the cache
// (detached: a key that never names one): only alerts from outside make
// findings there. An object that is gone and has none is gone.
func (c *Controller) assessDetached(key watcher.Key, start time.Time, detached bool) assessment {
	if c.Alerts == nil {
		return assessment{start: start}
	}
	findings := c.Alerts.Join(key, nil, c.rules.Load(), c.isOpen)
	c.routeDetached(findings)
	c.fillLinks(nil, findings)
	return assessment{exists: detached || len(findings) > 0, findings: findings, start: start}
}

// Enqueue asks for keys to be reconciled (a source's findings on them
// changed).
func (c *Controller) Enqueue(keys ...watcher.Key) {
	for _, k := range keys {
		c.queue.Add(k)
	}
}

// Settle enqueues keys and returns once each has been reconciled by a
// reconcile that began after the call (so it read what the caller
// changed before), or ctx ends. Only a controller with Alerts keeps
// track (with none, reconciles pay nothing for it): without, it waits
// for ctx.
func (c *Controller) Settle(ctx context.Context, keys []watcher.Key) error {
	waits := make([]chan struct{}, len(keys))
	for i, k := range keys {
		waits[i] = c.settling.wait(k)
	}
	c.Enqueue(keys...)
	for _, w := range waits {
		select {
		case <-w:
		case <-ctx.Done():
			for i, k := range keys {
				c.settling.forget(k, waits[i])
			}
			return ctx.Err()
		}
	}
	return nil
}

// settling tracks who waits for a key's next reconcile. A reconcile
// takes the waiters present when it begins; those who come later wait
// for the next one, which their Enqueue makes.
type settling struct {
	mu      sync.Mutex
	waiting map[watcher.Key][]chan struct{}
}

func (s *settling) wait(k watcher.Key) chan struct{} {
	ch := make(chan struct{})
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.waiting == nil {
		s.waiting = map[watcher.Key][]chan struct{}{}
	}
	s.waiting[k] = append(s.waiting[k], ch)
	return ch
}

// forget takes a waiter that gave up off k's list.
func (s *settling) forget(k watcher.Key, ch chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waiting[k] = slices.DeleteFunc(s.waiting[k], func(c chan struct{}) bool { return c == ch })
	if len(s.waiting[k]) == 0 {
		delete(s.waiting, k)
	}
}

// begin takes the waiters of k, for a reconcile of k that begins.
func (s *settling) begin(k watcher.Key) []chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.waiting[k]
	delete(s.waiting, k)
	return w
}

// end tells the waiters taken by begin that the reconcile is done, or,
// when it failed, hands them to the retry.
func (s *settling) end(k watcher.Key, taken []chan struct{}, ok bool) {
	if ok {
		for _, ch := range taken {
			close(ch)
		}
		return
	}
	if len(taken) > 0 {
		s.mu.Lock()
		s.waiting[k] = append(s.waiting[k], taken...)
		s.mu.Unlock()
	}
}

// isOpen says whether an incident of fingerprint fp is open. A copy of
// the tracker's incidents is read, so it is for rare questions: an
// alert that meets herald's own finding of the same problem asks once.
func (c *Controller) isOpen(fp string) bool {
	incs, _ := c.Incidents.Snapshot()
	for _, inc := range incs {
		if inc.Fingerprint == fp && inc.ResolvedAt.IsZero() {
			return true
		}
	}
	return false
}
