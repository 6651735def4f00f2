package silence

import (
	"iter"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
	return []Inhibition{
		{Source: config.IncidentMatcher{Kind: "Node", Reason: "NodeNotReady"}, Target: config.IncidentMatcher{Kind: "Pod"}, Equal: []string{"node"}},
		{Source: stuck, Target: crashing, Equal: []string{"workload"}},
		{Source: crashing, Target: stuck, Equal: []string{"workload"}},
	}
}

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

// inhibited says whether one of the inhibitions mutes inc, given the open
// incidents, and by which source.
func inhibited(inhibitions []Inhibition, inc *incident.Incident, open iter.Seq[*incident.Incident], objects Objects) (incident.Mute, bool) {
	var target map[string][]string // computed once, when some source is open
	for _, in := range inhibitions {
		if !matches(in.Target, inc) {
			continue
		}
		var sources []*incident.Incident
		for src := range open {
			// An inhibited incident inhibits nothing: two that would
			// mute each other leave the first one heard.
			if src != inc && !strings.HasPrefix(src.MutedBy, incident.InhibitedBy) && matches(in.Source, src) {
				sources = append(sources, src)
			}
		}
		if len(sources) == 0 {
			continue
		}
		if target == nil {
			target = equalValues(inc, objects)
		}
		// Every value the target has must be one an open source has: a
		// workload with pods on two nodes is muted only if both are down.
		covered := true
		var by *incident.Incident
		for _, field := range in.Equal {
			if len(target[field]) == 0 {
				covered = false
				break
			}
			for _, v := range target[field] {
				i := slices.IndexFunc(sources, func(src *incident.Incident) bool { return slices.Contains(equalValues(src, objects)[field], v) })
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

// equalValues are an incident's values of the fields inhibitions compare:
// node, workload and namespace, from its object and affected objects.
func equalValues(inc *incident.Incident, objects Objects) map[string][]string {
	out := map[string][]string{}
	add := func(field, v string) {
		if v != "" && !slices.Contains(out[field], v) {
			out[field] = append(out[field], v)
		}
	}
	add("namespace", inc.Object.Namespace)
	keys := []watcher.Key{{Kind: inc.Object.Kind, Namespace: inc.Object.Namespace, Name: inc.Object.Name}}
	for _, m := range inc.Members {
		if k, ok := watcher.ParseKey(m); ok && k != keys[0] {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		switch k.Kind {
		case "Node":
			add("node", k.Name)
		case "Deployment", "StatefulSet", "DaemonSet", "Job":
			add("workload", k.Namespace+"/"+k.Kind+"/"+k.Name)
		case "Pod":
			obj, ok, err := objects.Get(k)
			if err != nil || !ok {
				continue
			}
			if pod, ok := obj.(*corev1.Pod); ok {
				add("node", pod.Spec.NodeName)
			}
			if meta, ok := obj.(metav1.Object); ok {
				kind, name := watcher.Workload(meta)
				add("workload", k.Namespace+"/"+kind+"/"+name)
			}
		}
	}
	return out
}
