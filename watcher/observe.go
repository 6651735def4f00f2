package watcher

import (
	"fmt"

	"k8s.io/client-go/tools/cache"
)

// ObserveBeforeStrip lets fn see every object of kind as decoded from the
// API server, before the transform drops what no rule reads (managed
// fields, pod templates, annotations). It is for those that keep a small
// summary of what the cache does not hold, such as internal/changes, which
// needs a workload's pod template and the manager that last wrote its spec
// to say what changed at a rollout, but not the object.
//
// fn runs inside the informer's queue, once per object listed or changed
// (tombstones excluded), one object at a time per kind: it must be quick
// (no API call, no blocking), must not keep or modify obj, and must
// tolerate seeing one object version twice (a relist). It must be
// registered before kind's informer is made: an informer made earlier has
// no place for it, which is an error.
func (w *Watcher) ObserveBeforeStrip(kind string, fn func(obj any)) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.kinds[kind]; ok {
		return fmt.Errorf("the informer for %s was made before an observer was registered", kind)
	}
	if w.observers == nil {
		w.observers = map[string][]func(any){}
	}
	w.observers[kind] = append(w.observers[kind], fn)
	return nil
}

// observed wraps transform so that kind's observers see each object
// first; w.mu must be held.
func (w *Watcher) observed(kind string, transform func(any) (any, error)) func(any) (any, error) {
	fns := w.observers[kind]
	if len(fns) == 0 {
		return transform
	}
	return func(obj any) (any, error) {
		for _, fn := range fns {
			fn(obj)
		}
		return transform(obj)
	}
}

// ObserveDeletes lets fn learn of every deletion of kind's objects, from
// the informer made for kind now or later: one made again by a reload
// (to list what new rules read) keeps its observers, where a handler
// added to the informer would be lost with it.
//
// fn gets the deleted object's UID too: an object deleted and made again
// under the same name may be observed (ObserveBeforeStrip) before its
// predecessor's deletion reaches fn.
func (w *Watcher) ObserveDeletes(kind string, fn func(key Key, uid string)) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.kinds[kind]; ok {
		return fmt.Errorf("the informer for %s was made before a deletion observer was registered", kind)
	}
	if w.deletes == nil {
		w.deletes = map[string][]func(Key, string){}
	}
	w.deletes[kind] = append(w.deletes[kind], fn)
	return nil
}

// deletesTo hands inf's deletions to kind's deletion observers; w.mu
// must be held.
func (w *Watcher) deletesTo(kind string, inf cache.SharedIndexInformer) error {
	fns := w.deletes[kind]
	if len(fns) == 0 {
		return nil
	}
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		m, err := objectMeta(obj)
		if err != nil {
			return
		}
		key := Key{Kind: kind, Namespace: m.GetNamespace(), Name: m.GetName()}
		for _, fn := range fns {
			fn(key, string(m.GetUID()))
		}
	}})
	return err
}

// Pin keeps kind watched whatever the rules need: a reload that leaves
// no rule on kind does not stop its informer (it may still make it
// again, to list what new rules read). For those that observe a kind
// without a rule of theirs, such as internal/changes.
func (w *Watcher) Pin(kind string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pinned == nil {
		w.pinned = map[string]bool{}
	}
	w.pinned[kind] = true
}

// Pinned reports whether kind is pinned.
func (w *Watcher) Pinned(kind string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pinned[kind]
}
