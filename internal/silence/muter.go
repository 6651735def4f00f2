package silence

import (
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"github.com/herald-k8s/herald/config"
	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/watcher"
)

// Annotation mutes an object, its workload or its namespace until the
// RFC 3339 time it holds: `kubectl annotate deploy/api
// herald.io/silence-until=2026-11-24T08:00:00Z`.
const Annotation = watcher.SilenceUntilAnnotation

// Objects are the cached objects a Muter reads (the watcher): only their
// metadata and a pod's node, so that no question decodes a cached pod (a
// decode per notification was a tenth of herald's allocation under churn).
type Objects interface {
	Meta(key watcher.Key) (metav1.Object, bool, error)
	PodNodeName(namespace, name string) string
	NamespaceAnnotation(name, key string) string
}

// noObjects is an empty cache.
type noObjects struct{}

func (noObjects) Meta(watcher.Key) (metav1.Object, bool, error) { return nil, false, nil }
func (noObjects) PodNodeName(string, string) string             { return "" }
func (noObjects) NamespaceAnnotation(string, string) string     { return "" }

// Muter decides whether an incident is muted by a Silence or
// ClusterSilence resource or an annotation. It implements incident.Muter.
type Muter struct {
	namespace string // herald's: a Silence there is told apart at start (scope.go)
	logger    *slog.Logger
	clock     *annotationClock

	mu          sync.Mutex
	generation  uint64  // counts changes to silences
	objects     Objects // none until Watch
	inhibitions []Inhibition
	schedules   map[string]*config.Schedule // by rule
	silences    map[string]Silence          // namespace/name (ClusterSilence: /name) → silence
	maxDuration time.Duration               // the longest a silence or an annotation mutes
	// badAnnotations remembers annotation values already reported as
	// unreadable, so each is logged once.
	badAnnotations map[badAnnotation]bool
	badLoggedAt    time.Time // the last one logged past maxAnchors
	// warned remembers the silences (key and generation) whose scope
	// was warned about.
	warned map[string]int64
}

// NewMuter makes a Muter; namespace is herald's own. Until Watch, it
// mutes nothing.
func NewMuter(namespace string, logger *slog.Logger) *Muter {
	return &Muter{namespace: namespace, logger: logger, objects: noObjects{}, clock: newAnnotationClock(),
		silences: map[string]Silence{}, maxDuration: MaxDuration, badAnnotations: map[badAnnotation]bool{}, warned: map[string]int64{}}
}

// Watch makes m read objects (their labels, workloads and annotations)
// from objects, and keeps its silences in step with informers on
// Silence and ClusterSilence resources (none: none are served;
// annotations still mute). Call it before the informers start; synced
// says when m holds every silence the informers listed.
func (m *Muter) Watch(objects Objects, informers ...cache.SharedIndexInformer) (synced cache.InformerSynced, err error) {
	if objects == nil {
		objects = noObjects{}
	}
	m.mu.Lock()
	m.objects = objects
	m.mu.Unlock()
	var regs []cache.ResourceEventHandlerRegistration
	for _, inf := range informers {
		reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    m.put,
			UpdateFunc: func(_, obj any) { m.put(obj) },
			DeleteFunc: m.remove,
		})
		if err != nil {
			return nil, err
		}
		regs = append(regs, reg)
	}
	return func() bool {
		for _, reg := range regs {
			if !reg.HasSynced() {
				return false
			}
		}
		return true
	}, nil
}

func (m *Muter) put(obj any) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	s, err := Parse(u)
	if err != nil {
		m.logger.Error("ignoring a silence herald cannot use", "error", err)
		m.remove(obj)
		return
	}
	key := s.key()
	m.mu.Lock()
	s = s.Capped(m.maxDuration)
	// Only a new spec can mute something new: herald's own status
	// writes (metadata.generation stays) must not set off a rescan.
	old, ok := m.silences[key]
	if !ok || old.generation != s.generation {
		m.generation++
	}
	m.silences[key] = s
	warnedAt, seen := m.warned[key]
	warn := !seen || warnedAt != s.generation
	m.warned[key] = s.generation
	m.mu.Unlock()
	if warn {
		m.warnScope(s)
	}
}

func (m *Muter) remove(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if o, ok := obj.(metav1.Object); ok {
		m.mu.Lock()
		delete(m.silences, o.GetNamespace()+"/"+o.GetName())
		delete(m.warned, o.GetNamespace()+"/"+o.GetName())
		m.generation++
		m.mu.Unlock()
	}
}

// Configure puts a configuration's inhibitions, rules' maintenance
// windows and silences.maxDuration in force (at start and on reload).
func (m *Muter) Configure(cfg *config.Config) {
	schedules := map[string]*config.Schedule{}
	for _, r := range cfg.Rules {
		if r.Schedule != nil {
			schedules[r.Name] = r.Schedule
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.inhibitions, m.schedules = Inhibitions(cfg), schedules
	if max := cfg.SilenceMaxDuration(); max != m.maxDuration {
		m.maxDuration = max
		for key, s := range m.silences {
			m.silences[key] = s.Capped(max)
		}
		m.generation++
	}
}

// Version changes when a silence is added, changed or removed, or one
// starts, when silences.maxDuration changes, and when a silence-until
// annotation changes on an observed kind (incident.Options.MuteVersion):
// an announced incident may then be newly muted.
func (m *Muter) Version(now time.Time) uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	started := uint64(0)
	for _, s := range m.silences {
		if !now.Before(s.StartsAt) {
			started++
		}
	}
	return m.generation<<20 | started
}

// Silences lists the silences known, by namespace and name (ClusterSilences
// first).
func (m *Muter) Silences() []Silence {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Silence, 0, len(m.silences))
	for _, s := range m.silences {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b Silence) int {
		return strings.Compare(a.key(), b.key())
	})
	return out
}

