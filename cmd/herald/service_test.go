package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// serviceWithSlice makes a Service selecting app=name and the
// EndpointSlice the EndpointSlice controller would keep for it (none
// runs here), with one endpoint per pod given, ready or not.
func serviceWithSlice(t *testing.T, client kubernetes.Interface, name string, ready bool, pods ...string) *discoveryv1.EndpointSlice {
	t.Helper()
	ctx := context.Background()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: corev1.ServiceSpec{
		Selector: map[string]string{"app": name}, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
	if _, err := client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name + "-x7k2p", Namespace: "default", Labels: map[string]string{discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	for i, pod := range pods {
		slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("10.244.1.%d", 10+i)},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready), Serving: ptr.To(ready), Terminating: ptr.To(false)},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: pod}})
	}
	slice, err := client.DiscoveryV1().EndpointSlices("default").Create(ctx, slice, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return slice
}

// TestServiceWithoutEndpoints: a Service whose only pod is not ready is
// notified after its rule's for: with the count — only a change of its
// EndpointSlice, never of the Service, says so — and resolved when the pod
// is ready again. A Service whose Deployment's pods crash-loop says
// nothing: the crash loop's alert explains it (the built-in inhibition).
func TestServiceWithoutEndpoints(t *testing.T) {
	beside(t)
	env := controlPlanes.Get(t)
	client, _ := env.Client()
	recv := newReceiver(t)
	h := startedHerald(t, env, fmt.Sprintf(`
incidents: {resolveHoldDown: 0s}
rules:
  - {name: service-no-endpoints, kind: Service, detector: no-endpoints, for: 2s, sinks: [hook]}
  - {name: pod-crashloop, kind: Pod, detector: crashloop, groupBy: workload, sinks: [hook]}
sinks:
  - {name: hook, webhook: {url: %s/herald}}
`, recv.URL))
	defer h.stop()
	ctx := context.Background()

	// web: a Deployment's pod crash-looping, so the Service is empty.
	pod := newPod("web-5d8f7c-x2k4")
	pod.Labels = map[string]string{"app": "web", "pod-template-hash": "5d8f7c"}
	pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-5d8f7c", UID: "rs-1", Controller: ptr.To(true)}}
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	setStatus(t, client, pod.Name, crashLooping, 3)
	if p := recv.next(t, 10*time.Second); p.Transition != "firing" || p.Incident.Reason != "CrashLoopBackOff" || p.Object.Name != "web" {
		t.Fatalf("first %s %s for %s, want the crash loop of Deployment web", p.Incident.Reason, p.Transition, p.Object.Name)
	}
	serviceWithSlice(t, client, "web", false, pod.Name)

	// api: its one pod not ready.
	created := time.Now()
	apiSlice := serviceWithSlice(t, client, "api", false, "api-6c9d-q8r2")
	p := recv.next(t, 15*time.Second)
	if p.Transition != "firing" || p.Incident.Reason != "NoReadyEndpoints" || p.Object.Kind != "Service" || p.Object.Name != "api" || !strings.Contains(p.Text, "1 pod not ready") {
		t.Fatalf("then %s %s for %s %s (%s), want NoReadyEndpoints for Service api", p.Incident.Reason, p.Transition, p.Object.Kind, p.Object.Name, p.Text)
	}
	if waited := time.Since(created); waited < 2*time.Second {
		t.Errorf("notified %s after the Service was made, before its for: of 2 s", waited)
	}
	apiSlice.Endpoints[0].Conditions.Ready = ptr.To(true)
	if _, err := client.DiscoveryV1().EndpointSlices("default").Update(ctx, apiSlice, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if r := recv.next(t, 10*time.Second); r.Transition != "resolved" || r.Incident.ID != p.Incident.ID {
		t.Fatalf("then %s for %s, want the resolution of %s", r.Transition, r.Incident.ID, p.Incident.ID)
	}
	// Nothing for web, whose for: has long passed: the next is the
	// sentinel's.
	expectSentinel(t, client, recv, "sentinel")
}
