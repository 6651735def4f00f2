package watcher

import (
	"slices"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
)

// A Service's endpoints live in its EndpointSlices (one or more, each
// labelled with the Service's name); the no-endpoints detector reads
// them through these lookups, and a slice's change is its Service's.

// ServiceIndex is the name of the EndpointSlice cache's index by Service.
const ServiceIndex = "service"

// ServiceOf names the Service an EndpointSlice belongs to ("" for one
// made by hand for no Service).
func ServiceOf(obj any) (namespace, name string) {
	m, err := objectMeta(obj)
	if err != nil {
		return "", ""
	}
	return m.GetNamespace(), m.GetLabels()[discoveryv1.LabelServiceName]
}

// IndexEndpointSlicesByService starts the EndpointSlice informer (if need
// be) with its index by Service.
func (w *Watcher) IndexEndpointSlicesByService() error {
	inf, err := w.Informer("EndpointSlice")
	if err != nil {
		return err
	}
	if _, ok := inf.GetIndexer().GetIndexers()[ServiceIndex]; ok {
		return nil
	}
	return inf.AddIndexers(cache.Indexers{ServiceIndex: func(obj any) ([]string, error) {
		if ns, name := ServiceOf(obj); name != "" {
			return []string{ns + "/" + name}, nil
		}
		return nil, nil
	}})
}

// Endpoints counts the ready and not-ready endpoints of a Service in its
// cached EndpointSlices, each address once (a dual-stack Service has a
// slice per family). known is false when none is cached: no slice made
// yet, or no EndpointSlice informer.
func (w *Watcher) Endpoints(namespace, service string) (ready, notReady int, known bool) {
	inf, ok := w.informer("EndpointSlice")
	if !ok {
		return 0, 0, false
	}
	items, err := inf.GetIndexer().ByIndex(ServiceIndex, namespace+"/"+service)
	if err != nil || len(items) == 0 {
		return 0, 0, false
	}
	seen := map[string]bool{} // by target (a pod) or first address
	for _, it := range items {
		s, ok := it.(*discoveryv1.EndpointSlice)
		if !ok {
			continue
		}
		for _, e := range s.Endpoints {
			id := ""
			if e.TargetRef != nil {
				id = e.TargetRef.Kind + "/" + e.TargetRef.Name
			} else if len(e.Addresses) > 0 {
				id = e.Addresses[0]
			}
			if id != "" && seen[id] {
				continue
			}
			seen[id] = true
			// Ready unset means ready (the API's documented default).
			if e.Conditions.Ready == nil || *e.Conditions.Ready {
				ready++
			} else {
				notReady++
			}
		}
	}
	return ready, notReady, true
}

// maxWorkloadsSaid bounds the workloads a lookup returns.
const maxWorkloadsSaid = 3

// SelectedWorkloads names the workloads ("Deployment/api") whose cached
// pods in namespace the selector selects, sorted, at most a few: what a
// Service's traffic goes to. nil when pods are not cached.
func (w *Watcher) SelectedWorkloads(namespace string, selector map[string]string) []string {
	inf, ok := w.informer("Pod")
	if !ok || len(selector) == 0 {
		return nil
	}
	items, err := inf.GetIndexer().ByIndex(cache.NamespaceIndex, namespace)
	if err != nil {
		return nil
	}
	sel := labels.SelectorFromSet(selector)
	var out []string
	for _, it := range items {
		m, err := objectMeta(it)
		if err != nil || !sel.Matches(labels.Set(m.GetLabels())) {
			continue
		}
		kind, name := Workload(m)
		if w := kind + "/" + name; !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	slices.Sort(out)
	return out[:min(len(out), maxWorkloadsSaid)]
}
