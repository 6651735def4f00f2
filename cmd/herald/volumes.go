package main

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/herald-k8s/herald/config"
	"github.com/herald-k8s/herald/handlers"
	"github.com/herald-k8s/herald/internal/kube"
	"github.com/herald-k8s/herald/internal/preflight"
	"github.com/herald-k8s/herald/internal/rules"
	"github.com/herald-k8s/herald/internal/volumes"
	"github.com/herald-k8s/herald/watcher"
)

// volumePoller reads the kubelets' volume stats while this replica leads
// and a loaded rule (volume-filling) reads them; each new reading queues
// its claim.
func volumePoller(cfg *config.Config, client *kube.Client, w *watcher.Watcher, ctrl *handlers.Controller, store *volumes.Store, logger *slog.Logger, reg prometheus.Registerer) *volumes.Poller {
	return volumes.New(volumes.Options{
		Interval: cfg.VolumeStats.Interval, Concurrency: cfg.VolumeStats.Concurrency, Timeout: cfg.VolumeStats.Timeout,
		Window: func() time.Duration { return ctrl.Rules().VolumeWindow() },
		Ready:  w.Synced,
		Nodes: func() []string {
			nodes, _ := w.List("Node") // not watched: no rule reads volumes
			return readyNodes(nodes)
		},
		Fetch: client.NodeStatsSummary,
		Changed: func(namespace, name string) {
			ctrl.Enqueue(watcher.Key{Kind: "PersistentVolumeClaim", Namespace: namespace, Name: name})
		},
		Measuring: func() {
			keys, _ := w.Keys("PersistentVolumeClaim")
			ctrl.Enqueue(keys...)
		},
		Store: store, Logger: logger.With("component", "volume-stats"), Metrics: volumes.NewMetrics(reg),
	})
}

// readyNodes names the cached nodes whose kubelet is Ready: a NotReady
// one would hold one of the poller's places for its whole timeout.
func readyNodes(nodes []runtime.Object) []string {
	var names []string
	for _, o := range nodes {
		n, ok := o.(*corev1.Node)
		if !ok {
			continue
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				names = append(names, n.Name)
			}
		}
	}
	return names
}

// volumeAccess is the permission reading volume stats needs, when a rule
// reads them.
func volumeAccess(set *rules.Set) []preflight.Access {
	if set.VolumeWindow() == 0 {
		return nil
	}
	return []preflight.Access{{Verb: "get", GVR: schema.GroupVersionResource{Version: "v1", Resource: "nodes"}, Subresource: "proxy",
		Why: "volume-filling reads the kubelets' volume stats through the node proxy; the chart grants it with volumeStats.enabled=true"}}
}
