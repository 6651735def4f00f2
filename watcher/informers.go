package watcher

// How a kind's informer is made, run and stopped: on herald's own client
// for built-in kinds (typed, protobuf), on the dynamic client for custom
// kinds.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
)

// kindWatch is one kind's informer and how to run it.
type kindWatch struct {
	inf     cache.SharedIndexInformer
	compact bool               // objects are cached as CompactPod
	keep    Keep               // what the transform keeps (keep.go)
	cancel  context.CancelFunc // set once started
	done    chan struct{}      // closed once a started informer has stopped
}

// Clients are what a Watcher lists and watches with. Dynamic and Resolve
// are needed only for custom resources.
type Clients struct {
	Builtin Builtin
	Dynamic dynamic.Interface
	// Resolve finds the resource that serves a custom kind.
	Resolve func(context.Context, schema.GroupVersionKind) (schema.GroupVersionResource, error)
}

// Builtin lists and watches the built-in kinds (Resource) as typed
// objects, or decoded from protobuf by a function of the caller's;
// internal/kube's Client is one.
type Builtin interface {
	ListerWatcher(gvr schema.GroupVersionResource, kind string) (cache.ListerWatcher, runtime.Object, error)
	ListerWatcherDecoding(gvr schema.GroupVersionResource, kind string, decode func(raw []byte) (runtime.Object, error)) (cache.ListerWatcher, error)
}

// newKindWatch makes kind's informer, not started. Each kind has an
// informer of its own (not one factory's), so that a kind no longer needed
// after a reload can be stopped on its own.
func (w *Watcher) newKindWatch(kind string) (*kindWatch, error) {
	kw := &kindWatch{}
	options := cache.SharedIndexInformerOptions{ResyncPeriod: w.resync, Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}}
	kw.keep = w.keepFor(kind)
	transform := kw.keep.transform
	if gvr, ok := Resource(kind); ok {
		var lw cache.ListerWatcher
		var example runtime.Object
		var err error
		if kind == "Pod" && w.compact != nil && w.compact(kind) {
			// Pods decode from protobuf straight into CompactPod.
			transform, kw.compact, example = w.compactTransform, true, &CompactPod{}
			lw, err = w.clients.Builtin.ListerWatcherDecoding(gvr, kind, func(raw []byte) (runtime.Object, error) {
				return decodeCompactPod(raw, w.intern)
			})
		} else {
			lw, example, err = w.clients.Builtin.ListerWatcher(gvr, kind)
		}
		if err != nil {
			return nil, fmt.Errorf("informer for %s: %w", kind, err)
		}
		kw.inf = cache.NewSharedIndexInformerWithOptions(lw, example, options)
	} else {
		gvr, err := w.customResource(kind)
		if err != nil {
			return nil, err
		}
		res := w.clients.Dynamic.Resource(gvr)
		lw := &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
				return res.List(ctx, inPages(opts))
			},
			WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
				return res.Watch(ctx, opts)
			},
		}
		kw.inf = cache.NewSharedIndexInformerWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, w.clients.Dynamic), &unstructured.Unstructured{}, options)
	}
	if err := kw.inf.SetTransform(w.observed(kind, transform)); err != nil {
		return nil, err
	}
	if err := w.deletesTo(kind, kw.inf); err != nil {
		return nil, err
	}
	return kw, nil
}

// compactTransform caches pods as CompactPod (most arrive decoded so);
// anything else (a tombstone) gets the usual stripping.
func (w *Watcher) compactTransform(obj any) (any, error) {
	switch o := obj.(type) {
	case *CompactPod:
		return o, nil
	case *corev1.Pod:
		return compactPod(o, w.intern)
	}
	return StripUnread(obj)
}

// run starts the informer under ctx.
func (kw *kindWatch) run(ctx context.Context) {
	ctx, kw.cancel = context.WithCancel(ctx)
	kw.done = make(chan struct{})
	go func() {
		defer close(kw.done)
		kw.inf.RunWithContext(ctx)
	}()
}

// stop stops a started informer and waits for it.
func (kw *kindWatch) stop() {
	if kw.cancel != nil {
		kw.cancel()
		<-kw.done
	}
}

// discoveryTimeout bounds the discovery of a custom kind's resource.
const discoveryTimeout = 30 * time.Second

// customResource finds the resource of a kind spelled Kind.version.group
// through API discovery.
func (w *Watcher) customResource(kind string) (schema.GroupVersionResource, error) {
	name, rest, ok := strings.Cut(kind, ".")
	if !ok || w.clients.Dynamic == nil || w.clients.Resolve == nil {
		return schema.GroupVersionResource{}, fmt.Errorf("herald cannot watch kind %q", kind)
	}
	version, group, _ := strings.Cut(rest, ".")
	ctx, cancel := context.WithTimeout(context.Background(), discoveryTimeout)
	defer cancel()
	gvr, err := w.clients.Resolve(ctx, schema.GroupVersionKind{Group: group, Version: version, Kind: name})
	if err != nil {
		return schema.GroupVersionResource{}, fmt.Errorf("kind %s (%s/%s) %w; is its CRD installed? %w", name, group, version, ErrNotServed, err)
	}
	return gvr, nil
}

// ErrNotServed: the API server serves no such kind (a custom resource
// whose CRD is not installed, or not yet).
var ErrNotServed = errors.New("is not served by the API server")

// inPages makes a custom resource's first list, when the reflector
// cannot stream it, answer in pages rather than whole from the API
// server's watch cache (resourceVersion "0" ignores the page size): the
// rule herald's own client applies to the built-in kinds (kube.InPages,
// which this package may not import).
func inPages(opts metav1.ListOptions) metav1.ListOptions {
	if opts.ResourceVersion == "0" && opts.Limit > 0 && opts.Continue == "" {
		opts.ResourceVersion, opts.ResourceVersionMatch = "", ""
	}
	return opts
}
