package silence

import (
	"fmt"
	"io"
	"iter"
	"log/slog"
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/watcher"
)

// podsOnNodes is a cache of pods, each on a node.
type podsOnNodes map[watcher.Key]*corev1.Pod

func (p podsOnNodes) Meta(key watcher.Key) (metav1.Object, bool, error) {
	pod, ok := p[key]
	if !ok {
		return nil, false, nil
	}
	return pod, true, nil
}

func (p podsOnNodes) PodNodeName(namespace, name string) string {
	if pod, ok := p[watcher.Key{Kind: "Pod", Namespace: namespace, Name: name}]; ok {
		return pod.Spec.NodeName
	}
	return ""
}

func (podsOnNodes) NamespaceAnnotation(string, string) string { return "" }

// openSet is a set of open incidents indexed by reason, as the
// tracker's; scan answers WithReason the way inhibition looked sources up
// before that index: every open incident (each then checked).
type openSet struct {
	all      map[string]*incident.Incident
	byReason map[string]map[string]*incident.Incident
	scan     bool
}

func (o openSet) All() iter.Seq[*incident.Incident] { return maps.Values(o.all) }

func (o openSet) WithReason(reason string) iter.Seq[*incident.Incident] {
	if o.scan {
		return o.All()
	}
	return maps.Values(o.byReason[reason])
}

// BenchmarkInhibited: is a new crash loop muted by the built-in
// inhibitions, with 2,000 crash loops open (a storm) and one node down?
// "scan" looks at every open incident for each inhibition's source, as
// before the index; "index" looks at those with the source's reason.
func BenchmarkInhibited(b *testing.B) {
	pods := podsOnNodes{}
	open := map[string]*incident.Incident{}
	for i := range 2000 {
		name := fmt.Sprintf("api-%d", i)
		pods[watcher.Key{Kind: "Pod", Namespace: "shop", Name: name}] = &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop"},
			Spec:       corev1.PodSpec{NodeName: fmt.Sprintf("node-%d", i%50)},
		}
		inc := &incident.Incident{ID: fmt.Sprint(i), Fingerprint: fmt.Sprint(i), Rule: "pod-crashloop", Reason: "CrashLoopBackOff", Severity: "critical"}
		inc.Object.Kind, inc.Object.Namespace, inc.Object.Name = "Pod", "shop", name
		open[inc.ID] = inc
	}
	down := &incident.Incident{ID: "node", Fingerprint: "node", Rule: "node-not-ready", Reason: "NodeNotReady"}
	down.Object.Kind, down.Object.Name = "Node", "node-7"
	open[down.ID] = down
	target := &incident.Incident{ID: "new", Rule: "pod-crashloop", Reason: "CrashLoopBackOff"}
	target.Object.Kind, target.Object.Namespace, target.Object.Name = "Pod", "shop", "api-1"
	described, _ := describe(target, pods)
	m := NewMuter("herald", slog.New(slog.NewTextHandler(io.Discard, nil)))
	for _, variant := range []struct {
		name string
		scan bool
	}{{"scan", true}, {"index", false}} {
		b.Run(variant.name, func(b *testing.B) {
			b.ReportAllocs()
			set := openSet{all: open, byReason: map[string]map[string]*incident.Incident{}, scan: variant.scan}
			for id, inc := range open {
				if set.byReason[inc.Reason] == nil {
					set.byReason[inc.Reason] = map[string]*incident.Incident{}
				}
				set.byReason[inc.Reason][id] = inc
			}
			for b.Loop() {
				if _, muted := m.inhibited(BuiltinInhibitions(), target, described, set, pods, MaxDuration, time.Now()); muted {
					b.Fatal("muted: api-1 is on node-1, which is up")
				}
			}
		})
	}
}
