// Package handlers connects the watcher to the rules: event handlers that
// filter cheaply and enqueue keys, a rate-limited work queue, and workers
// that reconcile one object at a time from the cache.
package handlers

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/ratelog"
	"github.com/herald-k8s/herald/internal/route"
	"github.com/herald-k8s/herald/internal/rules"
	"github.com/herald-k8s/herald/watcher"
)

// maxRetries bounds how often a key whose reconcile failed is requeued
// before the failure is logged and the key dropped until its next change.
const maxRetries = 5

// Dispatcher takes the notifications a reconcile produces.
type Dispatcher interface {
	Dispatch(ctx context.Context, n incident.Notification) error
}

// Options are the controller's dependencies.
type Options struct {
	Watcher    *watcher.Watcher
	Rules      *rules.Set
	Incidents  *incident.Tracker
	Dispatcher Dispatcher
	Workers    int
	Logger     *slog.Logger
	Metrics    *Metrics
	// Now is the clock rules evaluate against (time.Now in production).
	Now func() time.Time
	// ClusterName fills links' .Cluster.
	ClusterName string
	// Volumes are the kubelets' volume readings volume-filling reads
	// (nil: it finds nothing).
	Volumes rules.VolumeStats
	// FirstStart is true when the ledger was empty (a first install):
	// what the first full reconcile finds is sent as Startup says:
	// "digest" (one summary per sink), "notify" or "silent".
	FirstStart bool
	Startup    string
	// Delivered marks a notification as accepted by a sink without
	// sending it (startup: silent).
	Delivered func(n incident.Notification, sink string)
	// RouteByNamespace lets a namespace's herald.io/slack-channel
	// annotation choose, among the channels the configuration names, the
	// channel of its notifications.
	RouteByNamespace bool
	// Routes decide where each incident goes (nil: the rules' sinks).
	Routes *route.Table
	// Namespaces keeps a Namespace cache whatever the rules say (a
	// namespace's herald.io/silence-until annotation mutes it).
	Namespaces bool
	// Alerts are findings from outside the cluster (nil: none).
	Alerts AlertSource
}

// Controller runs the reconcile loop.
type Controller struct {
	Options
	// rules is the rule set in force; a configuration reload swaps it.
	rules atomic.Pointer[rules.Set]
	// routes are the routes in force; a reload swaps them too.
	routes    atomic.Pointer[route.Table]
	queue     workqueue.TypedRateLimitingInterface[watcher.Key]
	nsLabels  rules.NamespaceLabels
	ruleErrs  *ratelog.Limiter
	refusals  *ratelog.Limiter // annotations not followed, logged once a minute per namespace
	lateKinds []string         // kinds whose informer could not be made yet
	outbox    *outbox
	// handlers are the event handlers the controller added, by kind,
	// with their informer: one per informer, and taken off one that
	// stays (pinned) when no rule needs its kind any more.
	handlersMu sync.Mutex
	handlers   map[string]kindHandler
	// settling are those waiting for keys to be reconciled (Settle).
	settling settling
}

type kindHandler struct {
	inf cache.SharedIndexInformer
	reg cache.ResourceEventHandlerRegistration
}

