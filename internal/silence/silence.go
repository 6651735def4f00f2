// Package silence answers "is this incident muted now, and until when?"
// for the incident tracker: Silence resources (silences.herald.io, each
// muting its own namespace only), ClusterSilences
// (clustersilences.herald.io, any namespace: a permission of its own), the
// herald.io/silence-until annotation on an object, its workload or its
// namespace, maintenance windows and inhibition. It mutes notifications
// only; incidents live on (internal/incident/mute.go).
package silence

import (
	"fmt"
	"path"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/herald-k8s/herald/config"
)

// The Silence and ClusterSilence resources: their kinds as herald's
// watcher spells a custom resource (Kind.version.group), and their API
// resources.
const (
	Kind        = "Silence.v1alpha1.herald.io"
	ClusterKind = "ClusterSilence.v1alpha1.herald.io"
)

var (
	Resource        = schema.GroupVersionResource{Group: "herald.io", Version: "v1alpha1", Resource: "silences"}
	ClusterResource = schema.GroupVersionResource{Group: "herald.io", Version: "v1alpha1", Resource: "clustersilences"}
)

// MaxDuration is the longest a silence may last (config
// silences.maxDuration may set less); the CRDs reject longer ones that
// give startsAt, and herald ends the others at creation plus this (a
// forgotten silence must not mute a namespace for ever).
const MaxDuration = config.MaxSilenceDuration

// Silence is one parsed Silence or ClusterSilence resource.
type Silence struct {
	// Namespace is a Silence's, the only one it mutes; "" for a
	// ClusterSilence.
	Namespace, Name string
	// Cluster says it is a ClusterSilence: it mutes any namespace (and
	// nodes), narrowed by Matchers.Namespace.
	Cluster bool
	// EndsAt is when it ends: spec.endsAt, or StartsAt plus the longest
	// a silence may last if that is sooner (Requested is spec.endsAt).
	StartsAt, EndsAt, Requested time.Time
	Comment, CreatedBy          string
	Matchers                    Matchers
	// Status is what herald last wrote on it.
	Status Status

	selector   labels.Selector // Matchers.LabelSelector compiled
	generation int64           // metadata.generation: moves with the spec only
}

// Matchers select the incidents a Silence mutes: every one given must
// match (the CRD requires at least one).
type Matchers struct {
	// Namespace is a glob on the incident's namespace. It narrows a
	// ClusterSilence; a Silence mutes its own namespace and nothing
	// else, whatever this says.
	Namespace string `json:"namespace,omitempty"`
	Kind      string `json:"kind,omitempty"`
	// Name is a glob (path.Match) on the object's name, or on any
	// affected pod's name for an incident grouped by workload.
	Name string `json:"name,omitempty"`
	// Workload is "api" or "Deployment/api".
	Workload string `json:"workload,omitempty"`
	Rule     string `json:"rule,omitempty"`
	Reason   string `json:"reason,omitempty"`
	Severity string `json:"severity,omitempty"`
	// LabelSelector matches the object's labels (any affected pod's, for
	// an incident grouped by workload).
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
	// Incident is one incident's ID (a notification's footer): the
	// silence mutes that occurrence only, so it ends, in effect, when the
	// incident resolves (Slack's "Silence until resolved"); the problem
	// coming back is a new incident, and is said.
	Incident string `json:"incident,omitempty"`
}

// Empty says no matcher is given (the CRD refuses such a silence).
func (m Matchers) Empty() bool {
	return m.Namespace == "" && m.Kind == "" && m.Name == "" && m.Workload == "" && m.Rule == "" &&
		m.Reason == "" && m.Severity == "" && m.LabelSelector == nil && m.Incident == ""
}

// String lists the matchers given, for people: "workload=api rule=crash".
func (m Matchers) String() string {
	var parts []string
	for _, kv := range [][2]string{{"namespace", m.Namespace}, {"kind", m.Kind}, {"name", m.Name}, {"workload", m.Workload},
		{"rule", m.Rule}, {"reason", m.Reason}, {"severity", m.Severity}, {"incident", m.Incident}} {
		if kv[1] != "" {
			parts = append(parts, kv[0]+"="+kv[1])
		}
	}
	if m.LabelSelector != nil {
		parts = append(parts, "labels="+metav1.FormatLabelSelector(m.LabelSelector))
	}
	return strings.Join(parts, " ")
}

// spec is the resource's spec as stored.
type spec struct {
	Matchers  Matchers     `json:"matchers"`
	StartsAt  *metav1.Time `json:"startsAt,omitempty"`
	EndsAt    *metav1.Time `json:"endsAt,omitempty"`
	Comment   string       `json:"comment,omitempty"`
	CreatedBy string       `json:"createdBy,omitempty"`
}

