package main

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/herald-k8s/herald/config"
	"github.com/herald-k8s/herald/internal/changes"
	"github.com/herald-k8s/herald/internal/kube"
	"github.com/herald-k8s/herald/internal/redact"
	"github.com/herald-k8s/herald/watcher"
)

// newChangeRecord wires the "What changed" section (changes.Setup) with
// herald run's clients; nil when context.changes is off.
func newChangeRecord(ctx context.Context, cfg *config.Config, restCfg *rest.Config, w *watcher.Watcher,
	logger *slog.Logger, reg prometheus.Registerer) (*changes.Wiring, error) {
	if !cfg.Context.Changes.On() {
		return nil, nil
	}
	checks := rest.CopyConfig(restCfg)
	checks.QPS, checks.Burst = -1, 0 // a dozen requests at start; changes.WiringOptions says why
	typed, err := kube.New(checks)
	if err != nil {
		return nil, err
	}
	redactor, err := redact.New(cfg.Context.Redact)
	if err != nil {
		return nil, err // validated when the config loaded
	}
	return changes.Setup(ctx, changes.WiringOptions{
		Config: cfg.Context.Changes, Redact: redactor.Redact, Checks: typed, Watcher: w, Logger: logger, Reg: reg,
		Metadata: func() (metadata.Interface, error) {
			own := rest.CopyConfig(restCfg)
			own.Wrap(func(rt http.RoundTripper) http.RoundTripper { return patientWatches{next: rt, every: time.Second} })
			return metadata.NewForConfig(own)
		},
	})
}
