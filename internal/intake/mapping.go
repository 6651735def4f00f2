package intake

import (
	"regexp"
	"strings"

	"github.com/herald-k8s/herald/config"
	"github.com/herald-k8s/herald/internal/rules"
	"github.com/herald-k8s/herald/watcher"
)

// DetachedKind is the kind of the keys of alerts that name no object
// herald watches: their findings come from the intake alone.
const DetachedKind = "Alert"

// conventions are kube-state-metrics' and kube-prometheus' labels that
// name an object. The labels of an object herald cannot mistake come
// first; then pod, then node. An alert on a kube-state-metrics series
// also carries the labels of the exporter it was scraped from (its pod
// and container), so a Deployment's alert has a pod label too: the
// Deployment is what it is about.
var conventions = []struct{ label, kind string }{
	{"deployment", "Deployment"},
	{"statefulset", "StatefulSet"},
	{"daemonset", "DaemonSet"},
	{"job_name", "Job"},
	{"cronjob", "CronJob"},
	{"persistentvolumeclaim", "PersistentVolumeClaim"},
	{"horizontalpodautoscaler", "HorizontalPodAutoscaler"},
	{"replicaset", "ReplicaSet"},
	{"pod", "Pod"},
	{"node", "Node"},
}

// exporters are the containers whose pod an alert names only because
// its series was scraped from them.
var exporters = map[string]bool{"kube-state-metrics": true, "node-exporter": true}

// exporterPod says whether the alert's pod label is the exporter's own
// (its container is the exporter, or is named as the scrape job is) and
// not what the alert is about (a pod's own alert names the pod's
// container: KubePodCrashLooping's container is the one that crashes).
func exporterPod(labels map[string]string) bool {
	c := labels["container"]
	return c != "" && (exporters[c] || c == labels["job"])
}

var (
	// objectName is a Kubernetes object name (a DNS subdomain).
	objectName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$`)
	// namespaceName is a namespace's (a DNS label).
	namespaceName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
	// containerName is a container's (a DNS label).
	containerName = namespaceName
)

// target is what an alert is about.
type target struct {
	object    rules.ObjectRef
	container string
	mapped    bool
}

// mapObject finds the object an alert's labels name: by the mapping
// configured for its name, else by the conventions. Label values are
// the sender's: one that is no valid name maps to nothing.
func mapObject(labels map[string]string, custom []config.AlertObject) target {
	ns := labels["namespace"]
	if !namespaceName.MatchString(ns) {
		ns = ""
	}
	for _, o := range custom {
		if o.Alertname != labels["alertname"] {
			continue
		}
		t := target{object: rules.ObjectRef{Kind: o.Kind, Name: labels[o.NameLabel]}}
		if o.NamespaceLabel != "" {
			t.object.Namespace = labels[o.NamespaceLabel]
		}
		if o.ContainerLabel != "" && o.Kind == "Pod" {
			t.container = labels[o.ContainerLabel]
		}
		return t.valid(o.Kind != "Node" && o.NamespaceLabel != "")
	}
	for _, c := range conventions {
		name, ok := labels[c.label]
		if !ok || c.kind == "Pod" && exporterPod(labels) {
			continue
		}
		t := target{object: rules.ObjectRef{Kind: c.kind, Name: name}}
		if c.kind == "Node" {
			return t.valid(false)
		}
		t.object.Namespace = labels["namespace"]
		if c.kind == "Pod" {
			t.container = labels["container"]
		}
		return t.valid(true)
	}
	return target{object: rules.ObjectRef{Namespace: ns}}
}

// valid keeps t when its names are names; otherwise only its namespace
// is kept, for routing.
func (t target) valid(namespaced bool) target {
	ok := objectName.MatchString(t.object.Name) &&
		(!namespaced || namespaceName.MatchString(t.object.Namespace)) &&
		(t.container == "" || containerName.MatchString(t.container))
	if !ok {
		ns := t.object.Namespace
		if !namespaced || !namespaceName.MatchString(ns) {
			ns = ""
		}
		return target{object: rules.ObjectRef{Namespace: ns}}
	}
	if !namespaced {
		t.object.Namespace = ""
	}
	t.mapped = true
	return t
}

// key is where the alert's findings join the reconcile: its object's
// key when herald watches that kind, so that the alert and herald's own
// checks of the object meet; a key of its own otherwise.
func (t target) key(fingerprint string, watched func(kind string) bool) watcher.Key {
	if t.mapped && watched(t.object.Kind) {
		return watcher.Key{Kind: t.object.Kind, Namespace: t.object.Namespace, Name: t.object.Name}
	}
	return watcher.Key{Kind: DetachedKind, Namespace: t.object.Namespace, Name: fingerprint}
}

// severity reads the alert's severity label into herald's three.
func severity(label string) string {
	switch strings.ToLower(label) {
	case "critical", "high", "page", "error", "emergency":
		return "critical"
	case "info", "informational", "low", "none":
		return "info"
	}
	return "warning"
}
