package silence

import (
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/herald-k8s/herald/config"
	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/watcher"
)

// Annotation mutes an object, its workload or its namespace until the
// RFC 3339 time it holds: `kubectl annotate deploy/api
// herald.io/silence-until=2026-11-24T08:00:00Z`.
const Annotation = watcher.SilenceUntilAnnotation

// Objects are the cached objects a Muter reads (the watcher).
type Objects interface {
	Get(key watcher.Key) (runtime.Object, bool, error)
	NamespaceAnnotation(name, key string) string
}

// noObjects is an empty cache.
type noObjects struct{}

func (noObjects) Get(watcher.Key) (runtime.Object, bool, error) { return nil, false, nil }
func (noObjects) NamespaceAnnotation(string, string) string     { return "" }

// Muter decides whether an incident is muted by a Silence resource or an
// annotation. It implements incident.Muter.
type Muter struct {
	namespace string // herald's: silences there are cluster-wide
	logger    *slog.Logger

	mu          sync.Mutex
	generation  uint64  // counts changes to silences
	objects     Objects // none until Watch
	inhibitions []Inhibition
	schedules   map[string]*config.Schedule // by rule
	silences    map[string]Silence          // namespace/name → silence
	// badAnnotations remembers annotation values already reported as
	// unreadable, so each is logged once.
	badAnnotations map[string]bool
}

// NewMuter makes a Muter; namespace is herald's own. Until Watch, it
// mutes nothing.
func NewMuter(namespace string, logger *slog.Logger) *Muter {
	return &Muter{namespace: namespace, logger: logger, objects: noObjects{},
		silences: map[string]Silence{}, badAnnotations: map[string]bool{}}
}

// Watch makes m read objects (their labels, workloads and annotations)
// from objects, and keeps its silences in step with an informer on
// Silence resources (nil: none are served; annotations still mute).
// Call it before the informers start; synced says when m holds every
// silence the informer listed.
func (m *Muter) Watch(objects Objects, inf cache.SharedIndexInformer) (synced cache.InformerSynced, err error) {
	if objects == nil {
		objects = noObjects{}
	}
	m.mu.Lock()
	m.objects = objects
	m.mu.Unlock()
	if inf == nil {
		return func() bool { return true }, nil
	}
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    m.put,
		UpdateFunc: func(_, obj any) { m.put(obj) },
		DeleteFunc: m.remove,
	})
	if err != nil {
		return nil, err
	}
	return reg.HasSynced, nil
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
	key := s.Namespace + "/" + s.Name
	m.mu.Lock()
	// Only a new spec can mute something new: herald's own status
	// writes (metadata.generation stays) must not set off a rescan.
	if old, ok := m.silences[key]; !ok || old.generation != s.generation {
		m.generation++
	}
	m.silences[key] = s
	m.mu.Unlock()
}

func (m *Muter) remove(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if o, ok := obj.(metav1.Object); ok {
		m.mu.Lock()
		delete(m.silences, o.GetNamespace()+"/"+o.GetName())
		m.generation++
		m.mu.Unlock()
	}
}

// Configure puts a configuration's inhibitions and rules' maintenance
// windows in force (at start and on reload).
func (m *Muter) Configure(cfg *config.Config) {
	schedules := map[string]*config.Schedule{}
	for _, r := range cfg.Rules {
		if r.Schedule != nil {
			schedules[r.Name] = r.Schedule
		}
	}
	m.mu.Lock()
	m.inhibitions, m.schedules = Inhibitions(cfg), schedules
	m.mu.Unlock()
}

// Version changes when a silence is added, changed or removed, or one
// starts (incident.Options.MuteVersion): an announced incident may then
// be newly muted.
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

// Silences lists the silences known, by namespace and name.
func (m *Muter) Silences() []Silence {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Silence, 0, len(m.silences))
	for _, s := range m.silences {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b Silence) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return out
}

// Mute says whether inc is muted at now: by its rule's maintenance
// window, an active Silence that matches it or a silence-until
// annotation on its objects, their workloads or its namespace (whichever
// ends last), else by an inhibition whose source is among the open
// incidents.
func (m *Muter) Mute(inc *incident.Incident, open incident.Open, now time.Time) (incident.Mute, bool) {
	m.mu.Lock()
	objects, inhibitions, schedule := m.objects, m.inhibitions, m.schedules[inc.Rule]
	m.mu.Unlock()
	var best incident.Mute
	if schedule != nil {
		if until, ok := schedule.Open(now); ok {
			best = incident.Mute{By: "maintenance window of rule " + inc.Rule, Until: until}
		}
	}
	described, annotated := describe(inc, objects)
	subj := Subject{Rule: inc.Rule, Reason: inc.Reason, Severity: inc.Severity, Namespace: inc.Object.Namespace, Objects: described}
	m.mu.Lock()
	for _, s := range m.silences {
		if s.State(now) != "active" || !s.Matches(subj, s.Namespace == m.namespace) {
			continue
		}
		if s.EndsAt.After(best.Until) {
			best = incident.Mute{By: s.Ref(), Until: s.EndsAt}
		}
	}
	m.mu.Unlock()
	for _, a := range annotated {
		until, ok := m.until(a)
		if ok && now.Before(until) && until.After(best.Until) {
			best = incident.Mute{By: "annotation " + Annotation + " on " + a.on, Until: until}
		}
	}
	if best.By != "" {
		return best, true
	}
	return inhibited(inhibitions, inc, described, open, objects)
}

// annotated is one silence-until annotation found on an object.
type annotated struct{ on, value string }

func (m *Muter) until(a annotated) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339, a.value)
	if err != nil {
		m.mu.Lock()
		first := !m.badAnnotations[a.on+"\x00"+a.value]
		m.badAnnotations[a.on+"\x00"+a.value] = true
		m.mu.Unlock()
		if first {
			m.logger.Warn("ignoring an annotation that is not an RFC 3339 time (e.g. 2026-11-24T08:00:00Z)",
				"annotation", Annotation, "on", a.on, "value", a.value)
		}
		return time.Time{}, false
	}
	return t, true
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
		if obj, ok, err := objects.Get(key); err == nil && ok {
			if meta, ok := obj.(metav1.Object); ok {
				o.Labels = meta.GetLabels()
				annotation(key, meta)
			}
			if pod, ok := obj.(*corev1.Pod); ok {
				kind, name := watcher.Workload(pod)
				o.Workload, o.Node = kind+"/"+name, pod.Spec.NodeName
			}
		}
		objs = append(objs, o)
	}
	look(watcher.Key{Kind: inc.Object.Kind, Namespace: inc.Object.Namespace, Name: inc.Object.Name})
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
		if obj, ok, err := objects.Get(key); err == nil && ok {
			if meta, ok := obj.(metav1.Object); ok {
				annotation(key, meta)
			}
		}
	}
	if ns := inc.Object.Namespace; ns != "" {
		if v := objects.NamespaceAnnotation(ns, Annotation); v != "" {
			found = append(found, annotated{on: "Namespace/" + ns, value: v})
		}
	}
	return objs, found
}