// Mute says whether inc is muted at now: by its rule's maintenance
// window, an active Silence or ClusterSilence that matches it or a
// silence-until annotation on its objects, their workloads or its
// namespace (whichever ends last; an annotation mutes at most
// silences.maxDuration from when herald first saw it), else by an
// inhibition whose source is among the open incidents.
func (m *Muter) Mute(inc *incident.Incident, open incident.Open, now time.Time) (incident.Mute, bool) {
	m.mu.Lock()
	objects, inhibitions, schedule, max := m.objects, m.inhibitions, m.schedules[inc.Rule], m.maxDuration
	m.mu.Unlock()
	var best incident.Mute
	if schedule != nil {
		if until, ok := schedule.Open(now); ok {
			best = incident.Mute{By: "maintenance window of rule " + inc.Rule, Until: until}
		}
	}
	described, annotated := describe(inc, objects)
	subj := Subject{Incident: inc.ID, Rule: inc.Rule, Reason: inc.Reason, Severity: inc.Severity, Namespace: inc.Object.Namespace, Objects: described}
	m.mu.Lock()
	for _, s := range m.silences {
		if s.State(now) != "active" || !s.Matches(subj) {
			continue
		}
		if s.EndsAt.After(best.Until) {
			best = incident.Mute{By: s.Ref(), Until: s.EndsAt, Who: oneLine(s.CreatedBy, maxWho)}
		}
	}
	m.mu.Unlock()
	for _, a := range annotated {
		if mute, ok := m.annotationMute(a, inc, max, now); ok && mute.Until.After(best.Until) {
			best = mute
		}
	}
	if best.By != "" {
		return best, true
	}
	return m.inhibited(inhibitions, inc, described, open, objects, max, now)
}

// workloadKinds are the kinds that own pods and are a workload themselves.
var workloadKinds = map[string]bool{"Deployment": true, "StatefulSet": true, "DaemonSet": true, "Job": true}

// describe reads from the cache what silences and inhibitions match on:
// inc's object and the affected pods of a grouped incident, their
// workloads, labels and nodes, and the silence-until annotations on any
// of them, their workloads or their namespace. Done once per question.
func describe(inc *incident.Incident, objects Objects) ([]Object, []annotated) {
	var objs []Object
	var found []annotated
	seen := map[watcher.Key]bool{}
	annotation := func(key watcher.Key, meta metav1.Object) {
		if v := meta.GetAnnotations()[Annotation]; v != "" {
			found = append(found, annotated{on: key.String(), value: v})
		}
	}
	look := func(key watcher.Key) {
		if seen[key] {
			return
		}
		seen[key] = true
		o := Object{Kind: key.Kind, Name: key.Name}
		if workloadKinds[key.Kind] {
			o.Workload = key.Kind + "/" + key.Name
		}
		if meta, ok, err := objects.Meta(key); err == nil && ok {
			o.Labels = meta.GetLabels()
			annotation(key, meta)
			if key.Kind == "Pod" {
				kind, name := watcher.Workload(meta)
				o.Workload, o.Node = kind+"/"+name, objects.PodNodeName(key.Namespace, key.Name)
			}
		}
		objs = append(objs, o)
	}
	look(watcher.Key{Kind: inc.Object.Kind, Namespace: inc.Object.Namespace, Name: inc.Object.Name})
	// The workloads a Service sends to (no-endpoints' "workloads"
	// fact): one of them failing explains the Service's empty
	// endpoints (the built-in inhibitions).
	if ws := inc.Facts[WorkloadsFact]; ws != "" && inc.Object.Kind == "Service" {
		for _, w := range strings.Split(ws, ",") {
			if kind, name, ok := strings.Cut(w, "/"); ok && workloadKinds[kind] {
				objs = append(objs, Object{Kind: kind, Name: name, Workload: w})
			}
		}
	}
	for _, member := range inc.Members {
		if key, ok := watcher.ParseKey(member); ok {
			look(key)
		}
	}
	// The workloads' own annotations (when herald caches that kind).
	for _, o := range slices.Clone(objs) {
		kind, name, ok := strings.Cut(o.Workload, "/")
		key := watcher.Key{Kind: kind, Namespace: inc.Object.Namespace, Name: name}
		if !ok || seen[key] {
			continue
		}
		seen[key] = true
		if meta, ok, err := objects.Meta(key); err == nil && ok {
			annotation(key, meta)
		}
	}
	if ns := inc.Object.Namespace; ns != "" {
		if v := objects.NamespaceAnnotation(ns, Annotation); v != "" {
			found = append(found, annotated{on: "Namespace/" + ns, value: v})
		}
	}
	return objs, found
}
