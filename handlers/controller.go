// Package handlers connects the watcher to the rules: event handlers that
// filter cheaply and enqueue keys, a rate-limited work queue, and workers
// that reconcile one object at a time from the cache.
package handlers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/herald-k8s/herald/internal/incident"
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
}

// Controller runs the reconcile loop.
type Controller struct {
	Options
	queue workqueue.TypedRateLimitingInterface[watcher.Key]
}

// New registers event handlers on an informer for every kind the rules
// watch. Informers start when the watcher is started.
func New(opts Options) (*Controller, error) {
	c := &Controller{
		Options: opts,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[watcher.Key](),
			workqueue.TypedRateLimitingQueueConfig[watcher.Key]{Name: "herald"},
		),
	}
	for _, kind := range opts.Rules.Kinds() {
		inf, err := opts.Watcher.Informer(kind)
		if err != nil {
			return nil, err
		}
		if _, err := inf.AddEventHandler(c.eventHandler(kind)); err != nil {
			return nil, fmt.Errorf("adding event handler for %s: %w", kind, err)
		}
	}
	return c, nil
}

// eventHandler enqueues the keys of in-scope objects. It keeps no state
// and never queues an object, only its key: a worker reads the latest
// version from the cache.
func (c *Controller) eventHandler(kind string) cache.ResourceEventHandler {
	enqueue := func(obj any) {
		key, ok := watcher.KeyFor(kind, obj)
		if !ok {
			c.Logger.Warn("event for an object without metadata", "kind", kind, "type", fmt.Sprintf("%T", obj))
			return
		}
		c.queue.Add(key)
	}
	inScope := func(obj any) bool {
		m, ok := obj.(metav1.Object)
		return ok && c.Rules.InScope(kind, m)
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if inScope(obj) {
				enqueue(obj)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(metav1.Object)
			n, ok2 := newObj.(metav1.Object)
			if ok1 && ok2 && o.GetResourceVersion() == n.GetResourceVersion() {
				return // a resync: nothing changed
			}
			if inScope(newObj) {
				enqueue(newObj)
			}
		},
		// Deletes are always enqueued, even out of scope or as a
		// tombstone: the reconcile finds no object and resolves whatever
		// was open for it.
		DeleteFunc: enqueue,
	}
}

// Run waits for the caches, then runs the workers until ctx ends. It
// returns after the workers have finished their current keys.
func (c *Controller) Run(ctx context.Context) error {
	defer runtime.HandleCrashWithContext(ctx)
	if err := c.Watcher.WaitForCacheSync(ctx); err != nil {
		return err
	}
	c.Logger.Info("starting workers", "workers", c.Workers)
	var wg sync.WaitGroup
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
func (c *Controller) reconcile(ctx context.Context, key watcher.Key) error {
	obj, exists, err := c.Watcher.Get(key)
	if err != nil {
		return err
	}
	var findings []rules.Finding
	var evalErr error
	if exists {
		findings, evalErr = c.Rules.Evaluate(key.Kind, obj)
		if evalErr != nil {
			// One bad rule must not stop the others: log and carry on with
			// what the other rules found.
			c.Logger.Error("rule evaluation failed", "key", key.String(), "error", evalErr)
		}
	}
	var errs []error
	for _, n := range c.Incidents.Reconcile(key.String(), findings) {
		c.Logger.Info("incident "+string(n.Transition), "rule", n.Incident.Rule, "object", key.String(), "container", n.Incident.Container, "id", n.ID())
		if err := c.Dispatcher.Dispatch(ctx, n); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
