package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The requests herald makes besides lists and watches, one method each:
// what the ledger, the crash context, leader election and the pre-flight
// checks need.

// ListConfigMaps lists the ConfigMaps of namespace that match opts.
func (c *Client) ListConfigMaps(ctx context.Context, namespace string, opts metav1.ListOptions) (*corev1.ConfigMapList, error) {
	out := &corev1.ConfigMapList{}
	err := c.core.Get().Namespace(namespace).Resource("configmaps").VersionedParams(&opts, parameters).Do(ctx).Into(out)
	return out, err
}

// GetConfigMap reads a ConfigMap.
func (c *Client) GetConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	out := &corev1.ConfigMap{}
	err := c.core.Get().Namespace(namespace).Resource("configmaps").Name(name).Do(ctx).Into(out)
	return out, err
}

// CreateConfigMap creates cm in its namespace.
func (c *Client) CreateConfigMap(ctx context.Context, cm *corev1.ConfigMap) (*corev1.ConfigMap, error) {
	out := &corev1.ConfigMap{}
	err := c.core.Post().Namespace(cm.Namespace).Resource("configmaps").Body(cm).Do(ctx).Into(out)
	return out, err
}

// UpdateConfigMap replaces cm (if cm has a resourceVersion, only that
// one) and returns its new resourceVersion. The ledger, the one caller,
// writes shards of up to 900 KB once a second under churn, so neither
// side of the request is made of copies: cm is encoded once, into the
// request's body (encodeConfigMap), and of the API server's answer, the
// object as stored, only the resourceVersion is kept (resourceVersionFrom)
// — client-go encodes it into one buffer and copies that into another,
// and reads the answer whole.
func (c *Client) UpdateConfigMap(ctx context.Context, cm *corev1.ConfigMap) (string, error) {
	if cm.Namespace == "" || cm.Name == "" {
		// client-go's Do checks this; Stream does not.
		return "", fmt.Errorf("updating a ConfigMap: namespace %q and name %q must both be set", cm.Namespace, cm.Name)
	}
	body, err := encodeConfigMap(cm)
	if err != nil {
		return "", err
	}
	answer, err := c.core.Put().Namespace(cm.Namespace).Resource("configmaps").Name(cm.Name).
		SetHeader("Content-Type", protobufContentType).Body(body).Stream(ctx)
	if err != nil {
		return "", err
	}
	defer answer.Close()
	return resourceVersionFrom(answer)
}