// New registers event handlers on an informer for every kind the rules
// watch. Informers start when the watcher is started.
func New(opts Options) (*Controller, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics(nil)
	}
	c := &Controller{
		Options: opts,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[watcher.Key](),
			workqueue.TypedRateLimitingQueueConfig[watcher.Key]{Name: "herald", MetricsProvider: opts.Metrics.Queue},
		),
		ruleErrs: ratelog.New(time.Minute, opts.Now),
		refusals: ratelog.New(time.Minute, opts.Now),
		outbox:   newOutbox(opts.Dispatcher),
	}
	opts.Rules.UseRelated(opts.Watcher) // a Service's EndpointSlices
	opts.Rules.UseVolumes(opts.Volumes)
	c.rules.Store(opts.Rules)
	c.routes.Store(opts.Routes)
	// Pods are cached compact unless a rule needs the whole object; the
	// rule set in force decides, so a reload can change it.
	opts.Watcher.CompactWhen(func(kind string) bool { return !c.rules.Load().NeedsWholeObject(kind) })
	// Other kinds keep only what the rules read: the annotations they
	// name, and the whole object only for CEL and templates.
	if err := opts.Watcher.KeepWhen(func(kind string) watcher.Keep { return keepFor(c.rules.Load(), kind) }); err != nil {
		return nil, err
	}
	if opts.Rules.GroupsByWorkload() {
		if err := opts.Watcher.IndexPodsByWorkload(); err != nil {
			return nil, err
		}
	}
	// Always the watcher's lookup (it answers "unknown" without a
	// Namespace informer), so that a reload never changes what the event
	// handlers read.
	c.nsLabels = opts.Watcher.NamespaceLabels
	if c.keepsNamespaces(opts.Rules) {
		if _, err := opts.Watcher.Informer("Namespace"); err != nil {
			return nil, err
		}
	}
	for _, kind := range opts.Rules.Kinds() {
		if err := c.watch(kind); err != nil {
			// A rule on a kind the server does not serve (a CRD not
			// installed yet) must not stop the other rules: retry later.
			// Said once: the retries are silent until one succeeds. A
			// kind not served is a warning (the chart's defaults watch
			// cert-manager's Certificates, which not every cluster has).
			log := opts.Logger.Error
			if errors.Is(err, watcher.ErrNotServed) {
				log = opts.Logger.Warn
			}
			log("cannot watch kind yet; its rules wait, the others run, and herald watches it once it is served", "kind", kind, "error", err)
			c.lateKinds = append(c.lateKinds, kind)
		}
	}
	return c, nil
}

// Run waits for the caches, then runs the workers until ctx ends. It
// returns after the workers have finished their current keys.
func (c *Controller) Run(ctx context.Context) error {
	defer utilruntime.HandleCrashWithContext(ctx)
	if err := c.Watcher.WaitForCacheSync(ctx); err != nil {
		return err
	}
	if err := c.startupReconcile(ctx); err != nil {
		return err
	}
	c.Logger.Info("starting workers", "workers", c.Workers)
	var wg sync.WaitGroup
	wg.Go(func() { c.retryLateKinds(ctx, 30*time.Second) })
	wg.Go(func() { c.releaseHeld(ctx) })
	for range c.Workers {
		wg.Go(func() {
			for c.processNext(ctx) {
			}
		})
	}
	<-ctx.Done()
	c.queue.ShutDownWithDrain()
	wg.Wait()
	return nil
}

func (c *Controller) processNext(ctx context.Context) bool {
	key, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(key)
	err := c.reconcile(ctx, key)
	switch {
	case err == nil:
		c.queue.Forget(key)
	case ctx.Err() != nil:
		c.queue.Forget(key) // shutting down
	case errors.Is(err, watcher.ErrNotSynced):
		// A kind listing again after a reload: not a failure, and not
		// worth giving up on however long the list takes.
		c.queue.Forget(key)
		c.queue.AddAfter(key, time.Second)
	case c.queue.NumRequeues(key) < maxRetries:
		c.Logger.Warn("reconcile failed, will retry", "key", key.String(), "error", err)
		c.queue.AddRateLimited(key)
	default:
		c.Logger.Error("reconcile failed, giving up until the object changes", "key", key.String(), "error", err)
		c.queue.Forget(key)
	}
	return true
}

// reconcile is level-triggered: it reads the object as it is now, asks
// the rules what is wrong with it, and lets the incident tracker decide
// what is new, what is over, and what was already said.
func (c *Controller) reconcile(ctx context.Context, key watcher.Key) (err error) {
	if c.Alerts != nil { // only alerts taken in are confirmed (Settle)
		waiting := c.settling.begin(key)
		defer func() { c.settling.end(key, waiting, err == nil) }()
	}
	a, err := c.assess(key)
	if err != nil {
		return err
	}
	return c.outbox.hand(ctx, func() []incident.Notification { return c.track(key, a) })
}

// assessment is what the rules found on an object.
type assessment struct {
	exists   bool
	findings []rules.Finding
	start    time.Time // the reconcile's, for its duration
	// wake: look again after this long even if nothing changes
	// (rules.Evaluation.Wake).
	wake time.Duration
}

