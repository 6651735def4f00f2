package silence

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// Client creates, reads and deletes Silences with the dynamic client
// (what the Slack buttons' Silence presses do).
type Client struct{ dyn dynamic.Interface }

// NewClient makes a Client.
func NewClient(dyn dynamic.Interface) Client { return Client{dyn} }

// Create makes the Silence obj in its namespace.
func (c Client) Create(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	return c.dyn.Resource(Resource).Namespace(obj.GetNamespace()).Create(ctx, obj, metav1.CreateOptions{})
}

// Get reads one Silence.
func (c Client) Get(ctx context.Context, namespace, name string) (*unstructured.Unstructured, error) {
	return c.dyn.Resource(Resource).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
}

// List lists the Silences of namespace that have labels.
func (c Client) List(ctx context.Context, namespace string, labels map[string]string) ([]unstructured.Unstructured, error) {
	list, err := c.dyn.Resource(Resource).Namespace(namespace).List(ctx, metav1.ListOptions{LabelSelector: k8slabels.SelectorFromSet(labels).String()})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// Delete deletes the Silence namespace/name if it is still the one with
// uid (not one made again under the same name since).
func (c Client) Delete(ctx context.Context, namespace, name string, uid types.UID) error {
	return c.dyn.Resource(Resource).Namespace(namespace).Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
}
