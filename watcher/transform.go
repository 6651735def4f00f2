package watcher

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// lastApplied is kubectl's copy of the whole object in an annotation; no
// rule reads it and it can double an object's size.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// SilenceUntilAnnotation mutes herald's notifications about an object
// until the time it holds (internal/silence); compact pods keep it.
const SilenceUntilAnnotation = "herald.io/silence-until"

// TeamAnnotation names the team that owns an object, a workload or a
// namespace; routes match it (config.AnnotationTeam). A pod's cache keeps
// it, up to maxTeam bytes: a team's name, not a document.
const (
	TeamAnnotation = "herald.io/team"
	maxTeam        = 63
)

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
	// A rule may watch Secrets (their type, labels, age); their values
	// never enter herald's cache, so no rule, template or sink can leak
	// them.
	switch o := obj.(type) {
	case *corev1.Secret:
		o.Data, o.StringData = nil, nil
	case *unstructured.Unstructured:
		if o.GetKind() == "Secret" && o.GetAPIVersion() == "v1" {
			delete(o.Object, "data")
			delete(o.Object, "stringData")
		}
	}
	if ann := m.GetAnnotations(); ann[lastApplied] != "" {
		delete(ann, lastApplied)
		m.SetAnnotations(ann)
	}
	return obj, nil
}
