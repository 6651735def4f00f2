package watcher

import (
	"io"
	"log/slog"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func slice(name, service string, endpoints ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", Labels: map[string]string{discoveryv1.LabelServiceName: service}},
		Endpoints: endpoints}
}

func endpoint(pod, ip string, ready *bool) discoveryv1.Endpoint {
	return discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ready},
		TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: pod}}
}

// TestEndpoints: a Service's endpoints counted across its slices, a pod
// in two (dual-stack: a slice per family) once, ready unset as ready (the
// API's default); another Service's slices not counted; a Service with no
// slice unknown. The workloads a selector selects come from the cached
// pods of its namespace.
func TestEndpoints(t *testing.T) {
	w := New(Clients{Builtin: stubBuiltin{}}, 0, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if _, _, known := w.Endpoints("shop", "web"); known {
		t.Error("no EndpointSlice informer, yet known")
	}
	if err := w.IndexEndpointSlicesByService(); err != nil {
		t.Fatal(err)
	}
	inf, _ := w.informer("EndpointSlice")
	for _, s := range []*discoveryv1.EndpointSlice{
		slice("web-v4", "web", endpoint("web-1", "10.0.0.1", ptr.To(false)), endpoint("web-2", "10.0.0.2", nil)),
		slice("web-v6", "web", endpoint("web-1", "fd00::1", ptr.To(false)), endpoint("web-3", "fd00::3", ptr.To(true))),
		slice("api-v4", "api", endpoint("api-1", "10.0.1.1", ptr.To(false))),
	} {
		if err := inf.GetIndexer().Add(s); err != nil {
			t.Fatal(err)
		}
	}
	if ready, notReady, known := w.Endpoints("shop", "web"); !known || ready != 2 || notReady != 1 {
		t.Errorf("web: %d ready, %d not, known %v; want 2, 1, true", ready, notReady, known)
	}
	if ready, notReady, known := w.Endpoints("shop", "api"); !known || ready != 0 || notReady != 1 {
		t.Errorf("api: %d ready, %d not, known %v; want 0, 1, true", ready, notReady, known)
	}
	if _, _, known := w.Endpoints("shop", "db"); known {
		t.Error("a Service with no slice known")
	}

	pods, err := w.Informer("Pod")
	if err != nil {
		t.Fatal(err)
	}
	owned := func(name, rs, hash string, labels map[string]string) *corev1.Pod {
		labels["pod-template-hash"] = hash
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: rs, Controller: ptr.To(true)}}}}
	}
	for _, p := range []*corev1.Pod{
		owned("web-5d8f-a", "web-5d8f", "5d8f", map[string]string{"app": "web"}),
		owned("web-5d8f-b", "web-5d8f", "5d8f", map[string]string{"app": "web"}),
		owned("web-canary-1a2b-c", "web-canary-1a2b", "1a2b", map[string]string{"app": "web", "track": "canary"}),
		owned("api-7c9d-a", "api-7c9d", "7c9d", map[string]string{"app": "api"}),
	} {
		if err := pods.GetIndexer().Add(p); err != nil {
			t.Fatal(err)
		}
	}
	if got := w.SelectedWorkloads("shop", map[string]string{"app": "web"}); len(got) != 2 || got[0] != "Deployment/web" || got[1] != "Deployment/web-canary" {
		t.Errorf("app=web selects %v, want Deployment/web and Deployment/web-canary", got)
	}
	if got := w.SelectedWorkloads("other", map[string]string{"app": "web"}); len(got) != 0 {
		t.Errorf("another namespace's selector selects %v", got)
	}
}
