package main

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/herald-k8s/herald/config"
	"github.com/herald-k8s/herald/handlers"
	"github.com/herald-k8s/herald/internal/changes"
	"github.com/herald-k8s/herald/internal/kube"
	"github.com/herald-k8s/herald/internal/preflight"
	"github.com/herald-k8s/herald/internal/redact"
	"github.com/herald-k8s/herald/watcher"
)

// changeRecord is the "What changed" section's wiring: the record, made
// before any informer (it sees workloads before the cache strips them),
// then hooked to the watcher and put in front of the crash context stage.
type changeRecord struct {
	record *changes.Changes
	cfg    config.Changes
	reg    prometheus.Registerer
}

// newChangeRecord makes the record when context.changes is on, leaving
// out what herald may not watch (each with a warning that says what to
// grant); nil when it is off. Call it before anything makes an informer.
func newChangeRecord(ctx context.Context, cfg *config.Config, restCfg *rest.Config, w *watcher.Watcher,
	logger *slog.Logger, reg prometheus.Registerer) (*changeRecord, error) {
	cc := cfg.Context.Changes
	if !cc.On() {
		return nil, nil
	}
	// The permission checks below are a dozen requests at start: on the
	// shared client, past its burst, client-go's rate limit (5/s) made
	// them cost herald's start 2.4 s. Their own client has none; there
	// are only so many.
	checks := rest.CopyConfig(restCfg)
	checks.QPS, checks.Burst = -1, 0
	typed, err := kube.New(checks)
	if err != nil {
		return nil, err
	}
	var kinds []string
	for _, kind := range cc.Kinds {
		gvr, _ := watcher.Resource(kind)
		ok, err := allowedAll(ctx, typed, gvr, logger)
		if err != nil {
			return nil, err
		}
		if !ok {
			logger.Warn("what changed: herald may not list and watch "+gvr.Resource+" in all namespaces; their rollouts are not recorded (grant it, or leave "+kind+" out of context.changes.kinds)", "kind", kind)
			continue
		}
		kinds = append(kinds, kind)
	}
	if len(kinds) == 0 {
		return nil, nil
	}
	var meta metadata.Interface
	var objectKinds []string
	if *cc.ConfigObjects {
		if objectKinds, err = watchableObjects(ctx, typed, logger); err != nil {
			return nil, err
		}
	}
	if len(objectKinds) > 0 {
		// Metadata only (PartialObjectMetadata): a ConfigMap's or
		// Secret's data does not cross the wire (changes/objects.go).
		own := rest.CopyConfig(restCfg)
		own.Wrap(func(rt http.RoundTripper) http.RoundTripper { return patientWatches{next: rt, every: time.Second} })
		var err error
		if meta, err = metadata.NewForConfig(own); err != nil {
			return nil, err
		}
	}
	redactor, err := redact.New(cfg.Context.Redact)
	if err != nil {
		return nil, err // validated when the config loaded
	}
	record, err := changes.New(w, meta, kinds, changes.Options{Redact: redactor.Redact, ObjectKinds: objectKinds}, logger)
	if err != nil {
		return nil, err
	}
	return &changeRecord{record: record, cfg: cc, reg: reg}, nil
}

// watchableObjects are those of ConfigMap and Secret whose metadata
// herald may list and watch in all namespaces; each it may not is logged
// with the grant that would allow it. herald run and herald test ask the
// same.
func watchableObjects(ctx context.Context, typed *kube.Client, logger *slog.Logger) ([]string, error) {
	var kinds []string
	for _, o := range []struct{ kind, res, grant string }{
		{"ConfigMap", "configmaps", "grant it (the chart does), or set context.changes.configObjects: false"},
		{"Secret", "secrets", "the chart grants it with allowSecretsAccess=true: RBAC cannot grant metadata alone, and herald never asks for more"},
	} {
		ok, err := allowedAll(ctx, typed, schema.GroupVersionResource{Version: "v1", Resource: o.res}, logger)
		if err != nil {
			return nil, err
		}
		if !ok {
			// Secrets are off by the chart's default (RBAC could read
			// their data): that is said, not warned of at every start.
			level := slog.LevelWarn
			if o.kind == "Secret" {
				level = slog.LevelInfo
			}
			logger.Log(ctx, level, "what changed: herald may not list and watch "+o.res+" in all namespaces; alerts do not say when the "+o.kind+"s a workload reads changed ("+o.grant+")", "resource", o.res)
			continue
		}
		kinds = append(kinds, o.kind)
	}
	return kinds, nil
}

// allowedAll asks whether herald may list and watch gvr in all namespaces.
func allowedAll(ctx context.Context, typed *kube.Client, gvr schema.GroupVersionResource, logger *slog.Logger) (bool, error) {
	for _, verb := range []string{"list", "watch"} {
		ok, err := preflight.Access{Verb: verb, GVR: gvr}.Allowed(ctx, typed, logger)
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

// stage returns the dispatcher that adds the section in front of next
// (next itself when the record is off).
func (r *changeRecord) stage(w *watcher.Watcher, next handlers.Dispatcher) handlers.Dispatcher {
	if r == nil {
		return next
	}
	return changes.NewStage(changes.StageOptions{
		Record: r.record, Next: next, Window: r.cfg.Window, Kinds: r.cfg.Kinds,
		PodWorkload: func(namespace, pod string) (string, string, bool) { return podWorkload(w, namespace, pod) },
		Metrics:     changes.NewMetrics(r.reg, r.record),
	})
}

// watch hooks the record to w's informers, after the controller has said
// what the cache keeps and before w starts, and starts the ConfigMap and
// Secret metadata watches (every replica: a new leader knows what
// changed before it led).
func (r *changeRecord) watch(ctx context.Context, w *watcher.Watcher) error {
	if r == nil {
		return nil
	}
	if err := r.record.Watch(w); err != nil {
		return err
	}
	w.WaitAlsoFor(r.record.Synced)
	r.record.Start(ctx)
	return nil
}

// podWorkload names the workload that owns a cached pod.
func podWorkload(w *watcher.Watcher, namespace, pod string) (kind, name string, ok bool) {
	m, found, err := w.Meta(watcher.Key{Kind: "Pod", Namespace: namespace, Name: pod})
	if err != nil || !found {
		return "", "", false
	}
	kind, name = watcher.Workload(m)
	return kind, name, true
}
