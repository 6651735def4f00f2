// Package watcher owns herald's view of the cluster: at most one informer
// per kind however many rules read it, a
// transform that drops what no rule reads before an object is cached, and
// lookups by Key.
package watcher

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
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

// ParseKey is the inverse of Key.String.
func ParseKey(s string) (Key, bool) {
	parts := strings.Split(s, "/")
	switch len(parts) {
	case 2:
		return Key{Kind: parts[0], Name: parts[1]}, parts[0] != "" && parts[1] != ""
	case 3:
		return Key{Kind: parts[0], Namespace: parts[1], Name: parts[2]}, parts[0] != "" && parts[2] != ""
	}
	return Key{}, false
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
		"Pod":                     {Version: "v1", Resource: "pods"},
		"Namespace":               {Version: "v1", Resource: "namespaces"},
		"Secret":                  {Version: "v1", Resource: "secrets"},
		"Event":                   {Group: "events.k8s.io", Version: "v1", Resource: "events"},
		"Node":                    {Version: "v1", Resource: "nodes"},
		"PersistentVolumeClaim":   {Version: "v1", Resource: "persistentvolumeclaims"},
		"Deployment":              {Group: "apps", Version: "v1", Resource: "deployments"},
		"StatefulSet":             {Group: "apps", Version: "v1", Resource: "statefulsets"},
		"DaemonSet":               {Group: "apps", Version: "v1", Resource: "daemonsets"},
		"ReplicaSet":              {Group: "apps", Version: "v1", Resource: "replicasets"},
		"Job":                     {Group: "batch", Version: "v1", Resource: "jobs"},
		"CronJob":                 {Group: "batch", Version: "v1", Resource: "cronjobs"},
		"HorizontalPodAutoscaler": {Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"},
		"Service":                 {Version: "v1", Resource: "services"},
		"EndpointSlice":           {Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices"},
	}[kind]
	return gvr, ok
}

// Watcher holds one informer per watched kind (typed for built-in kinds,
// unstructured for custom resources), each on its own so that a kind no
// longer needed after a configuration reload can be stopped on its own.
// Every rule of a kind still shares that kind's one List/Watch and cache.
type Watcher struct {
	clients Clients
	resync  time.Duration
	logger  *slog.Logger

	mu    sync.Mutex
	kinds map[string]*kindWatch
	ctx   context.Context // of the first Start, for kinds added later

	// compact says whether a kind may be cached compact (CompactPod);
	// nil: every object is cached whole.
	compact func(kind string) bool
	// keep says what a kind's cache keeps (keep.go); nil: KeepAll.
	keep   func(kind string) Keep
	intern *interner
	// handlersSynced are event handlers (outside the watcher) whose
	// state must be complete before herald reconciles: the silences.
	handlersSynced []cache.InformerSynced
	// observers see a kind's objects before the transform (observe.go).
	observers map[string][]func(any)
	// deletes learn of a kind's deletions, and pinned kinds stay watched
	// whatever the rules need (observe.go).
	deletes map[string][]func(Key, string)
	pinned  map[string]bool
}

// WaitAlsoFor makes WaitForCacheSync and Synced wait for synced too: an
// event handler registration's HasSynced, when what the handler builds
// must be complete before the first reconcile (the silences, or muted
// incidents would be announced at start).
func (w *Watcher) WaitAlsoFor(synced cache.InformerSynced) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.handlersSynced = append(w.handlersSynced, synced)
}

// ErrNotSynced is returned for lookups in a cache that has not listed
// yet: "not found" there would wrongly mean "deleted".
var ErrNotSynced = errors.New("cache not synced yet")

// New makes a Watcher. resync is the informers' resync period (0: none);
// handlers ignore resyncs whose resourceVersion did not change.
func New(c Clients, resync time.Duration, logger *slog.Logger) *Watcher {
	return &Watcher{clients: c, resync: resync, logger: logger, kinds: map[string]*kindWatch{}, intern: newInterner(1 << 17)}
}

// CompactWhen lets informers made from now on cache pods compact when
// compact(kind) holds, that is when no rule needs the whole object.
func (w *Watcher) CompactWhen(compact func(kind string) bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.compact = compact
}

// Compacted reports whether kind's informer caches compact objects.
func (w *Watcher) Compacted(kind string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	kw, ok := w.kinds[kind]
	return ok && kw.compact
}

// Informer returns the informer for kind, creating it on first use. Calls
// for the same kind share one informer, one List/Watch and one cache.
func (w *Watcher) Informer(kind string) (cache.SharedIndexInformer, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if kw, ok := w.kinds[kind]; ok {
		return kw.inf, nil
	}
	kw, err := w.newKindWatch(kind)
	if err != nil {
		return nil, err
	}
	w.kinds[kind] = kw
	return kw.inf, nil
}

// Remove stops the informer of kind and drops its cache.
func (w *Watcher) Remove(kind string) {
	w.mu.Lock()
	kw, ok := w.kinds[kind]
	delete(w.kinds, kind)
	w.mu.Unlock()
	if ok {
		kw.stop()
		w.logger.Info("stopped watching kind", "kind", kind)
	}
}

// Kinds lists the kinds with an informer.
func (w *Watcher) Kinds() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Sorted(maps.Keys(w.kinds))
}

// Start starts every informer made so far; it does not block. It may be
// called again to start informers made since.
func (w *Watcher) Start(ctx context.Context) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ctx == nil {
		w.ctx = ctx
	}
	w.startLocked(ctx)
}

