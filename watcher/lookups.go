package watcher

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// Lookups by relation rather than by key: a pod's workload (and the pod
// cache's index by workload), a namespace's labels and annotations.

// NamespaceLabels returns the labels of a cached namespace; it needs the
// Namespace informer (Informer("Namespace")).
func (w *Watcher) NamespaceLabels(name string) (map[string]string, bool) {
	m := w.namespace(name)
	if m == nil {
		return nil, false
	}
	return m.GetLabels(), true
}

// NamespaceAnnotation returns one annotation of a cached namespace.
func (w *Watcher) NamespaceAnnotation(name, key string) string {
	if m := w.namespace(name); m != nil {
		return m.GetAnnotations()[key]
	}
	return ""
}

func (w *Watcher) namespace(name string) metav1.Object {
	obj, ok, err := w.Get(Key{Kind: "Namespace", Name: name})
	if err != nil || !ok {
		return nil
	}
	m, err := objectMeta(obj)
	if err != nil {
		return nil
	}
	return m
}

// WorkloadIndex is the name of the pod cache index by owning workload.
const WorkloadIndex = "workload"

// Workload names the controller that owns a pod: a Deployment (through its
// ReplicaSet, whose name is the Deployment's plus the pod-template-hash),
// StatefulSet, DaemonSet, Job or bare ReplicaSet; a pod nobody owns is its
// own workload. It reads only the pod, so it costs no API call.
func Workload(obj metav1.Object) (kind, name string) {
	for _, o := range obj.GetOwnerReferences() {
		if o.Controller == nil || !*o.Controller {
			continue
		}
		if o.Kind == "ReplicaSet" {
			if hash := obj.GetLabels()["pod-template-hash"]; hash != "" && strings.HasSuffix(o.Name, "-"+hash) {
				return "Deployment", strings.TrimSuffix(o.Name, "-"+hash)
			}
		}
		return o.Kind, o.Name
	}
	return "Pod", obj.GetName()
}

// WorkloadKey is the index value of a pod's workload.
func WorkloadKey(namespace, kind, name string) string {
	return namespace + "/" + kind + "/" + name
}

// CountByWorkload counts the cached pods of a workload (0 without the
// index: the pod informer gets it when some rule groups by workload).
func (w *Watcher) CountByWorkload(namespace, kind, name string) int {
	inf, ok := w.informer("Pod")
	if !ok {
		return 0
	}
	items, err := inf.GetIndexer().IndexKeys(WorkloadIndex, WorkloadKey(namespace, kind, name))
	if err != nil {
		return 0
	}
	return len(items)
}

// IndexPodsByWorkload adds the workload index to the pod informer; call
// before Start.
func (w *Watcher) IndexPodsByWorkload() error {
	inf, err := w.Informer("Pod")
	if err != nil {
		return err
	}
	return inf.AddIndexers(cache.Indexers{WorkloadIndex: func(obj any) ([]string, error) {
		m, err := objectMeta(obj)
		if err != nil {
			return nil, nil
		}
		kind, name := Workload(m)
		return []string{WorkloadKey(m.GetNamespace(), kind, name)}, nil
	}})
}

// Team names the team that owns obj (OwningTeam), reading its workload
// and namespace from the cache; "" when none says.
func (w *Watcher) Team(obj metav1.Object) string {
	var owner, ns metav1.Object
	if kind, name := Workload(obj); kind != "Pod" || name != obj.GetName() {
		if o, ok, err := w.Get(Key{Kind: kind, Namespace: obj.GetNamespace(), Name: name}); err == nil && ok {
			owner, _ = objectMeta(o)
		}
	}
	if obj.GetNamespace() != "" {
		ns = w.namespace(obj.GetNamespace())
	}
	t, _ := OwningTeam(obj, owner, ns)
	return t
}

// OwningTeam is the herald.io/team that owns obj, and where it was read.
// The namespace's decides: whoever may annotate namespaces (an admin)
// assigns ownership, and a tenant who can only create pods there cannot
// claim another team's routes and pages by annotating a pod. Only in a
// namespace that names no team do its workload's (workload may be nil),
// then the object's own, count; a cluster-scoped object (a Node) has only
// its own. A value longer than a team's name is no team.
func OwningTeam(obj, workload, namespace metav1.Object) (team, from string) {
	if namespace != nil {
		if t := teamOf(namespace); t != "" {
			return t, "namespace " + namespace.GetName()
		}
	}
	if workload != nil {
		if t := teamOf(workload); t != "" {
			kind, name := Workload(obj)
			return t, kind + " " + name
		}
	}
	if t := teamOf(obj); t != "" {
		return t, "the object"
	}
	return "", ""
}

func teamOf(m metav1.Object) string {
	if t := m.GetAnnotations()[TeamAnnotation]; len(t) <= maxTeam {
		return t
	}
	return ""
}
