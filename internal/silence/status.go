package silence

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// Status is what herald reports on a Silence or ClusterSilence: where it
// is in its life and how many open incidents it mutes.
type Status struct {
	State          string `json:"state,omitempty"`
	MutedIncidents int    `json:"mutedIncidents"`
}

// StatusWriter keeps every Silence's and ClusterSilence's status
// current, so that `kubectl get silences,clustersilences` shows which
// are active and what they hold back. Only the leader runs it.
type StatusWriter struct {
	Muter  *Muter
	Client dynamic.Interface
	// Muted counts the open muted incidents by what mutes them
	// (incident.Tracker.MutedBy).
	Muted  func() map[string]int
	Every  time.Duration
	Logger *slog.Logger
}

// Run writes statuses that changed every w.Every until ctx ends.
func (w StatusWriter) Run(ctx context.Context) {
	tick := time.NewTicker(w.Every)
	defer tick.Stop()
	for {
		w.write(ctx, time.Now())
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (w StatusWriter) write(ctx context.Context, now time.Time) {
	muted := w.Muted()
	for _, s := range w.Muter.Silences() {
		want := Status{State: s.State(now), MutedIncidents: muted[s.Ref()]}
		if want == s.Status {
			continue
		}
		patch, _ := json.Marshal(map[string]any{"status": want})
		res := w.Client.Resource(Resource).Namespace(s.Namespace)
		if s.Cluster {
			res = w.Client.Resource(ClusterResource)
		}
		_, err := res.Patch(ctx, s.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
		if err != nil && ctx.Err() == nil {
			// The next tick tries again; a silence deleted meanwhile is
			// simply gone.
			w.Logger.Warn("could not write a silence's status", "silence", s.Ref(), "error", err)
		}
	}
}
