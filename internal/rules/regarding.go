package rules

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
)

// An Event's regarding object is written by whoever created the Event,
// and the API server checks little of it: an events.k8s.io/v1 Event (one
// with eventTime) in namespace A may name an object in namespace B, and
// nothing checks that the object exists. The warning-events detector
// makes its finding about that object, so the object's namespace would
// decide routing, silences, inhibition and labels. These are the Events
// it believes instead (docs/rules.md, "Warning events").

// Why an Event's regarding object is not believed (the reason label of
// herald_events_ignored_total).
const (
	// IgnoredForeignNamespace: a namespaced object in another namespace
	// than the Event's, or a cluster-scoped one (a Node) named by an
	// Event outside default and kube-system.
	IgnoredForeignNamespace = "foreign-namespace"
	// IgnoredUnknownKind: a kind herald does not know (nor watches by a
	// rule), a known kind in another API group, or no kind or name.
	IgnoredUnknownKind = "unknown-kind"
	// IgnoredInvalidReference: a name no object can have (the API server
	// checks neither an Event's regarding name nor its uid, so either can
	// be a megabyte that would then name the incident, its ledger entry,
	// its labels and subjects), or a uid longer than any.
	IgnoredInvalidReference = "invalid-reference"
)

// maxUID bounds a regarding uid (a UUID is 36 characters).
const maxUID = 128

// MaxEventReason bounds the reason of a warning-events finding: the API
// server does not bound an old-style Event's reason, and it becomes the
// incident's reason, its Alertmanager alertname and a NATS subject token.
const MaxEventReason = 128

// IgnoredEvent is told of a Warning Event whose regarding object the
// warning-events detector does not believe, and why (one of the Ignored*
// reasons). It is called once per evaluation of such an Event, from
// workers, so it must be safe for concurrent use.
type IgnoredEvent func(why string, ev *eventsv1.Event)

// OnIgnoredEvent installs f (nil: nobody is told). Call it before the
// set is used: the set is read by many workers without locks.
func (s *Set) OnIgnoredEvent(f IgnoredEvent) { s.ignored = f }

// regardingKind gives the API group and scope of a kind an Event may be
// about: the kinds herald has detectors or typed informers for, and the
// neighbours whose Warning events people route (Service, Ingress, HPA).
func regardingKind(kind string) (group string, clusterScoped, ok bool) {
	switch kind {
	case "Node", "Namespace", "PersistentVolume":
		return "", true, true
	case "Pod", "PersistentVolumeClaim", "Service":
		return "", false, true
	case "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet":
		return "apps", false, true
	case "Job", "CronJob":
		return "batch", false, true
	case "HorizontalPodAutoscaler":
		return "autoscaling", false, true
	case "Ingress":
		return "networking.k8s.io", false, true
	}
	return "", false, false
}

// clusterEventNamespace: where an Event about a cluster-scoped object may
// live. Kubernetes' own recorders put such Events in default (client-go's
// recorders, the kubelet's Node events), and the API server accepts a
// new-style one only there and in kube-system.
func clusterEventNamespace(ns string) bool { return ns == "default" || ns == "kube-system" }

// distrust says why the warning-events detector must not believe ev's
// regarding object ("" when it may). custom lists the kinds outside the
// built-in table that the configuration's rules watch; their scope is not
// known here, so an empty namespace is taken as cluster-scoped.
func distrust(ev *eventsv1.Event, custom []schema.GroupKind) string {
	r := ev.Regarding
	if r.Kind == "" || r.Name == "" {
		return IgnoredUnknownKind
	}
	if len(validation.IsDNS1123Subdomain(r.Name)) > 0 || len(r.UID) > maxUID || len(r.Namespace) > validation.DNS1123LabelMaxLength {
		return IgnoredInvalidReference
	}
	group, cluster, known := regardingKind(r.Kind)
	if r.APIVersion != "" {
		gv, err := schema.ParseGroupVersion(r.APIVersion)
		if err != nil {
			return IgnoredUnknownKind
		}
		if known && gv.Group != group {
			known = false // a custom resource that calls itself Pod
		}
		if !known && slices.Contains(custom, schema.GroupKind{Group: gv.Group, Kind: r.Kind}) {
			known, cluster = true, r.Namespace == ""
		}
	}
	switch {
	case !known:
		return IgnoredUnknownKind
	case cluster && (r.Namespace != "" || !clusterEventNamespace(ev.Namespace)):
		return IgnoredForeignNamespace
	case !cluster && r.Namespace != ev.Namespace:
		return IgnoredForeignNamespace
	}
	return ""
}

// trustCustomKinds tells the rules about Events the kinds outside the
// built-in table that the configuration watches: an Event may be about a
// custom resource herald has a rule for.
func (s *Set) trustCustomKinds() {
	var custom []schema.GroupKind
	for id := range s.byKind {
		if _, builtin := BuiltinKinds()[id]; !builtin {
			if gvk, ok := ParseKindID(id); ok {
				custom = append(custom, gvk.GroupKind())
			}
		}
	}
	for _, r := range s.byKind["Event"] {
		r.params.customKinds = custom
	}
}

// regardingCheck checks an Event's regarding object once per evaluation,
// whichever rules ask, and tells the set's IgnoredEvent of a Warning Event
// it does not believe. The detector checks again (it is also called
// alone); this is where the ignoring is counted, once.
type regardingCheck struct {
	done bool
	why  string
}

func (c *regardingCheck) distrusted(s *Set, obj runtime.Object) bool {
	ev, ok := obj.(*eventsv1.Event)
	if !ok {
		return false // the detector reports the wrong type
	}
	if !c.done {
		c.done = true
		var custom []schema.GroupKind
		if rs := s.byKind["Event"]; len(rs) > 0 {
			custom = rs[0].params.customKinds
		}
		c.why = distrust(ev, custom)
		if c.why != "" && ev.Type == corev1.EventTypeWarning && s.ignored != nil {
			s.ignored(c.why, ev)
		}
	}
	return c.why != ""
}
