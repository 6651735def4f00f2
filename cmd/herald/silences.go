package main

import (
	"context"
	"log/slog"

	"github.com/herald-k8s/herald/internal/kube"
	"github.com/herald-k8s/herald/internal/silence"
	"github.com/herald-k8s/herald/watcher"
)

// watchSilences makes the muter read objects from w and, when the Silence
// CRD is served and herald may list and watch it, Silence resources too.
// Without them herald runs on: herald.io/silence-until annotations still
// mute, and the log says why silences are off.
func watchSilences(ctx context.Context, client *kube.Client, w *watcher.Watcher, m *silence.Muter, logger *slog.Logger) error {
	for _, verb := range []string{"list", "watch"} {
		ok, err := access{verb: verb, gvr: silence.Resource}.allowed(ctx, client, logger)
		if err != nil {
			return err
		}
		if !ok {
			logger.Warn("herald may not " + verb + " silences.herald.io in all namespaces: Silence resources are off (the chart's ClusterRole grants it); herald.io/silence-until annotations still mute")
			_, err := m.Watch(w, nil)
			return err
		}
	}
	inf, err := w.Informer(silence.Kind)
	if err != nil {
		logger.Warn("Silence resources are off: the CRD silences.herald.io is not served (the chart's crds/ installs it; restart herald after installing it); herald.io/silence-until annotations still mute", "error", err)
		_, err := m.Watch(w, nil)
		return err
	}
	// Every silence is known before the first reconcile, or what they
	// mute would be announced at start.
	synced, err := m.Watch(w, inf)
	if err != nil {
		return err
	}
	w.WaitAlsoFor(synced)
	return nil
}
