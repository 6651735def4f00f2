package rules

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Related reads, from herald's cache, the objects a detector needs beside
// the one it evaluates: a Service's endpoints live in its EndpointSlices.
type Related interface {
	// Endpoints counts a Service's ready and not-ready endpoints; known
	// is false when no EndpointSlice of it is cached.
	Endpoints(namespace, service string) (ready, notReady int, known bool)
	// SelectedWorkloads names the workloads ("Deployment/api") whose
	// cached pods a selector selects, at most a few.
	SelectedWorkloads(namespace string, selector map[string]string) []string
}

// AnnotationNoEndpointsExpected on a Service says it has no endpoints on
// purpose (a workload scaled to zero, a standby): no-endpoints leaves it
// out. herald's own annotations are cached without a rule naming them.
const AnnotationNoEndpointsExpected = "herald.io/no-endpoints-expected"

// maxSelectorSaid bounds the selector an alert repeats.
const maxSelectorSaid = 200

// detectNoEndpoints fires while a Service that selects pods has no ready
// endpoint: its traffic goes nowhere (connections refused, 503s from the
// ingress). Left out: Services without a selector (their endpoints are
// someone else's to manage), ExternalName Services, and those annotated
// herald.io/no-endpoints-expected: "true". The finding names the
// workloads its selector selects (facts "workloads"), which lets a pod
// incident of one of them explain it (the built-in inhibition): the
// alert that says why is the one people need.
func detectNoEndpoints(obj runtime.Object, p Params, _ time.Time) ([]Detection, error) {
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return nil, fmt.Errorf("no-endpoints detector got %T", obj)
	}
	if svc.DeletionTimestamp != nil || len(svc.Spec.Selector) == 0 || svc.Spec.Type == corev1.ServiceTypeExternalName ||
		svc.Annotations[AnnotationNoEndpointsExpected] == "true" || p.related == nil {
		return nil, nil
	}
	ready, notReady, known := p.related.Endpoints(svc.Namespace, svc.Name)
	if !known || ready > 0 {
		// No slice cached: the EndpointSlice controller makes one for
		// every Service with a selector, even empty; until it has, or
		// when herald cannot tell, nothing is said.
		return nil, nil
	}
	selector := selectorString(svc.Spec.Selector)
	facts := map[string]string{"selector": selector, "notReady": strconv.Itoa(notReady)}
	var detail string
	if notReady > 0 {
		detail = fmt.Sprintf("the Service has no ready endpoint: %s", plural(notReady, "1 pod not ready (failing its readiness probe, or shutting down)",
			strconv.Itoa(notReady)+" pods not ready (failing their readiness probes, or shutting down)"))
	} else {
		detail = fmt.Sprintf("the Service has no endpoint: no running pod matches its selector %s", selector)
	}
	workloads := p.related.SelectedWorkloads(svc.Namespace, svc.Spec.Selector)
	if len(workloads) > 0 {
		facts["workloads"] = strings.Join(workloads, ",")
		detail += "; it sends to " + strings.Join(workloads, ", ")
	}
	return []Detection{{Reason: "NoReadyEndpoints", Facts: facts, Detail: detail}}, nil
}

// selectorString is a selector as kubectl writes one: a=b,c=d, sorted.
func selectorString(sel map[string]string) string {
	keys := make([]string, 0, len(sel))
	for k := range sel {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + sel[k]
	}
	return truncate(strings.Join(parts, ","), maxSelectorSaid)
}
