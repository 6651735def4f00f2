package changes

import (
	"regexp"
	"time"

	"github.com/herald-k8s/herald/watcher"
	"k8s.io/apimachinery/pkg/types"
)

// Rollout is one change of a workload's pod template as herald saw it.
type Rollout struct {
	// Revision is the Deployment's revision annotation or the
	// StatefulSet's update revision, once its controller has set it (it
	// does so just after the template changes); "" when not known.
	Revision   string
	Generation int64
	// At is when the spec was written, from the managed fields when they
	// say so plausibly, otherwise when herald saw the change.
	At time.Time
	// By is the field manager that last wrote the spec ("" if none).
	By string
	// ChangeCause is the kubernetes.io/change-cause annotation, redacted
	// (it can hold a `kubectl set env` command line) and bounded.
	ChangeCause string
	// Tools are Argo CD's and Flux's annotations and labels, key=value.
	Tools []string
	// Summary says what changed; empty when Baseline.
	Summary Summary
	// Baseline marks the template as herald first saw it: what changed
	// then is unknown, unless the workload was Created then.
	Baseline bool
	Created  bool
}

// workload is one workload's record.
type workload struct {
	uid        types.UID
	generation int64
	revision   string
	digest     digest
	firstSeen  time.Time
	rollouts   []Rollout // oldest first, at most perWorkload
	// evicted is the newest rollout no longer kept (nil: none).
	evicted *Rollout
	rv      string // the resourceVersion last observed
}

// maxRevision bounds a revision as kept (a Deployment's is a number, a
// StatefulSet's a ControllerRevision's name).
const maxRevision = 64

// observe records what a workload object says; it runs in the informer's
// queue (watcher.ObserveBeforeStrip), so it does nothing costly unless
// the generation changed, and digests and diffs only when the template
// did — outside the record's lock, so that one huge template written in a
// loop stalls neither the other kinds' informers nor the notifications.
// Objects of one kind are observed one at a time, so nothing else
// changes this workload's entry meanwhile.
func (c *Changes) observe(obj any) {
	v, ok := view(obj)
	if !ok {
		return
	}
	if len(v.template.Spec.Containers) == 0 {
		// Not as the API server sends it (a real template has a
		// container): the informer handed its own stripped copy back
		// (client-go may transform a cached object again), which says
		// nothing the record does not know.
		return
	}
	v.revision = clipTo(v.revision, maxRevision)
	key := watcher.Key{Kind: v.kind, Namespace: v.meta.GetNamespace(), Name: v.meta.GetName()}
	c.mu.Lock()
	w := c.workloads[key]
	known := w != nil && w.uid == v.meta.GetUID()
	if known && w.rv != "" && w.rv == v.meta.GetResourceVersion() {
		c.mu.Unlock()
		return // this version again (a relist, or the cache's own copy)
	}
	if known {
		w.rv = v.meta.GetResourceVersion()
	}
	var lastHash uint64
	if known {
		lastHash = w.digest.hash
	}
	changed := !known || v.generation != w.generation
	c.mu.Unlock()
	var d digest
	var by string
	var at time.Time
	if changed {
		if hash := c.hash.of(v.template); !known || hash != lastHash {
			d = c.hash.digestOf(v.template)
			by, at = specWriter(v.meta)
		} else {
			d.hash = hash // scaled, paused, strategy: no rollout
		}
	}
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if !known {
		c.record(key, v, d, by, at, now)
		return
	}
	// The controller names a revision just after the template changed,
	// in a write of its own (the generation stays): the newest rollout's
	// revision is the one it writes then, whatever the template's writer
	// put there. A template written while the revision stays (a paused
	// Deployment's, or one the controller has not caught up with) has none
	// of its own yet.
	moved := v.revision != w.revision
	w.revision = v.revision
	if changed {
		w.generation = v.generation
		if d.hash != w.digest.hash {
			c.rolledOut(w, v, d, by, at, now, moved)
			return
		}
	}
	if moved {
		w.rollouts[len(w.rollouts)-1].Revision = v.revision
	}
}

