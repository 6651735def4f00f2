package changes

import (
	"fmt"
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
		if ro := w.rollouts[i]; in(ro.At) {
			r.Rollouts = append(r.Rollouts, ro)
			if i > 0 {
				oldest = i
			}
		}
	}
	if oldest > 0 {
		r.Undo = undo(workload, w.rollouts[oldest-1].Revision, oldest == len(w.rollouts)-1)
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

// String writes the report as plain text, one line per change, e.g.
//
//	Rolled out 4 min before (revision 7, by argocd): image shop/checkout:1.8.2 → 1.9.0; env DB_POOL changed
//	Undo: kubectl rollout undo deployment/checkout -n shop --to-revision=6
//	ConfigMap app-config changed 2 min before
func (r Report) String() string {
	lines := r.Lines(nil)
	if r.Undo != "" && len(r.Rollouts) > 0 {
		n := len(r.Rollouts)
		lines = append(lines[:n:n], append([]string{"Undo: " + r.Undo}, lines[n:]...)...)
	}
	return strings.Join(lines, "\n")
}

// Lines says the report in words, one change a line: the rollouts, then
// the ConfigMaps and Secrets (with, from also, the other workloads that
// read one and fail since it changed), then what herald cannot know; or
// one line saying that nothing changed, and since when herald would
// know. The undo command is not among them (Report.Undo).
func (r Report) Lines(also func(ObjectChange) []string) []string {
	var lines []string
	for _, ro := range r.Rollouts {
		lines = append(lines, r.rolloutLine(ro))
	}
	for _, o := range r.Objects {
		what := "changed"
		switch {
		case o.Created:
			what = "created"
		case o.MetaToo:
			what = "changed (its labels or annotations too: the data may not have)"
		}
		line := fmt.Sprintf("%s %s %s before", o.Kind, clip(o.Name), what+" "+ago(r.At.Sub(o.At)))
		if also != nil {
			if others := also(o); len(others) > 0 {
				line += "; " + joinNames(others) + map[bool]string{true: ", which reads it too, fails", false: ", which read it too, fail"}[len(others) == 1] + " since"
			}
		}
		lines = append(lines, line)
	}
	if r.Untracked > 0 {
		lines = append(lines, fmt.Sprintf("Changes to %d referenced ConfigMaps or Secrets are unknown: herald tracks a bounded number and more exist", r.Untracked))
	}
	if len(r.Rollouts) > 0 || len(r.Objects) > 0 {
		return lines
	}
	none := r.noChange()
	if len(r.Unwatched) > 0 && r.Recorded {
		none += "; changes to the " + strings.Join(r.Unwatched, "s and ") + "s it reads are not watched"
	}
	return append(lines, none)
}

// noChange is the line that says nothing changed, and how far herald
// knows it.
func (r Report) noChange() string {
	switch {
	case r.Refused:
		return "No change record for this workload: herald records at most a set number of workloads, and more are running"
	case !r.Recorded:
		return "No change record for this workload"
	case r.Since.After(r.At.Add(-r.Window)) && !r.SpecWritten.IsZero() && r.SpecWritten.Before(r.At.Add(-r.Window)):
		// The managed fields date the last spec write before the window:
		// no rollout in it, whenever herald started.
		written := "its spec was last written " + ago(r.At.Sub(r.SpecWritten)) + " before"
		if r.SpecBy != "" {
			written += ", by " + r.SpecBy
		}
		if r.Refs == 0 {
			return "No change to this workload in the last " + ago(r.Window) + " (" + written + ")"
		}
		return fmt.Sprintf("No rollout in the last %s (%s); changes to the ConfigMaps and Secrets it reads before herald started watching at %s are not known",
			ago(r.Window), written, r.Since.UTC().Format("15:04 UTC"))
	case r.Since.After(r.At.Add(-r.Window)):
		return fmt.Sprintf("No change seen to this workload since herald started watching it at %s (%s before)",
			r.Since.UTC().Format("15:04 UTC"), ago(r.At.Sub(r.Since)))
	}
	return "No change to this workload in the last " + ago(r.Window)
}

// joinNames writes "a", "a and b", "a, b and c".
func joinNames(names []string) string {
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

func (r Report) rolloutLine(ro Rollout) string {
	var detail []string
	switch {
	case ro.Revision != "":
		detail = append(detail, "revision "+clip(ro.Revision))
	case ro.Generation > 0:
		detail = append(detail, fmt.Sprintf("generation %d", ro.Generation))
	}
	if ro.By != "" {
		detail = append(detail, "by "+ro.By)
	}
	head := "Rolled out " + ago(r.At.Sub(ro.At)) + " before"
	if len(detail) > 0 {
		head += " (" + strings.Join(detail, ", ") + ")"
	}
	what := ro.Summary.String()
	if ro.Baseline {
		head = "Spec written " + ago(r.At.Sub(ro.At)) + " before"
		if len(detail) > 0 {
			head += " (" + strings.Join(detail, ", ") + ")"
		}
		what = "what changed is not known: herald started watching it after"
		if ro.Created {
			head, what = "Created "+ago(r.At.Sub(ro.At))+" before", "the first template"
			if len(detail) > 0 {
				head += " (" + strings.Join(detail, ", ") + ")"
			}
		}
	}
	line := head + ": " + what
	if ro.ChangeCause != "" {
		line += "; change-cause: " + ro.ChangeCause
	}
	if len(ro.Tools) > 0 {
		line += "; " + strings.Join(ro.Tools, ", ")
	}
	return line
}

// ago writes a duration as people say it in an alert: "40s", "4 min",
// "2h05".
func ago(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Round(time.Second)/time.Second))
	case d < 2*time.Hour:
		return fmt.Sprintf("%d min", int(d.Round(time.Minute)/time.Minute))
	}
	d = d.Round(time.Minute)
	return fmt.Sprintf("%dh%02d", int(d/time.Hour), int(d%time.Hour/time.Minute))
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
