package main

import (
	"context"
	"log/slog"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/herald-k8s/herald/internal/kube"
	"github.com/herald-k8s/herald/internal/preflight"
	"github.com/herald-k8s/herald/internal/silence"
	"github.com/herald-k8s/herald/watcher"
)

// watchSilences makes the muter read objects from w and, when the Silence
// and ClusterSilence CRDs are served and herald may list and watch them,
// those resources too; and makes a silence-until annotation on an object
// of kinds (those the rules watch, and namespaces) say at once what it
// mutes. Without the resources herald runs on: herald.io/silence-until
// annotations still mute, and the log says why silences are off.
func watchSilences(ctx context.Context, client *kube.Client, w *watcher.Watcher, m *silence.Muter, kinds []string, logger *slog.Logger) error {
	for _, kind := range kinds {
		// A kind not served is reported where the rules' informers start.
		if inf, err := w.Informer(kind); err == nil {
			if err := m.ObserveAnnotations(inf); err != nil {
				return err
			}
		}
	}
	var informers []cache.SharedIndexInformer
	for _, res := range []struct {
		kind, what string
		gvr        schema.GroupVersionResource
	}{
		{silence.Kind, "Silence resources", silence.Resource},
		{silence.ClusterKind, "ClusterSilences (muting across namespaces)", silence.ClusterResource},
	} {
		inf, err := silenceInformer(ctx, client, w, res.kind, res.what, res.gvr, logger)
		if err != nil {
			return err
		}
		if inf != nil {
			informers = append(informers, inf)
		}
	}
	// Every silence is known before the first reconcile, or what they
	// mute would be announced at start.
	synced, err := m.Watch(w, informers...)
	if err != nil {
		return err
	}
	w.WaitAlsoFor(synced)
	return nil
}

// silenceInformer is the informer of one silence kind, or nil when herald
// may not list and watch it or its CRD is not served (logged, saying
// what to do); an error when the API server cannot say.
func silenceInformer(ctx context.Context, client *kube.Client, w *watcher.Watcher, kind, what string, gvr schema.GroupVersionResource, logger *slog.Logger) (cache.SharedIndexInformer, error) {
	res := gvr.Resource + "." + gvr.Group
	for _, verb := range []string{"list", "watch"} {
		ok, err := preflight.Access{Verb: verb, GVR: gvr}.Allowed(ctx, client, logger)
		if err != nil {
			return nil, err
		}
		if !ok {
			logger.Warn("herald may not " + verb + " " + res + " in all namespaces: " + what + " are off (the chart's ClusterRole grants it); herald.io/silence-until annotations still mute")
			return nil, nil
		}
	}
	inf, err := w.Informer(kind)
	if err != nil {
		logger.Warn(what+" are off: the CRD "+res+" is not served (the chart's crds/ installs it, and helm upgrade does not: kubectl apply -f charts/herald/crds/; restart herald after installing it); herald.io/silence-until annotations still mute", "error", err)
		return nil, nil
	}
	return inf, nil
}
