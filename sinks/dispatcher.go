package sinks

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/herald-k8s/herald/internal/incident"
)

// Defaults of a lane.
const (
	DefaultQueueSize = 1024
	DefaultMaxAge    = 24 * time.Hour
	// digestWindow: when more notifications wait than the rate limit
	// lets out within this long, they go out combined.
	digestWindow = 5 * time.Second
	// maxDigest bounds how many notifications one digest carries.
	maxDigest  = 200
	minBackoff = 500 * time.Millisecond
	maxBackoff = time.Minute
)

// BatchSender is implemented by sinks that can combine many notifications
// into one message (a digest); the dispatcher uses it to ride out storms
// under a rate limit.
type BatchSender interface {
	SendBatch(ctx context.Context, ns []incident.Notification) error
}

// Misrouter is implemented by sinks that send a notification to their
// default destination when the routed one refuses it; the dispatcher
// has them report each time, to count and log it.
type Misrouter interface {
	OnMisrouted(report func(dest, reason string))
}

// LaneOptions configure one sink's queue.
type LaneOptions struct {
	Sink Sink
	// RateLimit is messages per second; 0 is unlimited.
	RateLimit float64
	// MaxAge is how long a notification is retried before giving up.
	MaxAge time.Duration
	// QueueSize bounds the notifications waiting.
	QueueSize int
	// MaxBackoff caps the wait between retries (default 1m).
	MaxBackoff time.Duration
	// Close, if set, is called once the lane's worker has stopped (the
	// sink's connections can go).
	Close func()
}

// Dispatcher routes notifications to their sinks. Each sink has its own
// bounded queue and worker, so a slow or failing sink never holds up
// another one; the reconcile workers block only when a queue is full of
// notifications that must not be dropped.
type Dispatcher struct {
	logger  *slog.Logger
	metrics *Metrics
	lanes   map[string]*lane // by sink name; Replace swaps them
	closed  chan struct{}
	close   sync.Once
	// delivered is told of every notification a sink accepted.
	delivered func(n incident.Notification, sink string)
	// ledgerLag gates sends on the ledger keeping up (nil: no gate).
	ledgerLag *incident.LedgerLag

	mu      sync.RWMutex // guards lanes, retired, running and runCtx
	running *sync.WaitGroup
	runCtx  context.Context
	// retired are replaced lanes whose workers have not started (Replace
	// before Run): Run drains them too.
	retired []*lane
}

type queued struct {
	n        incident.Notification
	enqueued time.Time
	// refresh: a keep-alive of n's incident for a Refresher (refresh.go).
	refresh bool
}

// lane is one sink's queue and its state.
type lane struct {
	LaneOptions
	limiter *rate.Limiter

	mu      sync.Mutex
	queue   []queued
	ready   chan struct{} // signalled when an item is added
	space   chan struct{} // signalled when an item is removed
	retired chan struct{} // closed when a reload replaced the lane
	// every and open are set for a Refresher: how often, and the last
	// notification delivered of each open incident, by incident ID.
	every time.Duration
	open  map[string]incident.Notification
}

// NewDispatcher makes a dispatcher; sink names must be unique. metrics may
// be nil.
func NewDispatcher(logger *slog.Logger, metrics *Metrics, lanes ...LaneOptions) *Dispatcher {
	if metrics == nil {
		metrics = NewMetrics(nil)
	}
	d := &Dispatcher{logger: logger, metrics: metrics, lanes: map[string]*lane{}, closed: make(chan struct{})}
	for _, o := range lanes {
		d.lanes[o.Sink.Name()] = d.newLane(o)
	}
	return d
}

func (d *Dispatcher) newLane(o LaneOptions) *lane {
	if o.QueueSize <= 0 {
		o.QueueSize = DefaultQueueSize
	}
	if o.MaxAge <= 0 {
		o.MaxAge = DefaultMaxAge
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = maxBackoff
	}
	l := &lane{LaneOptions: o, ready: make(chan struct{}, 1), space: make(chan struct{}, 1), retired: make(chan struct{})}
	if o.RateLimit > 0 {
		l.limiter = rate.NewLimiter(rate.Limit(o.RateLimit), 1)
	}
	if every := refreshInterval(o.Sink); every > 0 {
		l.every, l.open = every, map[string]incident.Notification{}
	}
	name := o.Sink.Name()
	if m, ok := o.Sink.(Misrouter); ok {
		m.OnMisrouted(func(dest, reason string) {
			d.metrics.Misrouted.WithLabelValues(name, reason).Inc()
			d.logger.Warn("destination refused the notification; sent to the sink's default instead (fix the route, or invite the bot)", "sink", name, "destination", dest, "reason", reason)
		})
	}
	current := func(value func(*lane) float64) func() float64 {
		return func() float64 {
			d.mu.RLock()
			cur := d.lanes[name]
			d.mu.RUnlock()
			if cur == nil {
				return 0
			}
			return value(cur)
		}
	}
	d.metrics.watchQueue(name, current((*lane).depth), current(func(l *lane) float64 { return float64(l.QueueSize) }))
	return l
}

