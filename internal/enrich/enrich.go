// Package enrich adds crash context to notifications — the crashed
// container's last log lines, the pod's recent events, its node and a
// plain hint — between the incident tracker and the sinks. It is the only
// place on the notification path that calls the API server, so it runs
// off the reconcile loop, within budgets: a bounded pool of workers, a
// rate limit on its API requests, and a wait bound after which a
// notification goes out with whatever context has arrived, saying what is
// missing and why. Notifications of one incident keep their order.
package enrich

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/ratelog"
	"github.com/herald-k8s/herald/internal/redact"
)

// Dispatcher takes notifications onwards (the sinks' dispatcher).
type Dispatcher interface {
	Dispatch(ctx context.Context, n incident.Notification) error
}

// Options configure an Enricher; zero values take the defaults.
type Options struct {
	Next   Dispatcher
	Source Source
	// PodNode and Node read herald's caches (nil or "": unknown).
	PodNode func(namespace, pod string) string
	Node    func(name string) *incident.Node
	// Lines and MaxBytes bound the log tail (20, 4096); Events the events
	// (5).
	Lines, MaxBytes, Events int
	// Wait is how long a notification waits for its context (2s).
	Wait time.Duration
	// Workers gather context for this many notifications at a time (4);
	// Rate bounds the API requests per second (5).
	Workers int
	Rate    float64
	// Logs: fetch log lines at all (false: events, node and hint only);
	// LogsUnavailable says why not, in the notifications (e.g. herald may
	// not get pods/log).
	Logs            bool
	LogsUnavailable string
	Redactor        *redact.Redactor
	Logger          *slog.Logger
	Metrics         *Metrics
	Now             func() time.Time
}

// Defaults of Options.
const (
	DefaultLines    = 20
	DefaultMaxBytes = 4096
	DefaultEvents   = 5
	DefaultWait     = 2 * time.Second
	DefaultWorkers  = 4
	DefaultRate     = 5.0
	// queueLength bounds the notifications waiting for a worker; past
	// it, a notification goes out without context at once.
	queueLength = 64
	// remembered bounds the contexts kept for an incident's later
	// notifications (its resolved shows what its firing showed).
	remembered = 4096
)

// Enricher is a Dispatcher that adds context, then dispatches onwards.
type Enricher struct {
	opts    Options
	limiter *rate.Limiter
	jobs    chan job
	warn    *ratelog.Limiter // one warning per cause a minute

	mu sync.Mutex
	// waiting holds, for each incident whose context is being gathered,
	// the notifications that came after: they go out after it, in order.
	waiting map[string][]incident.Notification
	// recent is the last context of each open incident.
	recent map[string]*incident.Context
}

type job struct {
	n        incident.Notification
	deadline time.Time
}

// New makes an Enricher; Run starts its workers.
func New(opts Options) *Enricher {
	if opts.Lines <= 0 {
		opts.Lines = DefaultLines
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.Events <= 0 {
		opts.Events = DefaultEvents
	}
	if opts.Wait <= 0 {
		opts.Wait = DefaultWait
	}
	if opts.Workers <= 0 {
		opts.Workers = DefaultWorkers
	}
	if opts.Rate <= 0 {
		opts.Rate = DefaultRate
	}
	if opts.Redactor == nil {
		opts.Redactor, _ = redact.New(nil)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics(nil)
	}
	// Each context costs up to two requests (logs, events); the burst
	// lets a handful of crashes at once all have theirs.
	burst := max(int(opts.Rate*opts.Wait.Seconds()), 2)
	return &Enricher{opts: opts, limiter: rate.NewLimiter(rate.Limit(opts.Rate), burst),
		jobs: make(chan job, queueLength), warn: ratelog.New(time.Minute, opts.Now),
		waiting: map[string][]incident.Notification{}, recent: map[string]*incident.Context{}}
}

// Run gathers context until ctx ends; then the workers finish what they
// hold and stop.
func (e *Enricher) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for range e.opts.Workers {
		wg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case j := <-e.jobs:
					e.work(ctx, j)
				}
			}
		})
	}
	wg.Wait()
}

