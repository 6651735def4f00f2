package handlers

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/herald-k8s/herald/watcher"
)

// The event handlers: on each informer the rules need, a filter as cheap
// as a namespace and kind check, then the object's key onto the queue.
// Nothing else happens on an informer's goroutine; the workers
// (controller.go) read the object from the cache.

func (c *Controller) watch(kind string) error {
	inf, err := c.Watcher.Informer(kind)
	if err != nil {
		return err
	}
	if kind == "EndpointSlice" {
		// Read by no-endpoints through the cache's index by Service.
		if err := c.Watcher.IndexEndpointSlicesByService(); err != nil {
			return err
		}
	}
	c.handlersMu.Lock()
	defer c.handlersMu.Unlock()
	if h, ok := c.handlers[kind]; ok && h.inf == inf {
		return nil // a pinned informer that kept its handler
	}
	reg, err := inf.AddEventHandler(c.eventHandler(kind))
	if err != nil {
		return fmt.Errorf("adding event handler for %s: %w", kind, err)
	}
	if c.handlers == nil {
		c.handlers = map[string]kindHandler{}
	}
	c.handlers[kind] = kindHandler{inf, reg}
	return nil
}

// unwatch takes the controller's handler off kind's informer, which
// stays (another reader pinned it) though no rule needs the kind.
func (c *Controller) unwatch(kind string) {
	c.handlersMu.Lock()
	defer c.handlersMu.Unlock()
	if h, ok := c.handlers[kind]; ok {
		if err := h.inf.RemoveEventHandler(h.reg); err != nil {
			c.Logger.Warn("removing an event handler", "kind", kind, "error", err)
		}
		delete(c.handlers, kind)
	}
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
	// A slice's change is its Service's: no-endpoints reads the slices
	// of the Service it evaluates (a rule of the slices' own still sees
	// them, through inScope and enqueue).
	owner := func(any) {}
	if kind == "EndpointSlice" {
		owner = func(obj any) {
			if ns, svc := watcher.ServiceOf(obj); svc != "" && slices.Contains(c.rules.Load().Reads(), kind) {
				c.queue.Add(watcher.Key{Kind: "Service", Namespace: ns, Name: svc})
			}
		}
	}
	inScope := func(obj any) bool {
		m, ok := obj.(metav1.Object)
		return ok && c.rules.Load().InScope(kind, m, c.nsLabels)
	}
	events := c.Metrics.Events.WithLabelValues(kind)
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			events.Inc()
			owner(obj)
			if inScope(obj) {
				enqueue(obj)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			events.Inc()
			o, ok1 := oldObj.(metav1.Object)
			n, ok2 := newObj.(metav1.Object)
			if ok1 && ok2 && o.GetResourceVersion() == n.GetResourceVersion() {
				return // a resync: nothing changed
			}
			owner(newObj)
			if inScope(newObj) {
				enqueue(newObj)
			}
		},
		// Deletes are always enqueued, even out of scope or as a
		// tombstone: the reconcile finds no object and resolves whatever
		// was open for it.
		DeleteFunc: func(obj any) {
			events.Inc()
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				owner(d.Obj)
			} else {
				owner(obj)
			}
			enqueue(obj)
		},
	}
}
