package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/herald-k8s/herald/config"
	"github.com/herald-k8s/herald/internal/changes"
	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/kube"
	"github.com/herald-k8s/herald/internal/redact"
	"github.com/herald-k8s/herald/internal/rules"
	"github.com/herald-k8s/herald/watcher"
)

// testChanges is herald test's change record: made on the live listing's
// watcher, it knows each workload as that listing found it (the last spec
// write the managed fields name) and the ConfigMaps and Secrets by their
// creation, so it says what herald would say right after a start.
type testChanges struct {
	record *changes.Changes
	cfg    config.Changes
	owners map[string][2]string // pod namespace/name → workload kind, name
}

// newTestChanges registers the record on w before its informers are made;
// nil when context.changes is off.
func newTestChanges(ctx context.Context, cfg *config.Config, rc *rest.Config, w *watcher.Watcher) (*testChanges, error) {
	cc := cfg.Context.Changes
	if !cc.On() {
		return nil, nil
	}
	var meta metadata.Interface
	var objectKinds []string
	if *cc.ConfigObjects {
		typed, err := kube.New(rc)
		if err != nil {
			return nil, err
		}
		// As herald run does: only what this identity may watch.
		if objectKinds, err = changes.WatchableObjects(ctx, typed, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
			return nil, err
		}
		if len(objectKinds) > 0 {
			if meta, err = metadata.NewForConfig(rc); err != nil {
				return nil, err
			}
		}
	}
	redactor, err := redact.New(cfg.Context.Redact)
	if err != nil {
		return nil, err
	}
	record, err := changes.New(w, meta, cc.Kinds, changes.Options{Redact: redactor.Redact, ObjectKinds: objectKinds}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return nil, err
	}
	if err := record.Watch(w); err != nil {
		return nil, err
	}
	record.Start(ctx)
	w.WaitAlsoFor(record.Synced)
	return &testChanges{record: record, cfg: cc, owners: map[string][2]string{}}, nil
}

// learn notes the owners of the listed pods.
func (t *testChanges) learn(objs []runtime.Object) {
	for _, o := range objs {
		if p, ok := o.(metav1.Object); ok && o.GetObjectKind().GroupVersionKind().Kind == "Pod" {
			kind, name := watcher.Workload(p)
			t.owners[p.GetNamespace()+"/"+p.GetName()] = [2]string{kind, name}
		}
	}
}

// section is what a firing of f at now would say changed.
func (t *testChanges) section(f rules.Finding, now time.Time) *incident.Changes {
	if t == nil {
		return nil
	}
	stage := changes.NewStage(changes.StageOptions{Record: t.record, Window: t.cfg.Window, Kinds: t.cfg.Kinds,
		PodWorkload: func(namespace, pod string) (string, string, bool) {
			o, ok := t.owners[namespace+"/"+pod]
			return o[0], o[1], ok
		}})
	obj := f.Object
	if f.GroupByWorkload && f.Group != nil {
		obj = *f.Group
	}
	// The window ends where the problem began, when the object says
	// (a condition's time); else now.
	began := now
	if !f.Since.IsZero() && f.Since.Before(now) {
		began = f.Since
	}
	return stage.Section(incident.Notification{Transition: incident.Firing, Time: now,
		Incident: incident.Incident{ID: "test", Object: obj, FirstSeen: began}})
}

func printChanges(out io.Writer, c *incident.Changes) {
	if c == nil {
		return
	}
	fmt.Fprintf(out, "  what changed (%s; as herald says it right after a start, seeing what this identity may see: the running herald may know more):\n", c.Workload)
	for _, l := range c.Lines {
		fmt.Fprintf(out, "    %s\n", l)
	}
	if c.Undo != "" {
		fmt.Fprintf(out, "    undo: %s\n", c.Undo)
	}
}