// AnnotateConfigMap sets annotations on a ConfigMap, only if its
// resourceVersion is still resourceVersion (a Conflict otherwise: a merge
// patch that names a resourceVersion is conditional on it), and returns
// the ConfigMap as stored. A new leader marks every ledger shard this way
// before it reads the ledger, so that a deposed leader's write of any of
// them fails.
func (c *Client) AnnotateConfigMap(ctx context.Context, namespace, name, resourceVersion string, annotations map[string]string) (*corev1.ConfigMap, error) {
	if resourceVersion == "" {
		return nil, fmt.Errorf("annotating ConfigMap %s/%s: a resourceVersion is required (the change must be conditional)", namespace, name)
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": resourceVersion, "annotations": annotations}})
	if err != nil {
		return nil, err
	}
	out := &corev1.ConfigMap{}
	err = c.core.Patch(types.MergePatchType).Namespace(namespace).Resource("configmaps").Name(name).Body(patch).Do(ctx).Into(out)
	return out, err
}

// DeleteConfigMap deletes a ConfigMap; with a resourceVersion, only if
// that is still the current one (a Conflict otherwise).
func (c *Client) DeleteConfigMap(ctx context.Context, namespace, name, resourceVersion string) error {
	opts := &metav1.DeleteOptions{}
	if resourceVersion != "" {
		opts.Preconditions = &metav1.Preconditions{ResourceVersion: &resourceVersion}
	}
	return c.core.Delete().Namespace(namespace).Resource("configmaps").Name(name).Body(opts).Do(ctx).Error()
}

// PodLogs streams a pod's log (pods/log, which the API server proxies to
// the node's kubelet); the caller closes it.
func (c *Client) PodLogs(ctx context.Context, namespace, pod string, opts *corev1.PodLogOptions) (io.ReadCloser, error) {
	return c.core.Get().Namespace(namespace).Resource("pods").Name(pod).SubResource("log").VersionedParams(opts, parameters).Stream(ctx)
}

// NodeStatsSummary streams a node's kubelet stats summary through the
// API server's node proxy (nodes/proxy get); the caller closes it.
func (c *Client) NodeStatsSummary(ctx context.Context, node string) (io.ReadCloser, error) {
	return c.core.Get().Resource("nodes").Name(node).SubResource("proxy").Suffix("stats", "summary").Stream(ctx)
}

// ListEvents lists core/v1 Events of namespace that match opts.
func (c *Client) ListEvents(ctx context.Context, namespace string, opts metav1.ListOptions) (*corev1.EventList, error) {
	out := &corev1.EventList{}
	err := c.core.Get().Namespace(namespace).Resource("events").VersionedParams(&opts, parameters).Do(ctx).Into(out)
	return out, err
}

// GetLease reads a Lease.
func (c *Client) GetLease(ctx context.Context, namespace, name string) (*coordinationv1.Lease, error) {
	out := &coordinationv1.Lease{}
	err := c.rest[coordinationv1.SchemeGroupVersion].Get().Namespace(namespace).Resource("leases").Name(name).Do(ctx).Into(out)
	return out, err
}

// CreateLease creates l in its namespace.
func (c *Client) CreateLease(ctx context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	out := &coordinationv1.Lease{}
	err := c.rest[coordinationv1.SchemeGroupVersion].Post().Namespace(l.Namespace).Resource("leases").Body(l).Do(ctx).Into(out)
	return out, err
}

// UpdateLease replaces l, only if its resourceVersion is still current.
func (c *Client) UpdateLease(ctx context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	out := &coordinationv1.Lease{}
	err := c.rest[coordinationv1.SchemeGroupVersion].Put().Namespace(l.Namespace).Resource("leases").Name(l.Name).Body(l).Do(ctx).Into(out)
	return out, err
}

// RenewLease sets a Lease's renewTime, only if holder still holds it: a
// JSON patch whose first operation tests spec.holderIdentity (the API
// server answers 422 when the test fails). It is not conditional on the
// resourceVersion, so several renewals of one holder may be in flight at
// once (a slow API server) without refusing each other.
func (c *Client) RenewLease(ctx context.Context, namespace, name, holder string, renewTime metav1.MicroTime) (*coordinationv1.Lease, error) {
	patch, err := json.Marshal([]map[string]any{
		{"op": "test", "path": "/spec/holderIdentity", "value": holder},
		{"op": "replace", "path": "/spec/renewTime", "value": renewTime},
	})
	if err != nil {
		return nil, err
	}
	out := &coordinationv1.Lease{}
	err = c.rest[coordinationv1.SchemeGroupVersion].Patch(types.JSONPatchType).Namespace(namespace).Resource("leases").Name(name).Body(patch).Do(ctx).Into(out)
	return out, err
}

// ReviewAccess asks whether the client's user may do what review asks.
func (c *Client) ReviewAccess(ctx context.Context, review *authzv1.SelfSubjectAccessReview) (*authzv1.SelfSubjectAccessReview, error) {
	out := &authzv1.SelfSubjectAccessReview{}
	err := c.rest[authzv1.SchemeGroupVersion].Post().Resource("selfsubjectaccessreviews").Body(review).Do(ctx).Into(out)
	return out, err
}

// WhoAmI asks the API server who the client's user is.
func (c *Client) WhoAmI(ctx context.Context) (*authnv1.SelfSubjectReview, error) {
	out := &authnv1.SelfSubjectReview{}
	err := c.rest[authnv1.SchemeGroupVersion].Post().Resource("selfsubjectreviews").Body(&authnv1.SelfSubjectReview{}).Do(ctx).Into(out)
	return out, err
}

// Ready asks the API server's own /readyz (which checks etcd).
func (c *Client) Ready(ctx context.Context) error {
	return c.core.Get().AbsPath("/readyz").Do(ctx).Error()
}

// CreateEvent records a core/v1 Event (what herald did, on the object it
// did it to: kubectl describe shows it).
func (c *Client) CreateEvent(ctx context.Context, ev *corev1.Event) (*corev1.Event, error) {
	out := &corev1.Event{}
	err := c.core.Post().Namespace(ev.Namespace).Resource("events").Body(ev).Do(ctx).Into(out)
	return out, err
}