// record starts the record of a workload herald has not seen (or that was
// deleted and made again); c.mu must be held.
func (c *Changes) record(key watcher.Key, v workloadView, d digest, by string, at, now time.Time) {
	delete(c.workloads, key)
	if len(c.workloads) >= c.opts.MaxWorkloads {
		if c.refused++; c.refused == 1 {
			c.logger.Warn("change record full: further workloads are not recorded", "max", c.opts.MaxWorkloads, "first", key.String())
		}
		return
	}
	w := &workload{uid: v.meta.GetUID(), generation: v.generation, revision: v.revision, digest: d, firstSeen: now, rv: v.meta.GetResourceVersion()}
	if at.IsZero() {
		at = v.meta.GetCreationTimestamp().Time
	}
	base := c.rollout(v, by, at, Summary{}, true)
	// Made since herald started (creation times are whole seconds), or
	// its spec was last written when it was made.
	created := v.meta.GetCreationTimestamp().Time
	base.Created = !created.Before(c.started.Truncate(time.Second)) || at.Equal(created)
	w.rollouts = []Rollout{base}
	c.workloads[key] = w
}

// rolledOut records a new template d of w; withRevision: the revision
// moved with it (herald missed the write between, in a relist), so the
// revision is this template's.
func (c *Changes) rolledOut(w *workload, v workloadView, d digest, by string, at, now time.Time, withRevision bool) {
	summary := diff(&w.digest, &d)
	w.digest = d
	prev := w.rollouts[len(w.rollouts)-1].At
	// The managed fields' time is in whole seconds and herald sees a
	// write a moment after it, so its own clock is the finer one, unless
	// it saw the write late (a relist after a broken watch): then the
	// entry's time is nearer, if plausibly this write's.
	if lag := now.Sub(at); lag < 2*time.Second || lag > 5*time.Minute || at.Before(prev) {
		at = now
	}
	r := c.rollout(v, by, at, summary, false)
	if !withRevision {
		r.Revision = "" // not yet set for this template
	}
	w.rollouts = append(w.rollouts, r)
	if len(w.rollouts) > c.opts.PerWorkload {
		// The newest one let go is remembered: a report whose window
		// reaches it says that rollouts are missing, and undoes nothing.
		gone := w.rollouts[len(w.rollouts)-c.opts.PerWorkload-1]
		w.evicted = &Rollout{Revision: gone.Revision, At: gone.At}
		w.rollouts = append(w.rollouts[:0], w.rollouts[len(w.rollouts)-c.opts.PerWorkload:]...)
	}
}

func (c *Changes) rollout(v workloadView, by string, at time.Time, s Summary, baseline bool) Rollout {
	r := Rollout{Revision: v.revision, Generation: v.generation, At: at, By: by, Summary: s, Baseline: baseline,
		Tools: tools(v.meta, c.opts.Redact)}
	if cause := v.meta.GetAnnotations()[changeCauseAnnotation]; cause != "" && c.opts.Redact != nil {
		r.ChangeCause = clipTo(c.opts.Redact(assignedValues.ReplaceAllString(cause, "$1=…")), maxChangeCause)
	}
	return r
}

// forget drops a deleted workload's record, unless the name is already
// another object's (deleted and made again while the informer's queue
// was behind).
func (c *Changes) forget(key watcher.Key, uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if w := c.workloads[key]; w != nil && (uid == "" || w.uid == uid) {
		delete(c.workloads, key)
	}
}

// assignedValues are the NAME=value words of a change-cause (`kubectl set
// env deploy/x DB_PASSWORD=…`): the value goes before the redactor sees
// it, since an env var's value is never quoted and the diff names the
// variable already.
var assignedValues = regexp.MustCompile(`(\b[A-Za-z_][A-Za-z0-9_.-]*)=[^\s,;]*`)
