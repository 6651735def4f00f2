package changes

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/watcher"
)

// Dispatcher takes notifications onwards (the crash context stage, then
// the sinks' dispatcher).
type Dispatcher interface {
	Dispatch(ctx context.Context, n incident.Notification) error
}

// StageOptions configure a Stage.
type StageOptions struct {
	Record *Changes
	Next   Dispatcher
	// Window is how far before an incident's first sight a change is
	// reported (30 min).
	Window time.Duration
	// Kinds are the workload kinds recorded (WorkloadKinds).
	Kinds []string
	// PodWorkload names the workload that owns a cached pod (kind, name;
	// ok false: the pod is not cached).
	PodWorkload func(namespace, pod string) (kind, name string, ok bool)
	Metrics     *Metrics
}

// Stage is the Dispatcher that says, on each notification of an incident
// about a recorded workload or one of its pods, what changed in the window
// before the incident began. It reads only the record: no API request. It
// sits in front of the crash context stage, so a notification that waits
// for context waits with its changes already found.
type Stage struct {
	opts StageOptions

	mu sync.Mutex
	// recent is the section of each open incident, as its first
	// notification said it: the later ones say the same.
	recent map[string]*incident.Changes
	// failing is when each workload's latest incident began: a ConfigMap
	// that changed before several of them is named in each as shared.
	failing map[watcher.Key]time.Time
}

// Bounds of the stage's memory: incidents remembered, failing workloads.
const (
	maxRecent  = 4096
	maxFailing = 4096
	// maxAlso bounds the other failing workloads named under one change.
	maxAlso = 5
)

// NewStage makes the stage.
func NewStage(opts StageOptions) *Stage {
	if opts.Window <= 0 {
		opts.Window = 30 * time.Minute
	}
	if opts.Kinds == nil {
		opts.Kinds = WorkloadKinds
	}
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics(nil, nil)
	}
	return &Stage{opts: opts, recent: map[string]*incident.Changes{}, failing: map[watcher.Key]time.Time{}}
}

// Dispatch adds the section and hands n on. It never blocks on anything
// but the record's lock.
func (s *Stage) Dispatch(ctx context.Context, n incident.Notification) error {
	if n.Transition != incident.Digest && n.Changes == nil {
		n.Changes = s.Section(n)
	}
	return s.opts.Next.Dispatch(ctx, n)
}

// Section finds the section of n, or nil when its object is not a
// recorded workload or one of its pods.
func (s *Stage) Section(n incident.Notification) *incident.Changes {
	inc := n.Incident
	key, ok := s.workload(inc.Object.Kind, inc.Object.Namespace, inc.Object.Name)
	s.mu.Lock()
	defer s.mu.Unlock()
	if n.Transition == incident.Resolved {
		defer delete(s.recent, inc.ID)
	}
	// An incident's later notifications say what its firing said: the
	// message is edited in place, and rollouts made to fix the problem
	// (or a record shortened since) must not rewrite what preceded it.
	if c := s.recent[inc.ID]; c != nil && n.Transition != incident.Firing {
		return c
	}
	if !ok {
		return nil
	}
	at := inc.FirstSeen
	if at.IsZero() {
		at = n.Time
	}
	if n.Transition == incident.Firing {
		s.noteFailing(key, at)
	}
	r := s.opts.Record.Before(key, at, s.opts.Window)
	c := s.convert(r)
	s.opts.Metrics.Sections.WithLabelValues(sectionKind(c)).Inc()
	if n.Transition != incident.Resolved {
		if len(s.recent) >= maxRecent {
			for k := range s.recent { // forget one: any will do
				delete(s.recent, k)
				break
			}
		}
		s.recent[inc.ID] = c
	}
	return c
}

// workload names the recorded workload an incident's object is or belongs
// to.
func (s *Stage) workload(kind, namespace, name string) (watcher.Key, bool) {
	if kind == "Pod" && s.opts.PodWorkload != nil {
		k, n, ok := s.opts.PodWorkload(namespace, name)
		if !ok {
			return watcher.Key{}, false
		}
		kind, name = k, n
	}
	if !slices.Contains(s.opts.Kinds, kind) {
		return watcher.Key{}, false
	}
	return watcher.Key{Kind: kind, Namespace: namespace, Name: name}, true
}

// noteFailing records that key began failing at at; s.mu must be held.
func (s *Stage) noteFailing(key watcher.Key, at time.Time) {
	if len(s.failing) >= maxFailing {
		for k, t := range s.failing { // the window has passed for these
			if at.Sub(t) > s.opts.Window {
				delete(s.failing, k)
			}
		}
		if len(s.failing) >= maxFailing {
			return // said as no correlation, not as a wrong one
		}
	}
	if t, ok := s.failing[key]; !ok || at.After(t) {
		s.failing[key] = at
	}
}

// convert turns a report into the notification's section; s.mu must be
// held (for failing).
func (s *Stage) convert(r Report) *incident.Changes {
	// The name comes from a pod's owner reference, which the API server
	// does not check as it checks an object's own name.
	c := &incident.Changes{Workload: r.Workload.Kind + "/" + clip(r.Workload.Name), Since: r.At.Add(-r.Window).UTC(), At: r.At.UTC(), Undo: r.Undo}
	for _, ro := range r.Rollouts {
		out := incident.Rollout{Revision: ro.Revision, At: ro.At.UTC(), By: ro.By, ChangeCause: ro.ChangeCause, Tools: ro.Tools,
			Known: !ro.Baseline || ro.Created}
		for _, it := range ro.Summary.Items {
			out.Items = append(out.Items, it.Text)
		}
		if ro.Summary.More > 0 {
			out.Items = append(out.Items, "and "+strconv.Itoa(ro.Summary.More)+" more")
		}
		if ro.Baseline && ro.Created {
			out.Items = []string{"created"}
		}
		c.Rollouts = append(c.Rollouts, out)
	}
	also := func(o ObjectChange) []string { return s.alsoFailing(r.Workload, o) }
	for _, o := range r.Objects {
		c.Objects = append(c.Objects, incident.ObjectChange{Kind: o.Kind, Name: clip(o.Name), At: o.At.UTC(), Created: o.Created, MetaToo: o.MetaToo,
			AlsoFailing: also(o)})
	}
	c.Lines = r.Lines(also)
	return c
}

// alsoFailing lists the other workloads that read o and began failing
// since it changed; s.mu must be held.
func (s *Stage) alsoFailing(self watcher.Key, o ObjectChange) []string {
	var out []string
	more := 0
	for _, k := range s.opts.Record.Referencing(self.Namespace, o.Ref) {
		t, failing := s.failing[k]
		if k == self || !failing || t.Before(o.At) {
			continue
		}
		if len(out) == maxAlso {
			more++
			continue
		}
		out = append(out, k.Kind+"/"+k.Name)
	}
	if more > 0 {
		out = append(out, strconv.Itoa(more)+" more")
	}
	return out
}

func sectionKind(c *incident.Changes) string {
	switch {
	case len(c.Rollouts) > 0:
		return "rollout"
	case len(c.Objects) > 0:
		return "config"
	case len(c.Lines) > 0 && strings.HasPrefix(c.Lines[0], "No change to"):
		return "none"
	}
	return "unknown"
}