// Dispatch implements the handlers' Dispatcher: a notification that wants
// context is handed to a worker (it never blocks the caller); one that
// does not goes on at once, unless an earlier one of its incident is
// still waiting for context, which it then follows.
func (e *Enricher) Dispatch(ctx context.Context, n incident.Notification) error {
	e.mu.Lock()
	id := n.Incident.ID
	if queue, busy := e.waiting[id]; busy {
		e.waiting[id] = append(queue, n)
		e.mu.Unlock()
		return nil
	}
	n = e.withRecent(n)
	if !wants(n) {
		e.mu.Unlock()
		return e.opts.Next.Dispatch(ctx, withHint(n))
	}
	now := e.opts.Now()
	if !e.limiter.AllowN(now, 2) {
		e.mu.Unlock()
		return e.opts.Next.Dispatch(ctx, e.without(n, "budget", "context skipped: over herald's budget of API requests for context"))
	}
	select {
	case e.jobs <- job{n: n, deadline: now.Add(e.opts.Wait)}:
		e.waiting[id] = nil
		e.mu.Unlock()
		return nil
	default:
		e.mu.Unlock()
		return e.opts.Next.Dispatch(ctx, e.without(n, "budget", "context skipped: too many notifications waiting for context"))
	}
}

// Gather returns n's context at once (within the wait bound), outside the
// pipeline and its budget: for herald test, one object at a time.
func (e *Enricher) Gather(ctx context.Context, n incident.Notification) *incident.Context {
	if !wants(n) {
		return &incident.Context{Hint: Hint(n.Incident)}
	}
	ctx, cancel := context.WithTimeout(ctx, e.opts.Wait)
	defer cancel()
	return e.gather(ctx, n)
}

// wants says whether n is worth gathering context for: a firing about a
// pod (or a workload's pods), or an update saying the restarts rose.
func wants(n incident.Notification) bool {
	if n.Incident.NoContext || !aboutPod(n.Incident) {
		return false
	}
	return n.Transition == incident.Firing || n.Transition == incident.Updated && strings.HasPrefix(n.Change, "restarts ")
}

// withHint gives a firing about something other than a pod (an
// autoscaler, a CronJob), which gathers no context, its hint: it costs no
// request. A rule that turned context off gets none; a pod's firing gets
// its hint with the rest of its context, or when that is skipped.
func withHint(n incident.Notification) incident.Notification {
	if n.Context != nil || n.Transition != incident.Firing || n.Incident.NoContext || aboutPod(n.Incident) {
		return n
	}
	if h := Hint(n.Incident); h != "" {
		n.Context = &incident.Context{Hint: h}
	}
	return n
}

// aboutPod: the incident is a pod's, or a workload's pods'.
func aboutPod(inc incident.Incident) bool {
	return len(inc.Members) > 0 && strings.HasPrefix(inc.Members[0], "Pod/")
}

// withRecent gives a notification that gathers no context of its own the
// incident's last one (the resolved edit of a Slack message keeps what
// the firing showed); e.mu must be held.
func (e *Enricher) withRecent(n incident.Notification) incident.Notification {
	c, ok := e.recent[n.Incident.ID]
	if n.Transition == incident.Resolved {
		delete(e.recent, n.Incident.ID)
	}
	if ok && n.Context == nil && !wants(n) {
		n.Context = c
	}
	return n
}

func (e *Enricher) remember(id string, c *incident.Context) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.recent) >= remembered {
		for k := range e.recent { // forget one: any will do
			delete(e.recent, k)
			break
		}
	}
	e.recent[id] = c
}

// without sends n with only what needs no API call, and why.
func (e *Enricher) without(n incident.Notification, cause, why string) incident.Notification {
	e.opts.Metrics.Skipped.WithLabelValues(cause).Inc()
	if _, ok := e.warn.Allow(cause); ok {
		e.opts.Logger.Warn(why, "incident", n.Incident.ID)
	}
	n.Context = &incident.Context{Hint: Hint(n.Incident), Unavailable: why}
	return n
}

// work gathers one notification's context, sends it, then the
// notifications of its incident that queued behind it.
func (e *Enricher) work(ctx context.Context, j job) {
	n := j.n
	if !e.opts.Now().Before(j.deadline) {
		n = e.without(n, "budget", "context skipped: waited too long for a context worker")
	} else {
		gctx, cancel := context.WithDeadline(ctx, j.deadline)
		n.Context = e.gather(gctx, n)
		cancel()
	}
	e.remember(n.Incident.ID, n.Context)
	e.send(ctx, n)
	for {
		e.mu.Lock()
		queue := e.waiting[n.Incident.ID]
		if len(queue) == 0 {
			delete(e.waiting, n.Incident.ID)
			e.mu.Unlock()
			return
		}
		e.waiting[n.Incident.ID] = nil
		for i := range queue {
			queue[i] = e.withRecent(queue[i])
		}
		e.mu.Unlock()
		for _, q := range queue {
			e.send(ctx, q)
		}
	}
}

func (e *Enricher) send(ctx context.Context, n incident.Notification) {
	if err := e.opts.Next.Dispatch(ctx, n); err != nil {
		// The ledger still lists it as pending: a restart sends it.
		e.opts.Logger.Error("dispatching a notification failed", "id", n.ID(), "error", err)
	}
}
