package silence

import (
	"slices"
	"strings"
	"time"

	"github.com/herald-k8s/herald/config"
	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/watcher"
)

// Inhibition mutes Target incidents while a Source incident is open and
// both share the values of every field in Equal (node, workload,
// namespace): the incident that explains the others is the one people
// need. Kinds are those of an incident's affected objects (a crash loop
// grouped by workload is about Pods).
type Inhibition struct {
	Source, Target config.IncidentMatcher
	Equal          []string
}

// BuiltinInhibitions are herald's own (config inhibit.builtin): a NotReady
// node mutes the incidents of the pods on it; a Deployment's stuck
// rollout and its pods' crash loop are one message, whichever came first
// (the crash loop usually does: the progress deadline is 10 minutes).
func BuiltinInhibitions() []Inhibition {
	stuck := config.IncidentMatcher{Kind: "Deployment", Reason: "ProgressDeadlineExceeded"}
	crashing := config.IncidentMatcher{Kind: "Pod", Reason: "CrashLoopBackOff"}
	empty := config.IncidentMatcher{Kind: "Service", Reason: "NoReadyEndpoints"}
	out := []Inhibition{
		{Source: config.IncidentMatcher{Kind: "Node", Reason: "NodeNotReady"}, Target: config.IncidentMatcher{Kind: "Pod"}, Equal: []string{"node"}},
		{Source: stuck, Target: crashing, Equal: []string{"workload"}},
		{Source: crashing, Target: stuck, Equal: []string{"workload"}},
		// A Service with no ready endpoint is explained by its
		// workload's incident (unavailable, a stuck rollout) or its
		// pods' when that keeps them from being ready (below): that one
		// speaks.
		{Source: config.IncidentMatcher{Reason: "ReplicasUnavailable"}, Target: empty, Equal: []string{"workload"}},
		{Source: stuck, Target: empty, Equal: []string{"workload"}},
		// A certificate near its end whose renewal fails: the expiring
		// alert says both (its text carries cert-manager's reason).
		{Source: config.IncidentMatcher{Reason: "CertificateExpiring"}, Target: config.IncidentMatcher{Reason: "CertificateNotReady"}, Equal: []string{"object"}},
		// A volume almost full is the same volume filling up, said
		// louder: the critical alert speaks.
		{Source: config.IncidentMatcher{Reason: "VolumeAlmostFull"}, Target: config.IncidentMatcher{Reason: "VolumeFillingUp"}, Equal: []string{"object"}},
	}
	for _, reason := range notReadyReasons {
		out = append(out, Inhibition{Source: config.IncidentMatcher{Kind: "Pod", Reason: reason}, Target: empty, Equal: []string{"workload"}})
	}
	return out
}

// notReadyReasons are the pod problems that keep a pod out of its
// Services' ready endpoints; another pod incident (an eviction, a
// restart count, a rule of your own) explains no empty Service.
var notReadyReasons = []string{"CrashLoopBackOff", "OOMKilled", "ImagePullBackOff", "CreateContainerConfigError",
	"CreateContainerError", "RunContainerError", "PodPending", "NotReady", "PodFailed"}

// WorkloadsFact is the fact in which an incident about a Service names
// the workloads it sends to ("Deployment/web,StatefulSet/db").
const WorkloadsFact = "workloads"

// Inhibitions are what cfg asks for: the built-in ones unless turned off,
// then its own.
func Inhibitions(cfg *config.Config) []Inhibition {
	var out []Inhibition
	if cfg.BuiltinInhibitions() {
		out = BuiltinInhibitions()
	}
	for _, r := range cfg.Inhibit.Rules {
		out = append(out, Inhibition{Source: r.Source, Target: r.Target, Equal: r.Equal})
	}
	return out
}

// kindOf is the kind an incident is about: its affected objects' (pods,
// for one grouped by workload), else its object's.
func kindOf(inc *incident.Incident) string {
	if len(inc.Members) > 0 {
		if k, ok := watcher.ParseKey(inc.Members[0]); ok {
			return k.Kind
		}
	}
	return inc.Object.Kind
}

