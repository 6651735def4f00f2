package kube

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// ListerWatcher lists and watches resource gvr of kind in every namespace,
// decoding into Scheme's types; it also returns an empty object of the
// kind (an informer's example object).
func (c *Client) ListerWatcher(gvr schema.GroupVersionResource, kind string) (cache.ListerWatcher, runtime.Object, error) {
	gv := gvr.GroupVersion()
	rc := c.rest[gv]
	if rc == nil {
		return nil, nil, fmt.Errorf("herald's client does not speak %s", gv)
	}
	example, err := Scheme.New(gv.WithKind(kind))
	if err != nil {
		return nil, nil, fmt.Errorf("herald's client cannot decode %s: %w", kind, err)
	}
	if _, err := Scheme.New(gv.WithKind(kind + "List")); err != nil {
		return nil, nil, fmt.Errorf("herald's client cannot decode a list of %s: %w", kind, err)
	}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts = InPages(opts)
			list, _ := Scheme.New(gv.WithKind(kind + "List"))
			err := rc.Get().Resource(gvr.Resource).VersionedParams(&opts, parameters).Do(ctx).Into(list)
			return list, err
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.Watch = true
			return rc.Get().Resource(gvr.Resource).VersionedParams(&opts, parameters).Watch(ctx)
		},
	}
	return lw, example, nil
}

// InPages makes a list an informer asks for answer in pages. client-go's
// reflector, when it cannot stream its first list as a watch's initial
// events (an API server without WatchList, or WatchListClient off), lists
// at resourceVersion "0" with a page size, and the API server answers
// that from its watch cache whole, ignoring the page size: at 150,000
// pods one answer of hundreds of megabytes, which herald held at once
// and was killed for at a 512 MiB memory limit (docs/performance.md).
// Without a resourceVersion the list is served in pages, each decoded
// and dropped before the next: a plain paginated LIST, the cost every
// other client's list has.
func InPages(opts metav1.ListOptions) metav1.ListOptions {
	if opts.ResourceVersion == "0" && opts.Limit > 0 && opts.Continue == "" {
		opts.ResourceVersion, opts.ResourceVersionMatch = "", ""
	}
	return opts
}
