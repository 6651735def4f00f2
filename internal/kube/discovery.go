package kube

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ResourceFor finds the resource that serves gvk (a custom resource, say)
// by asking the API server what its group version serves: one request,
// for the one group version, not the whole discovery document.
func (c *Client) ResourceFor(ctx context.Context, gvk schema.GroupVersionKind) (schema.GroupVersionResource, error) {
	path := "/apis/" + gvk.Group + "/" + gvk.Version
	if gvk.Group == "" {
		path = "/api/" + gvk.Version
	}
	list := &metav1.APIResourceList{}
	if err := c.core.Get().AbsPath(path).Do(ctx).Into(list); err != nil {
		if apierrors.IsNotFound(err) {
			return schema.GroupVersionResource{}, fmt.Errorf("the API server serves no group version %s", gvk.GroupVersion())
		}
		return schema.GroupVersionResource{}, fmt.Errorf("discovering %s: %w", gvk.GroupVersion(), err)
	}
	for _, r := range list.APIResources {
		if r.Kind == gvk.Kind && !strings.Contains(r.Name, "/") { // not a subresource
			return gvk.GroupVersion().WithResource(r.Name), nil
		}
	}
	return schema.GroupVersionResource{}, fmt.Errorf("the API server's %s serves no kind %s", gvk.GroupVersion(), gvk.Kind)
}