// Replace puts a new set of sinks in force (a configuration reload).
// Notifications already queued for a replaced sink still go to it; its
// worker then stops and its Close runs. New notifications go to the new
// sinks.
func (d *Dispatcher) Replace(lanes []LaneOptions) {
	fresh := map[string]*lane{}
	for _, o := range lanes {
		fresh[o.Sink.Name()] = d.newLane(o)
	}
	d.mu.Lock()
	old := d.lanes
	d.lanes = fresh
	for name, l := range fresh { // the receiver still knows what it knew
		if prev := old[name]; prev != nil && prev.open != nil && l.open != nil {
			prev.mu.Lock()
			for id, n := range prev.open {
				l.open[id] = n
			}
			prev.mu.Unlock()
		}
	}
	if d.running != nil { // start the new workers before the old ones stop
		for _, l := range fresh {
			d.start(d.runCtx, d.running, l)
		}
	} else {
		for _, l := range old {
			d.retired = append(d.retired, l)
		}
	}
	d.mu.Unlock()
	for _, l := range old {
		close(l.retired)
	}
}

// OnDelivered sets the function told of every notification a sink
// accepted (the incident ledger's bookkeeping). Call before Run.
func (d *Dispatcher) OnDelivered(f func(n incident.Notification, sink string)) { d.delivered = f }

// GateOn makes every send wait for the ledger to keep up (call before
// Run): see incident.LedgerLag.
func (d *Dispatcher) GateOn(l *incident.LedgerLag) { d.ledgerLag = l }

// Dispatch queues n for each sink its incident names. When a queue is
// full, the oldest updated or repeat notification waiting in it makes
// room (counted as dropped: a later one says more); firing and resolved
// are never dropped: Dispatch then waits for room. A sink that is no
// longer configured (a reload removed it) is skipped with a warning and
// counted as dropped. Dispatch returns an error only when ctx ends first.
func (d *Dispatcher) Dispatch(ctx context.Context, n incident.Notification) error {
	for _, name := range n.Incident.Sinks {
		d.mu.RLock()
		l, ok := d.lanes[name]
		d.mu.RUnlock()
		if !ok {
			d.metrics.Dropped.WithLabelValues(name).Inc()
			d.logger.Warn("notification for a sink that is no longer configured; not sent", "sink", name, "id", n.ID())
			if d.delivered != nil {
				d.delivered(n, name) // nothing will ever take it: let the ledger forget it
			}
			continue
		}
		if err := d.push(ctx, l, n); err != nil {
			return err
		}
	}
	return nil
}

func droppable(t incident.Transition) bool { return t == incident.Updated || t == incident.Repeat }

func (d *Dispatcher) push(ctx context.Context, l *lane, n incident.Notification) error {
	for {
		l.mu.Lock()
		if len(l.queue) >= l.QueueSize {
			victim := -1
			for i, q := range l.queue {
				if q.refresh || droppable(q.n.Transition) {
					victim = i
					break
				}
			}
			switch {
			case victim >= 0:
				dropped := l.queue[victim].n
				l.queue = append(l.queue[:victim], l.queue[victim+1:]...)
				d.metrics.Dropped.WithLabelValues(l.Sink.Name()).Inc()
				d.logger.Warn("sink queue full: dropped an older update", "sink", l.Sink.Name(), "id", dropped.ID())
			case droppable(n.Transition):
				l.mu.Unlock()
				d.metrics.Dropped.WithLabelValues(l.Sink.Name()).Inc()
				d.logger.Warn("sink queue full: dropped an update", "sink", l.Sink.Name(), "id", n.ID())
				return nil
			}
		}
		if len(l.queue) < l.QueueSize {
			l.queue = append(l.queue, queued{n: n, enqueued: time.Now()})
			l.mu.Unlock()
			signal(l.ready)
			return nil
		}
		l.mu.Unlock()
		select { // full of firing/resolved: wait for room
		case <-l.space:
		case <-ctx.Done():
			return fmt.Errorf("notification %s not queued for sink %s: %w", n.ID(), l.Sink.Name(), ctx.Err())
		}
	}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

func (l *lane) depth() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return float64(len(l.queue))
}

// take removes up to max notifications from the head of the queue.
func (l *lane) take(max int) []queued {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := min(max, len(l.queue))
	out := append([]queued(nil), l.queue[:k]...)
	l.queue = l.queue[k:]
	if k > 0 {
		signal(l.space)
	}
	if len(l.queue) > 0 {
		signal(l.ready)
	}
	return out
}

// Close says no more notifications will be dispatched: Run returns once
// the queues are empty. Dispatch must not be called after Close.
func (d *Dispatcher) Close() { d.close.Do(func() { close(d.closed) }) }

// Run delivers queued notifications until Close was called and the queues
// are empty, or until ctx ends (logging what was still queued); it returns
// once every sink worker has stopped.
func (d *Dispatcher) Run(ctx context.Context) {
	var wg sync.WaitGroup
	d.mu.Lock()
	d.running, d.runCtx = &wg, ctx
	for _, l := range d.lanes {
		d.start(ctx, &wg, l)
	}
	for _, l := range d.retired {
		d.start(ctx, &wg, l)
	}
	d.retired = nil
	d.mu.Unlock()
	wg.Wait()
}
