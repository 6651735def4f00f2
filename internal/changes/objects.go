package changes

import (
	"context"
	"hash/maphash"
	"maps"
	"slices"
	"time"

	"github.com/herald-k8s/herald/internal/kube"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
)

// When ConfigMaps and Secrets changed, learnt without their data: herald
// watches their metadata only (PartialObjectMetadata), so their data does
// not cross the wire — but for kubectl's last-applied-configuration
// annotation, which can copy it and which herald neither hashes nor
// keeps (strip, metaHash). Metadata alone does not
// say what changed: a new resourceVersion with the same labels and
// annotations is a change of the data (or immutability); a new one with
// other labels or annotations may be either, and is recorded as such.
//
// client-go's metadatainformer is not used: it imports client-go's
// informers package and with it every API group (internal/kube, issue
// #17). A plain shared informer over the metadata client's List and Watch
// does the same job.

// objectKey names one ConfigMap or Secret.
type objectKey struct {
	Ref
	Namespace string
}

// objectState is what the record keeps of one ConfigMap or Secret.
type objectState struct {
	uid     types.UID
	rv      string
	meta    uint64    // hash of labels and annotations (but kubectl's last-applied copy)
	created time.Time // creationTimestamp
	changed time.Time // when herald saw its content change; zero: not since herald started
	// metaToo: the last change also changed labels or annotations, so
	// the data may not have changed at all.
	metaToo bool
}

var objectResources = map[string]schema.GroupVersionResource{
	"ConfigMap": {Version: "v1", Resource: "configmaps"},
	"Secret":    {Version: "v1", Resource: "secrets"},
}

// objectInformer lists and watches one kind's metadata. Its transform
// records what changed and reduces each object to its name, so that the
// informer's own cache (which it needs to tell updates from adds) holds
// next to nothing.
func (c *Changes) objectInformer(client metadata.Interface, kind string) (cache.SharedIndexInformer, error) {
	lw := objectListWatch(client.Resource(objectResources[kind]))
	inf := cache.NewSharedIndexInformerWithOptions(lw, &metav1.PartialObjectMetadata{}, cache.SharedIndexInformerOptions{})
	err := inf.SetTransform(func(obj any) (any, error) {
		m, ok := obj.(*metav1.PartialObjectMetadata)
		if !ok {
			return obj, nil
		}
		c.observeObject(kind, m)
		return strip(m), nil
	})
	if err != nil {
		return nil, err
	}
	_, err = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if m, ok := obj.(metav1.Object); ok {
			c.forgetObject(objectKey{Ref{kind, m.GetName()}, m.GetNamespace()}, m.GetUID())
		}
	}})
	return inf, err
}

// objectListWatch lists and watches res's metadata. Where the API
// server cannot stream the first list, it is asked for in pages
// (kube.InPages): asked at resourceVersion "0", a large cluster's
// ConfigMaps or Secrets would come whole in one answer.
func objectListWatch(res metadata.ResourceInterface) *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return res.List(ctx, kube.InPages(opts))
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return res.Watch(ctx, opts)
		},
	}
}

// strip keeps of an object what its informer needs to tell an update
// from an add and a delete.
func strip(m *metav1.PartialObjectMetadata) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{TypeMeta: m.TypeMeta, ObjectMeta: metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion}}
}

// observeObject records one ConfigMap's or Secret's metadata as listed or
// changed.
func (c *Changes) observeObject(kind string, m *metav1.PartialObjectMetadata) {
	key := objectKey{Ref{kind, m.Name}, m.Namespace}
	meta := c.metaHash(m)
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.objects[key]
	switch {
	case s != nil && s.uid == m.UID:
		if s.rv != m.ResourceVersion {
			s.rv, s.changed, s.metaToo, s.meta = m.ResourceVersion, now, s.meta != meta, meta
		}
	case s == nil && len(c.objects) >= c.opts.MaxObjects:
		if c.refusedObjects++; c.refusedObjects == 1 {
			c.logger.Warn("change record full: further ConfigMaps and Secrets are not tracked", "max", c.opts.MaxObjects)
		}
	default: // new, or deleted and made again
		c.objects[key] = &objectState{uid: m.UID, rv: m.ResourceVersion, meta: meta, created: m.CreationTimestamp.Time}
	}
}

// metaHash hashes the labels and annotations a person sets, leaving out
// kubectl's last-applied copy, which changes with the data.
func (c *Changes) metaHash(m *metav1.PartialObjectMetadata) uint64 {
	var h maphash.Hash
	h.SetSeed(c.hash.seed)
	for i, kv := range []map[string]string{m.Labels, m.Annotations} {
		h.WriteByte(byte(i))
		for _, k := range slices.Sorted(maps.Keys(kv)) {
			if k == "kubectl.kubernetes.io/last-applied-configuration" {
				continue
			}
			h.WriteString(k)
			h.WriteByte(0)
			h.WriteString(kv[k])
			h.WriteByte(0)
		}
	}
	return h.Sum64()
}

// forgetObject drops a deleted object, unless the name is already
// another object's (deleted and made again).
func (c *Changes) forgetObject(key objectKey, uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.objects[key]; s != nil && (uid == "" || s.uid == uid) {
		delete(c.objects, key)
	}
}
