package changes

import (
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
}

// observe records what a workload object says; it runs in the informer's
// queue (watcher.ObserveBeforeStrip), so it does nothing costly unless
// the generation changed, and diffs only when the template did.
func (c *Changes) observe(obj any) {
	v, ok := view(obj)
	if !ok {
		return
	}
	key := watcher.Key{Kind: v.kind, Namespace: v.meta.GetNamespace(), Name: v.meta.GetName()}
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.workloads[key]
	if w != nil && w.uid != v.meta.GetUID() { // deleted and made again
		delete(c.workloads, key)
		w = nil
	}
	if w == nil {
		if len(c.workloads) >= c.opts.MaxWorkloads {
			if c.refused++; c.refused == 1 {
				c.logger.Warn("change record full: further workloads are not recorded", "max", c.opts.MaxWorkloads, "first", key.String())
			}
			return
		}
		w = &workload{uid: v.meta.GetUID(), generation: v.generation, revision: v.revision,
			digest: c.hash.digestOf(v.template), firstSeen: now}
		by, at := specWriter(v.meta)
		if at.IsZero() {
			at = v.meta.GetCreationTimestamp().Time
		}
		base := c.rollout(v, by, at, Summary{}, true)
		// Made since herald started (creation times are whole seconds),
		// or its spec was last written when it was made.
		created := v.meta.GetCreationTimestamp().Time
		base.Created = !created.Before(c.started.Truncate(time.Second)) || at.Equal(created)
		w.rollouts = []Rollout{base}
		c.workloads[key] = w
		return
	}
	if v.revision != w.revision {
		// The controller names the revision after the template changed:
		// it belongs to the newest rollout that has none yet.
		w.revision = v.revision
		if last := &w.rollouts[len(w.rollouts)-1]; last.Revision == "" {
			last.Revision = v.revision
		}
	}
	if v.generation == w.generation {
		return
	}
	w.generation = v.generation
	d := c.hash.digestOf(v.template)
	if d.hash == w.digest.hash { // scaled, paused, strategy: no rollout
		return
	}
	summary := diff(&w.digest, &d)
	w.digest = d
	by, at := specWriter(v.meta)
	prev := w.rollouts[len(w.rollouts)-1].At
	// The managed fields' time is in whole seconds and herald sees a
	// write a moment after it, so its own clock is the finer one, unless
	// it saw the write late (a relist after a broken watch): then the
	// entry's time is nearer, if plausibly this write's.
	if lag := now.Sub(at); lag < 2*time.Second || lag > 5*time.Minute || at.Before(prev) {
		at = now
	}
	r := c.rollout(v, by, at, summary, false)
	if v.revision == w.rollouts[len(w.rollouts)-1].Revision {
		r.Revision = "" // not yet set for this template
	}
	w.rollouts = append(w.rollouts, r)
	if len(w.rollouts) > c.opts.PerWorkload {
		w.rollouts = append(w.rollouts[:0], w.rollouts[len(w.rollouts)-c.opts.PerWorkload:]...)
	}
}

func (c *Changes) rollout(v workloadView, by string, at time.Time, s Summary, baseline bool) Rollout {
	r := Rollout{Revision: v.revision, Generation: v.generation, At: at, By: by, Summary: s, Baseline: baseline,
		Tools: tools(v.meta)}
	if cause := v.meta.GetAnnotations()[changeCauseAnnotation]; cause != "" && c.opts.Redact != nil {
		r.ChangeCause = clipTo(c.opts.Redact(cause), maxChangeCause)
	}
	return r
}

// forget drops a deleted workload's record.
func (c *Changes) forget(key watcher.Key) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.workloads, key)
}
