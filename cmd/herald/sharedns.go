package main

import (
	"context"
	"log/slog"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// sharedNamespaceSample is how many pods of herald's namespace are looked
// at: enough to see another workload, cheap at start.
const sharedNamespaceSample = 20

// warnSharedNamespace says at start when herald's own namespace is shared
// with others: it is "default", or pods of another workload (not of
// herald's release: self is herald's own pod, POD_NAME) run there.
// Whoever may edit that namespace can read and rewrite herald's ledger
// (what was sent, to whom), take its leader Lease and read the Secrets
// its sinks use; it should be herald's alone. Only a warning: the check
// is a sample, and a namespace may be shared on purpose.
func warnSharedNamespace(ctx context.Context, dyn dynamic.Interface, namespace, self string, logger *slog.Logger) {
	const why = "; whoever may edit it can read and rewrite herald's ledger, take its leader Lease and read its sinks' Secrets: give herald a namespace of its own"
	if namespace == "default" {
		logger.Warn("herald runs in namespace default, which is usually shared"+why, "namespace", namespace)
		return
	}
	pods := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}).Namespace(namespace)
	// herald's own pods carry its release's labels (the chart's); out of
	// a cluster, without POD_NAME, its name label.
	want := map[string]string{"app.kubernetes.io/name": "herald"}
	if self != "" {
		if p, err := pods.Get(ctx, self, metav1.GetOptions{}); err == nil {
			want = map[string]string{}
			for _, k := range []string{"app.kubernetes.io/name", "app.kubernetes.io/instance"} {
				want[k] = p.GetLabels()[k]
			}
		}
	}
	list, err := pods.List(ctx, metav1.ListOptions{Limit: sharedNamespaceSample})
	if err != nil {
		logger.Info("could not check whether herald's namespace is shared with other workloads (the chart's Role lets herald list its pods)",
			"namespace", namespace, "error", err)
		return
	}
	var others []string
	for _, p := range list.Items {
		labels := p.GetLabels()
		for k, v := range want {
			if labels[k] != v {
				others = append(others, p.GetName())
				break
			}
		}
	}
	if len(others) > 0 {
		if len(others) > 5 {
			others = append(others[:5], "...")
		}
		logger.Warn("herald's namespace "+namespace+" also runs other workloads"+why,
			"namespace", namespace, "pods", strings.Join(others, ", "))
	}
}
