package main

import (
	"context"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/herald-k8s/herald/config"
	"github.com/herald-k8s/herald/handlers"
	"github.com/herald-k8s/herald/internal/enrich"
	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/kube"
	"github.com/herald-k8s/herald/internal/preflight"
	"github.com/herald-k8s/herald/internal/redact"
	"github.com/herald-k8s/herald/watcher"
)

// withContext puts the crash-context stage in front of next when the
// configuration asks for it, and returns the dispatcher the reconcile loop
// uses and the stage's workers to run. Its permissions are optional: one
// that is missing turns that part off with a warning naming it.
func withContext(ctx context.Context, cfg *config.Config, restCfg *rest.Config, w *watcher.Watcher, next handlers.Dispatcher,
	logger *slog.Logger, reg prometheus.Registerer) (handlers.Dispatcher, func(context.Context), error) {
	if !*cfg.Context.Enabled {
		return next, func(context.Context) {}, nil
	}
	// Its own client: client-go's client-side rate limit (5/s by default)
	// would make context requests queue behind ledger writes and lease
	// renewals, and those behind them. The stage's own budget
	// (context.rate) bounds what it asks of the API server.
	own := rest.CopyConfig(restCfg)
	own.QPS, own.Burst = -1, 0
	client, err := kube.New(own)
	if err != nil {
		return nil, nil, err
	}
	logs, logsUnavailable := *cfg.Context.Logs.Enabled, ""
	for _, a := range []struct {
		preflight.Access
		what string
	}{
		{preflight.Access{Verb: "get", GVR: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Subresource: "log"}, "get pods/log"},
		{preflight.Access{Verb: "list", GVR: schema.GroupVersionResource{Version: "v1", Resource: "events"}}, "list events"},
	} {
		ok, err := a.Allowed(ctx, client, logger)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			continue
		}
		logger.Warn("crash context: herald may not "+a.what+" in all namespaces; alerts go out without it (grant it, or set context.enabled: false)", "permission", a.what)
		if a.what == "get pods/log" {
			logs, logsUnavailable = false, "not permitted (herald's RBAC lacks get pods/log)"
		}
	}
	redactor, err := redact.New(cfg.Context.Redact)
	if err != nil {
		return nil, nil, err // validated when the config loaded
	}
	e := enrich.New(enrich.Options{
		Next: next, Source: enrich.KubeSource{Client: client},
		PodNode: w.PodNodeName,
		Node:    func(name string) *incident.Node { return cachedNode(w, name) },
		Lines:   cfg.Context.Logs.Lines, MaxBytes: cfg.Context.Logs.MaxBytes, Events: cfg.Context.Events.Max,
		Wait: cfg.Context.Wait, Workers: cfg.Context.Workers, Rate: cfg.Context.Rate, Logs: logs, LogsUnavailable: logsUnavailable,
		Redactor: redactor, Logger: logger, Metrics: enrich.NewMetrics(reg),
	})
	return e, e.Run, nil
}

// cachedNode says what is wrong with a node, when herald caches nodes (a
// rule watches them); nil otherwise.
func cachedNode(w *watcher.Watcher, name string) *incident.Node {
	obj, ok, err := w.Get(watcher.Key{Kind: "Node", Name: name})
	if err != nil || !ok {
		return nil
	}
	node, isNode := obj.(*corev1.Node)
	if !isNode {
		return nil
	}
	n := &incident.Node{Name: name}
	for _, c := range node.Status.Conditions {
		switch {
		case c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue:
			n.Conditions = append(n.Conditions, "NotReady")
		case c.Type != corev1.NodeReady && c.Status == corev1.ConditionTrue:
			n.Conditions = append(n.Conditions, string(c.Type))
		}
	}
	return n
}
