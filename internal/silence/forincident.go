package silence

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/herald-k8s/herald/internal/incident"
)

// ForIncident returns the matchers that mute exactly inc's object (or
// its workload, when its rule groups by workload) for inc's rule: what
// `herald silence create --incident` and Slack's Silence buttons create.
// An incident read from a ledger that names no single object and rule is
// refused: an empty name or a glob would mute many.
func ForIncident(inc incident.Incident) (Matchers, error) {
	obj := strings.Trim(inc.Object.Kind+"/"+inc.Object.Namespace+"/"+inc.Object.Name, "/")
	if inc.Rule == "" || inc.Object.Kind == "" || inc.Object.Name == "" || strings.ContainsAny(inc.Object.Name+inc.Object.Kind, "*?[]\\") {
		return Matchers{}, fmt.Errorf("incident %s in the ledger names no single object and rule (%q, rule %q): not silenced; check that the ledger is herald's (herald incidents)", inc.ID, obj, inc.Rule)
	}
	m := Matchers{Rule: inc.Rule}
	if inc.Grouped {
		m.Workload = inc.Object.Kind + "/" + inc.Object.Name
	} else {
		m.Kind, m.Name = inc.Object.Kind, inc.Object.Name
	}
	return m, nil
}

// NewSilence is a Silence resource to create in namespace: name "" lets
// the API server make one up from "silence-".
func NewSilence(namespace, name string, m Matchers, start, end time.Time, comment, createdBy string, labels map[string]string) (*unstructured.Unstructured, error) {
	spec := map[string]any{"startsAt": start.UTC().Format(time.RFC3339), "endsAt": end.UTC().Format(time.RFC3339), "comment": comment}
	if createdBy != "" {
		spec["createdBy"] = createdBy
	}
	matchers, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&m)
	if err != nil {
		return nil, err
	}
	spec["matchers"] = matchers
	meta := map[string]any{"namespace": namespace}
	if name == "" {
		meta["generateName"] = "silence-"
	} else {
		meta["name"] = name
	}
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "herald.io/v1alpha1", "kind": "Silence", "metadata": meta, "spec": spec}}
	if len(labels) > 0 {
		obj.SetLabels(labels)
	}
	return obj, nil
}