// assess reads the object from the cache and runs the rules on it.
func (c *Controller) assess(key watcher.Key) (assessment, error) {
	start := time.Now()
	if c.Alerts != nil && c.Alerts.Detached(key) {
		return c.assessDetached(key, start, true), nil
	}
	obj, exists, err := c.Watcher.Get(key)
	if err != nil {
		return assessment{start: start}, err
	}
	if !exists {
		// Gone: no findings of its own. An alert about it may still
		// fire until its sender says otherwise.
		return c.assessDetached(key, start, false), nil
	}
	set := c.rules.Load()
	ev := set.EvaluateWithExclusions(key.Kind, obj, c.Now(), c.nsLabels)
	findings := ev.Findings
	for _, ex := range ev.Excluded {
		c.Metrics.FindingsExcluded.WithLabelValues(ex.Finding.Rule, ex.By).Inc()
	}
	for _, re := range ev.Errors {
		// One bad rule must not stop the others, nor flood the log:
		// count every failure, log one per rule per minute.
		c.Metrics.RuleErrors.WithLabelValues(re.Rule).Inc()
		if n, ok := c.ruleErrs.Allow(re.Rule); ok {
			c.Logger.Error("rule evaluation failed", "rule", re.Rule, "object", key.String(), "error", re.Err, "failuresSinceLastLog", n)
		}
	}
	c.addGroups(obj, findings)
	if c.Alerts != nil {
		findings = c.Alerts.Join(key, findings, set, c.isOpen)
	}
	c.route(obj, findings)
	if m, ok := obj.(metav1.Object); ok {
		c.fillLinks(m, findings)
	}
	return assessment{exists: true, findings: findings, start: start, wake: ev.Wake}, nil
}

// track updates the object's incidents with what the rules found and
// returns the notifications to send.
func (c *Controller) track(key watcher.Key, a assessment) []incident.Notification {
	var notes []incident.Notification
	var recheck time.Duration
	if a.exists {
		notes, recheck = c.Incidents.Reconcile(key.String(), a.findings)
	} else {
		notes, recheck = c.Incidents.ReconcileGone(key.String())
	}
	if a.wake > 0 && (recheck == 0 || a.wake < recheck) {
		recheck = a.wake
	}
	if recheck > 0 {
		c.queue.AddAfter(key, recheck)
	}
	c.announce(notes, slog.String("object", key.String()))
	c.Metrics.ReconcileSeconds.Observe(time.Since(a.start).Seconds())
	return notes
}

// announce counts and logs the notifications the tracker made.
func (c *Controller) announce(notes []incident.Notification, attrs ...slog.Attr) {
	logged := c.Logger.Enabled(context.Background(), slog.LevelInfo)
	for _, n := range notes {
		c.Metrics.Notifications.WithLabelValues(n.Incident.Rule, string(n.Transition)).Inc()
		c.Metrics.Routed.WithLabelValues(n.Incident.Route).Inc()
		if !logged {
			continue
		}
		// The record is made here rather than by Logger.Info, which
		// also walks the stack for the caller's source position that
		// herald's handlers never print: a line per notification, the
		// walk was a fifth of the line's cost.
		r := slog.NewRecord(time.Now(), slog.LevelInfo, "incident "+string(n.Transition), 0)
		r.AddAttrs(slog.String("rule", n.Incident.Rule), slog.String("container", n.Incident.Container),
			slog.String("change", n.Change), slog.String("id", n.ID()))
		r.AddAttrs(attrs...)
		c.Logger.Handler().Handle(context.Background(), r)
	}
}

// addGroups names the workload of findings whose rule groups by workload,
// and how many pods it has, from the cache.
func (c *Controller) addGroups(obj runtime.Object, findings []rules.Finding) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	for i := range findings {
		f := &findings[i]
		if !f.GroupByWorkload {
			continue
		}
		kind, name := watcher.Workload(m)
		if kind == "Pod" {
			// A pod of its own: a group of one would only read "1/1
			// pods"; it is an incident about the pod.
			f.GroupByWorkload = false
			continue
		}
		f.Group = &rules.ObjectRef{Kind: kind, Namespace: m.GetNamespace(), Name: name}
		f.GroupTotal = c.Watcher.CountByWorkload(m.GetNamespace(), kind, name)
	}
}
