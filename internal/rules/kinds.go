package rules

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// BuiltinKinds maps the built-in kinds herald watches through typed
// informers to their API version. The watcher has the same list with
// resources (a test keeps the two in step).
func BuiltinKinds() map[string]string {
	return map[string]string{
		"Pod":                     "v1",
		"Node":                    "v1",
		"Namespace":               "v1",
		"Secret":                  "v1",
		"PersistentVolumeClaim":   "v1",
		"Deployment":              "apps/v1",
		"StatefulSet":             "apps/v1",
		"DaemonSet":               "apps/v1",
		"ReplicaSet":              "apps/v1",
		"Job":                     "batch/v1",
		"CronJob":                 "batch/v1",
		"Event":                   "events.k8s.io/v1",
		"HorizontalPodAutoscaler": "autoscaling/v2",
		"Service":                 "v1",
		"EndpointSlice":           "discovery.k8s.io/v1",
	}
}

// KindID is the name of a watched kind inside herald (work-queue keys,
// informer lookup): the kind alone for a built-in kind at its usual
// version, Kind.version.group (as kubectl spells it) for anything else.
func KindID(kind, apiVersion string) (string, error) {
	builtin, ok := BuiltinKinds()[kind]
	if ok && (apiVersion == "" || apiVersion == builtin) {
		return kind, nil
	}
	if apiVersion == "" {
		return "", fmt.Errorf("kind %s is not built in: set apiVersion (group/version) for a custom resource", kind)
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil || gv.Version == "" {
		return "", fmt.Errorf("bad apiVersion %q: want group/version, e.g. example.com/v1", apiVersion)
	}
	if gv.Group == "" {
		return kind + "." + gv.Version, nil
	}
	return kind + "." + gv.Version + "." + gv.Group, nil
}

// ParseKindID is the inverse of KindID for non-built-in kinds.
func ParseKindID(id string) (schema.GroupVersionKind, bool) {
	if v, ok := BuiltinKinds()[id]; ok {
		gv, _ := schema.ParseGroupVersion(v)
		return gv.WithKind(id), true
	}
	kind, rest, ok := strings.Cut(id, ".")
	if !ok {
		return schema.GroupVersionKind{}, false
	}
	version, group, _ := strings.Cut(rest, ".")
	return schema.GroupVersionKind{Group: group, Version: version, Kind: kind}, true
}

// kindName is the bare kind of an ID, for messages and payloads.
func kindName(id string) string {
	kind, _, _ := strings.Cut(id, ".")
	return kind
}

// toMap gives CEL and templates the object as JSON-shaped data. Objects
// from dynamic informers already are; typed ones are converted.
func toMap(obj runtime.Object) (map[string]any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u.UnstructuredContent(), nil
	}
	return runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
}
