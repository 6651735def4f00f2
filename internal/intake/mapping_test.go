package intake

import (
	"testing"

	"github.com/herald-k8s/herald/config"
	"github.com/herald-k8s/herald/internal/rules"
	"github.com/herald-k8s/herald/watcher"
)

// TestMapObject: kube-state-metrics' labels name the object, the most
// specific first; a configured mapping wins for its alert; a value that
// is no Kubernetes name maps to nothing but keeps a valid namespace.
func TestMapObject(t *testing.T) {
	custom := []config.AlertObject{{Alertname: "QueueBacklog", Kind: "Deployment", NameLabel: "app", NamespaceLabel: "namespace"}}
	tests := []struct {
		name   string
		labels map[string]string
		want   target
	}{
		{"pod with container and node", map[string]string{"alertname": "KubePodCrashLooping", "namespace": "shop", "pod": "web-1", "container": "app", "node": "n1"},
			target{rules.ObjectRef{Kind: "Pod", Namespace: "shop", Name: "web-1"}, "app", true}},
		{"deployment", map[string]string{"alertname": "KubeDeploymentReplicasMismatch", "namespace": "shop", "deployment": "web"},
			target{rules.ObjectRef{Kind: "Deployment", Namespace: "shop", Name: "web"}, "", true}},
		{"job", map[string]string{"alertname": "KubeJobFailed", "namespace": "batch", "job_name": "nightly-1"},
			target{rules.ObjectRef{Kind: "Job", Namespace: "batch", Name: "nightly-1"}, "", true}},
		{"pvc", map[string]string{"alertname": "KubePersistentVolumeFillingUp", "namespace": "db", "persistentvolumeclaim": "data-pg-0"},
			target{rules.ObjectRef{Kind: "PersistentVolumeClaim", Namespace: "db", Name: "data-pg-0"}, "", true}},
		{"node is cluster-wide", map[string]string{"alertname": "KubeNodeNotReady", "node": "n1", "namespace": "monitoring"},
			target{rules.ObjectRef{Kind: "Node", Name: "n1"}, "", true}},
		{"configured mapping", map[string]string{"alertname": "QueueBacklog", "namespace": "shop", "app": "worker", "pod": "worker-1"},
			target{rules.ObjectRef{Kind: "Deployment", Namespace: "shop", Name: "worker"}, "", true}},
		{"nothing named", map[string]string{"alertname": "Watchdog", "namespace": "monitoring"},
			target{rules.ObjectRef{Namespace: "monitoring"}, "", false}},
		{"a name that is no name", map[string]string{"alertname": "KubePodCrashLooping", "namespace": "shop", "pod": "<!channel>"},
			target{rules.ObjectRef{Namespace: "shop"}, "", false}},
		{"a namespace that is no name", map[string]string{"alertname": "KubePodCrashLooping", "namespace": "Shop/../x", "pod": "web-1"},
			target{}},
		{"a pod without a namespace", map[string]string{"alertname": "X", "pod": "web-1"},
			target{}},
		// As kube-prometheus-stack's alerts arrive: with the labels of
		// the kube-state-metrics pod they were scraped from.
		{"deployment alert with the exporter's pod", map[string]string{"alertname": "KubeDeploymentReplicasMismatch", "namespace": "shop", "deployment": "web",
			"pod": "kps-kube-state-metrics-6d5f9c7b8-x2x9z", "container": "kube-state-metrics", "job": "kube-state-metrics", "instance": "10.0.0.7:8080"},
			target{rules.ObjectRef{Kind: "Deployment", Namespace: "shop", Name: "web"}, "", true}},
		{"node alert with the exporter's pod", map[string]string{"alertname": "KubeNodeNotReady", "namespace": "monitoring", "node": "n1",
			"pod": "kps-kube-state-metrics-6d5f9c7b8-x2x9z", "container": "kube-state-metrics", "job": "kube-state-metrics"},
			target{rules.ObjectRef{Kind: "Node", Name: "n1"}, "", true}},
		{"pod alert from kube-state-metrics", map[string]string{"alertname": "KubePodCrashLooping", "namespace": "shop", "pod": "web-1",
			"container": "app", "job": "kube-state-metrics", "uid": "1d2c"},
			target{rules.ObjectRef{Kind: "Pod", Namespace: "shop", Name: "web-1"}, "app", true}},
		{"node-exporter alert", map[string]string{"alertname": "NodeFilesystemSpaceFillingUp", "namespace": "monitoring",
			"pod": "kps-prometheus-node-exporter-abcde", "container": "node-exporter", "job": "node-exporter", "instance": "n1"},
			target{rules.ObjectRef{Namespace: "monitoring"}, "", false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mapObject(tt.labels, custom); got != tt.want {
				t.Errorf("mapObject = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestKeys: an alert about an object of a watched kind joins that
// object's reconcile; any other gets a key of its own.
func TestKeys(t *testing.T) {
	watched := func(kind string) bool { return kind == "Pod" }
	pod := target{rules.ObjectRef{Kind: "Pod", Namespace: "shop", Name: "web-1"}, "app", true}
	if got := pod.key("0123456789abcdef", watched); got != (watcher.Key{Kind: "Pod", Namespace: "shop", Name: "web-1"}) {
		t.Errorf("pod's key = %v", got)
	}
	pvc := target{rules.ObjectRef{Kind: "PersistentVolumeClaim", Namespace: "db", Name: "data"}, "", true}
	if got := pvc.key("0123456789abcdef", watched); got != (watcher.Key{Kind: DetachedKind, Namespace: "db", Name: "0123456789abcdef"}) {
		t.Errorf("unwatched kind's key = %v", got)
	}
}
