package changes

import (
	"slices"
	"strings"
	"time"

	"github.com/herald-k8s/herald/watcher"
)

// Report is what changed for one workload within a window before a time:
// what the message layer quotes under a crash alert.
type Report struct {
	Workload watcher.Key
	At       time.Time     // the time asked about (the crash)
	Window   time.Duration // how far back
	// Recorded is false when herald keeps no record of the workload (not
	// a workload kind, not seen, or over MaxWorkloads: Refused).
	Recorded bool
	Refused  bool
	// Since is when herald's record of the workload starts: before it,
	// herald knows only the last spec write the managed fields name.
	Since time.Time
	// Rollouts are those within the window, newest first.
	Rollouts []Rollout
	// Undo rolls back every rollout in the window, when herald knows the
	// revision to return to ("" otherwise).
	Undo string
	// Objects are the ConfigMaps and Secrets the pod template reads that
	// changed (or were made) within the window, newest first.
	Objects []ObjectChange
	// Untracked counts referenced ConfigMaps and Secrets herald does not
	// track because it tracks MaxObjects already: their changes are
	// unknown, and the report says so.
	Untracked int
	// SpecWritten and SpecBy are the last spec write the managed fields
	// named when herald began its record (zero: not known); Refs counts
	// the ConfigMaps and Secrets the template reads. With them a record
	// younger than the window can still rule a rollout out.
	SpecWritten time.Time
	SpecBy      string
	Refs        int
	// Unwatched are the kinds (Secret, ConfigMap) the template reads
	// whose changes herald does not watch (not permitted, or turned
	// off): a "no change" says so.
	Unwatched []string
	// Last is the newest rollout before the window, when herald saw one
	// (nil otherwise): a "no change" names it, since a slow failure (a
	// leak) can still follow it.
	Last *Rollout
	// Undone counts the rollouts Undo undoes.
	Undone int
	// Missing: rollouts within the window were let go (the record keeps
	// the last PerWorkload); the report says so and offers no undo.
	Missing bool
}

// ObjectChange is one referenced ConfigMap's or Secret's change.
type ObjectChange struct {
	Ref
	At      time.Time
	Created bool // made within the window rather than changed
	// MetaToo: its labels or annotations changed at the same time, so
	// its data may not have.
	MetaToo bool
}

// Before reports what changed for workload in (t-window, t].
func (c *Changes) Before(workload watcher.Key, t time.Time, window time.Duration) Report {
	r := Report{Workload: workload, At: t, Window: window}
	from := t.Add(-window)
	in := func(at time.Time) bool { return at.After(from) && !at.After(t) }
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.workloads[workload]
	if w == nil {
		r.Refused = c.refused > 0 && slices.Contains(WorkloadKinds, workload.Kind)
		return r
	}
	r.Recorded, r.Since, r.Refs = true, w.firstSeen, len(w.digest.refs)
	if b := w.rollouts[0]; b.Baseline {
		r.SpecWritten, r.SpecBy = b.At, b.By
	}
	// oldest is the oldest rollout in the window that herald saw
	// happen: undo returns to the template before it. The first entry
	// (as herald found the workload) has nothing before it to return to.
	oldest := -1
	for i := len(w.rollouts) - 1; i >= 0; i-- {
		ro := w.rollouts[i]
		switch {
		case in(ro.At):
			r.Rollouts = append(r.Rollouts, ro)
			if !ro.Baseline {
				oldest = i
			}
		case ro.At.Before(from) && r.Last == nil && !ro.Baseline:
			r.Last = &w.rollouts[i]
		}
	}
	// Rollouts the record let go that fall in the window: said, and then
	// no undo is offered, as herald cannot know where it would return.
	r.Missing = w.evicted != nil && !w.evicted.At.Before(from)
	if oldest >= 0 && !r.Missing {
		// Return to the newest revision before it: a template written
		// while the Deployment was paused never got one of its own.
		target := ""
		for j := oldest - 1; j >= 0 && target == ""; j-- {
			target = w.rollouts[j].Revision
		}
		if target == "" && w.evicted != nil {
			target = w.evicted.Revision
		}
		r.Undo = undo(workload, target, oldest == len(w.rollouts)-1)
		if r.Undo != "" {
			r.Undone = len(w.rollouts) - oldest
		}
	}
	for _, ref := range w.digest.refs {
		if !slices.Contains(c.tracked, ref.Kind) {
			if !slices.Contains(r.Unwatched, ref.Kind) {
				r.Unwatched = append(r.Unwatched, ref.Kind)
			}
			continue
		}
		s := c.objects[objectKey{ref, workload.Namespace}]
		switch {
		case s == nil:
			if c.refusedObjects > 0 {
				r.Untracked++
			}
		case in(s.changed):
			r.Objects = append(r.Objects, ObjectChange{Ref: ref, At: s.changed, MetaToo: s.metaToo})
		case in(s.created):
			r.Objects = append(r.Objects, ObjectChange{Ref: ref, At: s.created, Created: true})
		}
	}
	// References beyond the digest's bound: not tracked, and said so.
	r.Untracked += w.digest.moreRefs
	slices.SortStableFunc(r.Objects, func(a, b ObjectChange) int { return b.At.Compare(a.At) })
	return r
}

// undo is the command that returns workload to revision. A Deployment
// goes back to a named revision; a StatefulSet's or DaemonSet's revisions
// are numbered apart from what herald sees, so only "the previous one"
// can be named, and only when one rollout is to be undone.
//
// People paste it into a shell: the revision annotation is written by
// whoever can edit the Deployment, so only a number is ever put in it
// (names are DNS labels, which the API server enforces).
func undo(workload watcher.Key, revision string, onlyNewest bool) string {
	base := "kubectl rollout undo " + strings.ToLower(workload.Kind) + "/" + workload.Name + " -n " + workload.Namespace
	switch {
	case workload.Kind == "Deployment" && revision != "" && !isRevision(revision):
		return ""
	case workload.Kind == "Deployment" && revision != "":
		return base + " --to-revision=" + revision
	case workload.Kind != "Deployment" && onlyNewest:
		return base
	}
	return ""
}

// Referencing lists the workloads whose pod template reads ref in
// namespace: when several crash after one ConfigMap changed, the message
// layer can say they share it.
func (c *Changes) Referencing(namespace string, ref Ref) []watcher.Key {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []watcher.Key
	for key, w := range c.workloads {
		if key.Namespace == namespace && slices.Contains(w.digest.refs, ref) {
			out = append(out, key)
		}
	}
	slices.SortFunc(out, func(a, b watcher.Key) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// isRevision: a Deployment revision is a positive decimal number.
func isRevision(s string) bool {
	if len(s) == 0 || len(s) > 19 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