func matches(m config.IncidentMatcher, inc *incident.Incident) bool {
	return (m.Rule == "" || m.Rule == inc.Rule) && (m.Reason == "" || m.Reason == inc.Reason) &&
		(m.Severity == "" || m.Severity == inc.Severity) && (m.Kind == "" || m.Kind == kindOf(inc))
}

// inhibited says whether one of the inhibitions mutes inc (whose objects
// described holds), given the open incidents, and by which source.
//
// A source that a silence-until annotation mutes now inhibits nothing:
// an annotation is written by whoever may edit that object — a Node's
// by its own kubelet — and muting one's own alert must not silence the
// alerts of everything it would explain (the pods of every namespace on
// a NotReady node). Those go out as usual. A source muted by a Silence,
// a ClusterSilence or a maintenance window still inhibits: an operator
// muted it knowing what it explains.
func (m *Muter) inhibited(inhibitions []Inhibition, inc *incident.Incident, described []Object, open incident.Open, objects Objects, max time.Duration, now time.Time) (incident.Mute, bool) {
	target := equalValues(inc.Object.Namespace, described)
	sourceValues := map[*incident.Incident]map[string][]string{} // each source described once
	valuesOf := func(src *incident.Incident) map[string][]string {
		if v, ok := sourceValues[src]; ok {
			return v
		}
		objs, notes := describe(src, objects)
		sourceValues[src] = equalValues(src.Object.Namespace, objs)
		for _, a := range notes {
			if _, muted := m.annotationMute(a, src, max, now); muted {
				sourceValues[src] = nil // covers nothing
				break
			}
		}
		return sourceValues[src]
	}
	for _, in := range inhibitions {
		if !matches(in.Target, inc) {
			continue
		}
		// A source that names its reason is looked up in the tracker's
		// index instead of among every open incident.
		candidates := open.All()
		if in.Source.Reason != "" {
			candidates = open.WithReason(in.Source.Reason)
		}
		var sources []*incident.Incident
		for src := range candidates {
			// An inhibited incident inhibits nothing: two that would
			// mute each other leave the first one heard.
			if src != inc && src.MutedBySource == "" && matches(in.Source, src) {
				sources = append(sources, src)
			}
		}
		// Every value the target has must be one an open source has: a
		// workload with pods on two nodes is muted only if both are down.
		covered := len(sources) > 0
		var by *incident.Incident
		for _, field := range in.Equal {
			if !covered || len(target[field]) == 0 {
				covered = false
				break
			}
			for _, v := range target[field] {
				i := slices.IndexFunc(sources, func(src *incident.Incident) bool { return slices.Contains(valuesOf(src)[field], v) })
				if i < 0 {
					covered = false
					break
				}
				if by == nil || sources[i].ID < by.ID {
					by = sources[i]
				}
			}
		}
		if covered && by != nil {
			return incident.Mute{By: incident.InhibitedBy + by.Reason + " on " + by.Object.Kind + " " + strings.TrimPrefix(by.Object.Namespace+"/"+by.Object.Name, "/"),
				Source: by.Fingerprint}, true
		}
	}
	return incident.Mute{}, false
}

// equalValues are the values of the fields inhibitions compare — node,
// workload (namespace/Kind/name), namespace, and (for the built-in ones)
// object (namespace/Kind/name) — of an incident in namespace ns about
// objs.
func equalValues(ns string, objs []Object) map[string][]string {
	out := map[string][]string{}
	add := func(field, v string) {
		if v != "" && !slices.Contains(out[field], v) {
			out[field] = append(out[field], v)
		}
	}
	add("namespace", ns)
	for _, o := range objs {
		add("object", ns+"/"+o.Kind+"/"+o.Name)
		if o.Kind == "Node" {
			add("node", o.Name)
		}
		add("node", o.Node)
		if o.Workload != "" {
			add("workload", ns+"/"+o.Workload)
		}
	}
	return out
}
