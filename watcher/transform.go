package watcher

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// lastApplied is kubectl's copy of the whole object in an annotation; no
// rule reads it and it can double an object's size.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// StripUnread is the informers' transform: it runs once per object before
// the object enters the cache, and drops what no rule reads, so the cache
// holds only what herald needs. It modifies the object in place, which the
// informer allows because the object was freshly decoded for it.
func StripUnread(obj any) (any, error) {
	m, ok := obj.(metav1.Object)
	if !ok { // tombstones and anything else pass unchanged
		return obj, nil
	}
	m.SetManagedFields(nil)
	if ann := m.GetAnnotations(); ann[lastApplied] != "" {
		delete(ann, lastApplied)
		m.SetAnnotations(ann)
	}
	return obj, nil
}
