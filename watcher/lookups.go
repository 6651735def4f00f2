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

// Team names the team that owns obj: its own herald.io/team annotation,
// else its workload's (when that kind is cached), else its namespace's
// (when namespaces are cached); "" when none says. A value longer than a
// team's name is no team.
func (w *Watcher) Team(obj metav1.Object) string {
	if t := team(obj.GetAnnotations()); t != "" {
		return t
	}
	ns := obj.GetNamespace()
	if kind, name := Workload(obj); kind != "Pod" || name != obj.GetName() {
		if owner, ok, err := w.Get(Key{Kind: kind, Namespace: ns, Name: name}); err == nil && ok {
			if m, err := objectMeta(owner); err == nil {
				if t := team(m.GetAnnotations()); t != "" {
					return t
				}
			}
		}
	}
	if ns == "" {
		return ""
	}
	if m := w.namespace(ns); m != nil {
		return team(m.GetAnnotations())
	}
	return ""
}

func team(ann map[string]string) string {
	if t := ann[TeamAnnotation]; len(t) <= maxTeam {
		return t
	}
	return ""
}
