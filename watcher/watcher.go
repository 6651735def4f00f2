// Package watcher owns herald's view of the cluster: one shared informer
// factory, at most one informer per kind however many rules read it, a
// transform that drops what no rule reads before an object is cached, and
// lookups by Key.
package watcher

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Key names one object; it is the only thing that goes on the work queue,
// so workers always read the object fresh from the cache.
type Key struct{ Kind, Namespace, Name string }

func (k Key) String() string {
	if k.Namespace == "" {
		return k.Kind + "/" + k.Name
	}
	return k.Kind + "/" + k.Namespace + "/" + k.Name
}

// cacheKey is the informer store's key for k (namespace/name).
func (k Key) cacheKey() string {
	if k.Namespace == "" {
		return k.Name
	}
	return k.Namespace + "/" + k.Name
}

// Resource returns the API resource of a built-in kind herald can watch.
func Resource(kind string) (schema.GroupVersionResource, bool) {
	gvr, ok := map[string]schema.GroupVersionResource{
		"Pod":                   {Version: "v1", Resource: "pods"},
		"Node":                  {Version: "v1", Resource: "nodes"},
		"PersistentVolumeClaim": {Version: "v1", Resource: "persistentvolumeclaims"},
		"Deployment":            {Group: "apps", Version: "v1", Resource: "deployments"},
		"StatefulSet":           {Group: "apps", Version: "v1", Resource: "statefulsets"},
		"DaemonSet":             {Group: "apps", Version: "v1", Resource: "daemonsets"},
		"ReplicaSet":            {Group: "apps", Version: "v1", Resource: "replicasets"},
		"Job":                   {Group: "batch", Version: "v1", Resource: "jobs"},
		"CronJob":               {Group: "batch", Version: "v1", Resource: "cronjobs"},
	}[kind]
	return gvr, ok
}

// Watcher holds the shared informer factory and the informers it made.
type Watcher struct {
	factory informers.SharedInformerFactory
	logger  *slog.Logger

	mu        sync.Mutex
	informers map[string]cache.SharedIndexInformer
}

// New makes a Watcher. resync is the informers' resync period (0: none);
// handlers ignore resyncs whose resourceVersion did not change.
func New(client kubernetes.Interface, resync time.Duration, logger *slog.Logger) *Watcher {
	return &Watcher{
		factory:   informers.NewSharedInformerFactoryWithOptions(client, resync, informers.WithTransform(StripUnread)),
		logger:    logger,
		informers: map[string]cache.SharedIndexInformer{},
	}
}

// Informer returns the informer for kind, creating it on first use. Calls
// for the same kind share one informer, one List/Watch and one cache.
func (w *Watcher) Informer(kind string) (cache.SharedIndexInformer, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if inf, ok := w.informers[kind]; ok {
		return inf, nil
	}
	gvr, ok := Resource(kind)
	if !ok {
		return nil, fmt.Errorf("herald cannot watch kind %q", kind)
	}
	generic, err := w.factory.ForResource(gvr)
	if err != nil {
		return nil, fmt.Errorf("informer for %s: %w", kind, err)
	}
	inf := generic.Informer()
	w.informers[kind] = inf
	return inf, nil
}

// Kinds lists the kinds with an informer.
func (w *Watcher) Kinds() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	kinds := make([]string, 0, len(w.informers))
	for k := range w.informers {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	return kinds
}

// Start starts every informer made so far; it does not block.
func (w *Watcher) Start(ctx context.Context) {
	w.factory.Start(ctx.Done())
}

// WaitForCacheSync blocks until every started informer has listed once.
func (w *Watcher) WaitForCacheSync(ctx context.Context) error {
	start := time.Now()
	for typ, ok := range w.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("cache of %v did not sync: %w", typ, context.Cause(ctx))
		}
	}
	w.logger.Info("caches synced", "kinds", w.Kinds(), "duration", time.Since(start).Round(time.Millisecond))
	return nil
}

// Shutdown stops the informers and waits for their goroutines.
func (w *Watcher) Shutdown() { w.factory.Shutdown() }

// Get reads the object named by key from the cache. The object is shared
// with the cache and must not be modified.
func (w *Watcher) Get(key Key) (runtime.Object, bool, error) {
	w.mu.Lock()
	inf, ok := w.informers[key.Kind]
	w.mu.Unlock()
	if !ok {
		return nil, false, fmt.Errorf("no informer for kind %q", key.Kind)
	}
	obj, exists, err := inf.GetIndexer().GetByKey(key.cacheKey())
	if err != nil || !exists {
		return nil, exists, err
	}
	return obj.(runtime.Object), true, nil
}

// KeyFor returns the Key of an object handed to an event handler,
// unwrapping the tombstone a delete carries when the watch missed it.
func KeyFor(kind string, obj any) (Key, bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	m, err := meta(obj)
	if err != nil {
		return Key{}, false
	}
	return Key{Kind: kind, Namespace: m.GetNamespace(), Name: m.GetName()}, true
}

func meta(obj any) (metav1.Object, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T has no object metadata", obj)
	}
	return m, nil
}
