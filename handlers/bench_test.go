package handlers

import (
	"io"
	"log/slog"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/herald-k8s/herald/config"
	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/kube"
	"github.com/herald-k8s/herald/internal/rules"
	"github.com/herald-k8s/herald/watcher"
)

// BenchmarkEventHandler is what an informer's goroutine spends on one
// pod update: the scope filter and, in scope, the enqueue of its key
// (out of scope: nothing queued, nothing allocated).
func BenchmarkEventHandler(b *testing.B) {
	cfg, err := config.Parse("bench.yaml", []byte(`
rules:
  - {name: crash, kind: Pod, detector: crashloop, namespaces: {exclude: [kube-*]}, sinks: [s]}
sinks: [{name: s, stdout: {}}]
`))
	if err != nil {
		b.Fatal(err)
	}
	set, err := rules.Compile(cfg)
	if err != nil {
		b.Fatal(err)
	}
	// The informer is made, never started: nothing is requested.
	typed, err := kube.New(&rest.Config{Host: "https://127.0.0.1:1"})
	if err != nil {
		b.Fatal(err)
	}
	w := watcher.New(watcher.Clients{Builtin: typed}, 0, slog.New(slog.NewTextHandler(io.Discard, nil)))
	c, err := New(Options{Watcher: w, Rules: set, Incidents: incident.NewTracker(incident.Options{}),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	h := c.eventHandler("Pod")
	for _, ns := range []string{"shop", "kube-system"} {
		b.Run("namespace="+ns, func(b *testing.B) {
			old := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", ResourceVersion: "1"}}
			cur := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", ResourceVersion: "2"}}
			before := c.queue.Len()
			b.ReportAllocs()
			for b.Loop() {
				h.OnUpdate(old, cur)
			}
			if queued := c.queue.Len() - before; (ns == "shop") != (queued == 1) {
				b.Fatalf("%d keys queued for namespace %s", queued, ns)
			}
		})
	}
}