// StartAdded starts informers made after Start, under Start's context (a
// configuration reload that watches new kinds).
func (w *Watcher) StartAdded() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ctx != nil {
		w.startLocked(w.ctx)
	}
}

func (w *Watcher) startLocked(ctx context.Context) {
	for _, kw := range w.kinds {
		if kw.cancel == nil {
			kw.run(ctx)
		}
	}
}

// WaitForCacheSync blocks until every started informer has listed once.
func (w *Watcher) WaitForCacheSync(ctx context.Context) error {
	start := time.Now()
	w.mu.Lock()
	var synced []cache.InformerSynced
	for _, kw := range w.kinds {
		synced = append(synced, kw.inf.HasSynced)
	}
	synced = append(synced, w.handlersSynced...)
	w.mu.Unlock()
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return fmt.Errorf("caches did not sync: %w", context.Cause(ctx))
	}
	w.logger.Info("caches synced", "kinds", w.Kinds(), "duration", time.Since(start).Round(time.Millisecond))
	return nil
}

// Shutdown stops the informers and waits for their goroutines.
func (w *Watcher) Shutdown() {
	w.mu.Lock()
	kinds := w.kinds
	w.kinds = map[string]*kindWatch{}
	w.mu.Unlock()
	for _, kw := range kinds {
		kw.stop()
	}
}

// informer returns the informer of kind, if there is one.
func (w *Watcher) informer(kind string) (cache.SharedIndexInformer, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	kw, ok := w.kinds[kind]
	if !ok {
		return nil, false
	}
	return kw.inf, true
}

// Synced reports whether every informer has listed once (for readiness).
func (w *Watcher) Synced() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, kw := range w.kinds {
		if !kw.inf.HasSynced() {
			return false
		}
	}
	for _, synced := range w.handlersSynced {
		if !synced() {
			return false
		}
	}
	return true
}

// Get reads the object named by key from the cache. The object may be
// shared with the cache and must not be modified. A compact pod is
// decoded into a whole corev1.Pod (with only the fields it keeps). A
// cache that has not synced yet answers ErrNotSynced.
func (w *Watcher) Get(key Key) (runtime.Object, bool, error) {
	obj, exists, err := w.cached(key)
	if err != nil || !exists {
		return nil, exists, err
	}
	return expand(obj)
}

// Meta reads the metadata of the object named by key from the cache,
// without decoding a compact pod's spec and status (for callers that need
// only names, labels and owners: a decode per notification was a measurable
// share of herald's CPU). It must not be modified.
func (w *Watcher) Meta(key Key) (metav1.Object, bool, error) {
	obj, exists, err := w.cached(key)
	if err != nil || !exists {
		return nil, exists, err
	}
	m, err := objectMeta(obj)
	return m, err == nil, err
}

// PodNodeName returns the node a cached pod runs on ("" if none, or not
// cached), without decoding it.
func (w *Watcher) PodNodeName(namespace, name string) string {
	obj, exists, err := w.cached(Key{Kind: "Pod", Namespace: namespace, Name: name})
	if err != nil || !exists {
		return ""
	}
	switch p := obj.(type) {
	case *CompactPod:
		return p.nodeName
	case *corev1.Pod:
		return p.Spec.NodeName
	}
	return ""
}

// cached is the object the cache holds for key, as it holds it.
func (w *Watcher) cached(key Key) (any, bool, error) {
	inf, ok := w.informer(key.Kind)
	if !ok {
		return nil, false, fmt.Errorf("no informer for kind %q", key.Kind)
	}
	if !inf.HasSynced() {
		return nil, false, fmt.Errorf("%s: %w", key, ErrNotSynced)
	}
	return inf.GetIndexer().GetByKey(key.cacheKey())
}

func expand(obj any) (runtime.Object, bool, error) {
	if c, ok := obj.(*CompactPod); ok {
		pod, err := c.Pod()
		return pod, err == nil, err
	}
	return obj.(runtime.Object), true, nil
}

// KeyFor returns the Key of an object handed to an event handler,
// unwrapping the tombstone a delete carries when the watch missed it.
func KeyFor(kind string, obj any) (Key, bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	m, err := objectMeta(obj)
	if err != nil {
		return Key{}, false
	}
	return Key{Kind: kind, Namespace: m.GetNamespace(), Name: m.GetName()}, true
}

func objectMeta(obj any) (metav1.Object, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T has no object metadata", obj)
	}
	return m, nil
}

// List returns every cached object of kind, compact pods decoded. The
// objects may be shared with the cache and must not be modified.
func (w *Watcher) List(kind string) ([]runtime.Object, error) {
	inf, ok := w.informer(kind)
	if !ok {
		return nil, fmt.Errorf("no informer for kind %q", kind)
	}
	items := inf.GetStore().List()
	out := make([]runtime.Object, 0, len(items))
	for _, it := range items {
		obj, _, err := expand(it)
		if err != nil {
			return nil, err
		}
		out = append(out, obj)
	}
	return out, nil
}

// Keys returns the key of every cached object of kind (nothing decoded).
func (w *Watcher) Keys(kind string) ([]Key, error) {
	inf, ok := w.informer(kind)
	if !ok {
		return nil, fmt.Errorf("no informer for kind %q", kind)
	}
	items := inf.GetStore().List()
	out := make([]Key, 0, len(items))
	for _, it := range items {
		if k, ok := KeyFor(kind, it); ok {
			out = append(out, k)
		}
	}
	return out, nil
}