// Parse reads a Silence or ClusterSilence resource. The API server has
// validated it against the CRD; Parse still refuses what it cannot use,
// saying what. It ends it at most MaxDuration after its start (Capped
// applies a shorter bound).
func Parse(u *unstructured.Unstructured) (Silence, error) {
	// A ClusterSilence is cluster-scoped: it has no namespace, and a
	// Silence always has one.
	s := Silence{Namespace: u.GetNamespace(), Name: u.GetName(), generation: u.GetGeneration(),
		Cluster: u.GetKind() == "ClusterSilence" || u.GetNamespace() == ""}
	if s.Cluster {
		s.Namespace = ""
	}
	raw, _, _ := unstructured.NestedMap(u.Object, "spec")
	var sp spec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &sp); err != nil {
		return s, fmt.Errorf("%s: %w", s.Ref(), err)
	}
	if sp.EndsAt == nil {
		return s, fmt.Errorf("%s: spec.endsAt is required", s.Ref())
	}
	s.StartsAt = u.GetCreationTimestamp().Time
	if sp.StartsAt != nil {
		s.StartsAt = sp.StartsAt.Time
	}
	s.Requested = sp.EndsAt.Time
	s = s.Capped(MaxDuration)
	s.Comment, s.CreatedBy, s.Matchers = sp.Comment, sp.CreatedBy, sp.Matchers
	if st, ok, _ := unstructured.NestedMap(u.Object, "status"); ok {
		_ = runtime.DefaultUnstructuredConverter.FromUnstructured(st, &s.Status) // herald's own writing; unreadable is rewritten
	}
	if sel := sp.Matchers.LabelSelector; sel != nil {
		compiled, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil {
			return s, fmt.Errorf("%s: spec.matchers.labelSelector: %w", s.Ref(), err)
		}
		s.selector = compiled
	}
	for field, glob := range map[string]string{"namespace": s.Matchers.Namespace, "name": s.Matchers.Name} {
		if _, err := path.Match(glob, ""); err != nil {
			return s, fmt.Errorf("%s: spec.matchers.%s %q is not a valid glob: %w", s.Ref(), field, glob, err)
		}
	}
	return s, nil
}

// Capped is s ending at most max after its start: spec.endsAt, or
// StartsAt+max if that is sooner.
func (s Silence) Capped(max time.Duration) Silence {
	s.EndsAt = s.Requested
	if limit := s.StartsAt.Add(max); s.EndsAt.After(limit) {
		s.EndsAt = limit
	}
	return s
}

// State is where a silence is in its life at now.
func (s Silence) State(now time.Time) string {
	switch {
	case now.Before(s.StartsAt):
		return "pending"
	case now.Before(s.EndsAt):
		return "active"
	}
	return "expired"
}

// Ref names the silence for people: "silence shop/deploy-api",
// "clustersilence nightly-etl".
func (s Silence) Ref() string {
	if s.Cluster {
		return "clustersilence " + s.Name
	}
	return "silence " + s.Namespace + "/" + s.Name
}

// key is s's key in the Muter: "/name" for a ClusterSilence (no
// namespace is empty).
func (s Silence) key() string { return s.Namespace + "/" + s.Name }

// Subject is what a silence is matched against: the incident's object
// and, for an incident grouped by workload, its affected pods.
type Subject struct {
	// Incident is the incident's ID.
	Incident               string
	Rule, Reason, Severity string
	Namespace              string
	Objects                []Object
}

// Object is one object an incident is about.
type Object struct {
	Kind, Name string
	Workload   string // "Deployment/api" ("" unknown)
	Labels     map[string]string
	Node       string // a pod's node
}

// Matches reports whether s mutes an incident about subj. A Silence
// mutes only incidents in its own namespace, wherever it lives: muting
// across namespaces is a ClusterSilence, a permission of its own.
func (s Silence) Matches(subj Subject) bool {
	m := s.Matchers
	if (!s.Cluster && subj.Namespace != s.Namespace) || (m.Namespace != "" && !glob(m.Namespace, subj.Namespace)) {
		return false
	}
	if m.Incident != "" && m.Incident != subj.Incident {
		return false
	}
	if (m.Rule != "" && m.Rule != subj.Rule) || (m.Reason != "" && m.Reason != subj.Reason) || (m.Severity != "" && m.Severity != subj.Severity) {
		return false
	}
	return s.anyObject(subj.Objects, func(o Object) bool { return m.Kind == "" || m.Kind == o.Kind }) &&
		s.anyObject(subj.Objects, func(o Object) bool { return m.Name == "" || glob(m.Name, o.Name) }) &&
		s.anyObject(subj.Objects, func(o Object) bool { return m.Workload == "" || workloadIs(o.Workload, m.Workload) }) &&
		s.anyObject(subj.Objects, func(o Object) bool { return s.selector == nil || s.selector.Matches(labels.Set(o.Labels)) })
}

func (s Silence) anyObject(objs []Object, match func(Object) bool) bool {
	for _, o := range objs {
		if match(o) {
			return true
		}
	}
	return false
}

func glob(pattern, name string) bool {
	ok, _ := path.Match(pattern, name)
	return ok
}

// workloadIs matches "Kind/name" against "name" or "Kind/name".
func workloadIs(workload, want string) bool {
	if workload == "" {
		return false
	}
	if strings.Contains(want, "/") {
		return workload == want
	}
	_, name, _ := strings.Cut(workload, "/")
	return name == want
}
