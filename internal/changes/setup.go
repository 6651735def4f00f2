package changes

import (
	"context"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"

	"github.com/herald-k8s/herald/config"
	"github.com/herald-k8s/herald/internal/kube"
	"github.com/herald-k8s/herald/internal/preflight"
	"github.com/herald-k8s/herald/watcher"
)

// Wiring is the "What changed" section as herald run sets it up: the
// record, made before any informer (it sees workloads before the cache
// strips them), then hooked to the watcher (Watch) and put in front of
// the crash context stage (Stage). A nil Wiring (context.changes off)
// does nothing.
type Wiring struct {
	record *Changes
	cfg    config.Changes
	w      *watcher.Watcher
	reg    prometheus.Registerer
}

// WiringOptions are what Setup needs.
type WiringOptions struct {
	Config config.Changes
	// Redact is applied to every text the record keeps.
	Redact func(string) string
	// Checks asks the permission checks: its own client, without
	// client-go's rate limit (a dozen requests at start cost herald's
	// start 2.4 s on the shared one).
	Checks *kube.Client
	// Metadata makes the ConfigMap and Secret metadata client; called
	// only when herald may watch either.
	Metadata func() (metadata.Interface, error)
	Watcher  *watcher.Watcher
	Logger   *slog.Logger
	Reg      prometheus.Registerer
}

// Setup makes the record when context.changes is on, leaving out what
// herald may not watch (each with a warning that says what to grant); nil
// when it is off or nothing is left. Call it before anything makes an
// informer.
func Setup(ctx context.Context, o WiringOptions) (*Wiring, error) {
	cc := o.Config
	if !cc.On() {
		return nil, nil
	}
	var kinds []string
	for _, kind := range cc.Kinds {
		gvr, _ := watcher.Resource(kind)
		ok, err := allowedAll(ctx, o.Checks, gvr, o.Logger)
		if err != nil {
			return nil, err
		}
		if !ok {
			o.Logger.Warn("what changed: herald may not list and watch "+gvr.Resource+" in all namespaces; their rollouts are not recorded (grant it, or leave "+kind+" out of context.changes.kinds)", "kind", kind)
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
		var err error
		if objectKinds, err = WatchableObjects(ctx, o.Checks, o.Logger); err != nil {
			return nil, err
		}
	}
	if len(objectKinds) > 0 {
		// Metadata only (PartialObjectMetadata): a ConfigMap's or
		// Secret's data does not cross the wire (objects.go).
		var err error
		if meta, err = o.Metadata(); err != nil {
			return nil, err
		}
	}
	record, err := New(o.Watcher, meta, kinds, Options{Redact: o.Redact, ObjectKinds: objectKinds}, o.Logger)
	if err != nil {
		return nil, err
	}
	return &Wiring{record: record, cfg: cc, w: o.Watcher, reg: o.Reg}, nil
}

// WatchableObjects are those of ConfigMap and Secret whose metadata
// herald may list and watch in all namespaces; each it may not is logged
// with the grant that would allow it. herald run and herald test ask the
// same.
func WatchableObjects(ctx context.Context, typed *kube.Client, logger *slog.Logger) ([]string, error) {
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

// Stage returns the dispatcher that adds the section in front of next
// (next itself when the record is off).
func (r *Wiring) Stage(next Dispatcher) Dispatcher {
	if r == nil {
		return next
	}
	return NewStage(StageOptions{
		Record: r.record, Next: next, Window: r.cfg.Window, Kinds: r.cfg.Kinds,
		PodWorkload: r.podWorkload,
		Metrics:     NewMetrics(r.reg, r.record),
	})
}

// Watch hooks the record to the watcher's informers, after the
// controller has said what the cache keeps and before the watcher
// starts, and starts the ConfigMap and Secret metadata watches (every
// replica: a new leader knows what changed before it led).
func (r *Wiring) Watch(ctx context.Context) error {
	if r == nil {
		return nil
	}
	if err := r.record.Watch(r.w); err != nil {
		return err
	}
	r.w.WaitAlsoFor(r.record.Synced)
	r.record.Start(ctx)
	return nil
}

// podWorkload names the workload that owns a cached pod.
func (r *Wiring) podWorkload(namespace, pod string) (kind, name string, ok bool) {
	m, found, err := r.w.Meta(watcher.Key{Kind: "Pod", Namespace: namespace, Name: pod})
	if err != nil || !found {
		return "", "", false
	}
	kind, name = watcher.Workload(m)
	return kind, name, true
}
