package changes

import (
	"fmt"
	"strings"
	"time"

	"github.com/herald-k8s/herald/internal/incident"
)

// How a report reads in an alert. Every time is said relative to the
// failure ("4 min before the failure"), not to now: the message is edited
// and repeated long after, and it must still say the same thing.

// String writes the report as plain text, one line per change, with the
// undo command after the rollouts, e.g.
//
//	Rolled out 4 min before the failure (revision 7, by argocd): image shop/checkout:1.8.2 → 1.9.0; env DB_POOL changed
//	Undo: kubectl rollout undo deployment/checkout -n shop --to-revision=6
//	ConfigMap app-config changed 2 min before the failure
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
// one line saying that nothing changed, how far herald knows it, and the
// last rollout before the window. The undo command is not among them
// (Report.Undo).
func (r Report) Lines(also func(ObjectChange) []string) []string {
	var lines []string
	for _, ro := range r.Rollouts {
		lines = append(lines, r.rolloutLine(ro))
	}
	if r.Missing {
		lines = append(lines, "Earlier rollouts in this window are not kept (herald keeps the last few of each workload): see kubectl rollout history; no undo command is given")
	}
	if note := r.undoNote(); note != "" {
		lines = append(lines, note)
	}
	for _, o := range r.Objects {
		line := fmt.Sprintf("%s %s %s %s", o.Kind, clip(o.Name), map[bool]string{true: "created", false: "changed"}[o.Created], r.before(o.At))
		if o.MetaToo && !o.Created {
			line += " (its labels or annotations changed too: its data may not have)"
		}
		if also != nil {
			if others := also(o); len(others) > 0 {
				line += "; " + joinNames(others) + map[bool]string{true: " also reads it and has", false: " also read it and have"}[len(others) == 1] + " been failing since"
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
	return append(lines, r.noChange())
}

// before says when t was, relative to the failure.
func (r Report) before(t time.Time) string {
	if t.After(r.At) {
		return ago(t.Sub(r.At)) + " after the failure began"
	}
	return ago(r.At.Sub(t)) + " before the failure"
}

// joinNames writes "a", "a and b", "a, b and c".
func joinNames(names []string) string {
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// noChange is the line that says nothing changed, how far herald knows
// it, and what it knows of before.
func (r Report) noChange() string {
	switch {
	case r.Refused:
		return "herald keeps no change history for this workload: it records at most a set number of workloads, and more are running"
	case !r.Recorded:
		return "herald keeps no change history for this workload"
	}
	from := r.At.Add(-r.Window)
	notWatched := ""
	if len(r.Unwatched) > 0 {
		notWatched = "; changes to the " + strings.Join(r.Unwatched, "s and ") + "s it reads are not watched"
	}
	switch {
	case r.Since.After(r.At):
		return fmt.Sprintf("herald started watching this workload at %s, after the failure began: what changed before is not known", r.Since.UTC().Format("15:04 UTC"))
	case r.Since.After(from) && !r.SpecWritten.IsZero() && r.SpecWritten.Before(from):
		// The managed fields date the last spec write before the window:
		// no rollout in it, whenever herald started.
		written := "its spec was last written " + r.before(r.SpecWritten)
		if r.SpecBy != "" {
			written += ", by " + r.SpecBy
		}
		if r.Refs == 0 {
			return "No change to this workload in the last " + window(r.Window) + " before the failure (" + written + ")"
		}
		return fmt.Sprintf("No rollout in the last %s before the failure (%s); edits of the ConfigMaps and Secrets it reads before herald started watching at %s are not known",
			window(r.Window), written, r.Since.UTC().Format("15:04 UTC"))
	case r.Since.After(from):
		return fmt.Sprintf("No change seen to this workload since herald started watching it at %s (%s)%s",
			r.Since.UTC().Format("15:04 UTC"), r.before(r.Since), notWatched)
	}
	line := "No change to this workload in the last " + window(r.Window) + " before the failure"
	if r.Last != nil {
		line += " (last rollout " + r.before(r.Last.At) + r.rolloutDetail(*r.Last) + ")"
	}
	return line + notWatched
}

// rolloutDetail is ", revision 7, by argocd" (or "").
func (r Report) rolloutDetail(ro Rollout) string {
	var detail []string
	switch {
	case ro.Revision != "":
		detail = append(detail, "revision "+clip(ro.Revision))
	case ro.Generation > 0 && r.Workload.Kind != "Deployment":
		detail = append(detail, fmt.Sprintf("generation %d", ro.Generation))
	}
	if ro.By != "" {
		detail = append(detail, "by "+ro.By)
	}
	if len(detail) == 0 {
		return ""
	}
	return ", " + strings.Join(detail, ", ")
}

func (r Report) rolloutLine(ro Rollout) string {
	detail := strings.TrimPrefix(r.rolloutDetail(ro), ", ")
	if detail != "" {
		detail = " (" + detail + ")"
	}
	var line string
	switch {
	case ro.Baseline && ro.Created:
		line = "Created " + r.before(ro.At) + detail + ": a new workload"
	case ro.Baseline:
		line = "Changed " + r.before(ro.At) + detail + "; herald started watching it later and cannot say what changed"
		if r.Workload.Kind == "Deployment" && isRevision(ro.Revision) {
			line += ": kubectl rollout history deployment/" + r.Workload.Name + " -n " + r.Workload.Namespace + " --revision=" + ro.Revision
		}
	default:
		line = "Rolled out " + r.before(ro.At) + detail + ": " + ro.Summary.String()
	}
	if ro.ChangeCause != "" {
		line += "; change-cause: " + ro.ChangeCause
	}
	if len(ro.Tools) > 0 {
		line += "; " + strings.Join(ro.Tools, ", ")
	}
	return line
}

// undoNote says what the undo command does not: that a GitOps tool puts
// the rollout back, or that a StatefulSet's broken pod must go first.
func (r Report) undoNote() string {
	if r.Undo == "" || len(r.Rollouts) == 0 {
		return ""
	}
	newest := r.Rollouts[0]
	if tool := gitOps(newest); tool != "" {
		return "Managed by " + tool + ": a kubectl rollout undo is reverted at its next sync; revert the change in Git (or roll back in " + tool + ")"
	}
	if r.Workload.Kind == "StatefulSet" {
		return "After the undo, delete the crash-looping pod: a StatefulSet does not replace a broken pod by itself (forced rollback)"
	}
	return ""
}

// gitOps names the GitOps tool that manages a rollout ("" if none shows).
func gitOps(ro Rollout) string {
	seen := strings.ToLower(ro.By + " " + strings.Join(ro.Tools, " "))
	switch {
	case strings.Contains(seen, "argocd"):
		return "Argo CD"
	case strings.Contains(seen, "fluxcd") || strings.Contains(seen, "kustomize-controller") || strings.Contains(seen, "helm-controller"):
		return "Flux"
	}
	return ""
}

// ago writes a duration as herald's messages do ("40 s", "4 min",
// "3 h 5 min").
func ago(d time.Duration) string { return incident.Duration(d) }

// window writes the window exactly: "30 min", "1 min 30 s".
func window(d time.Duration) string {
	if d < time.Hour && d%time.Minute != 0 && d > time.Minute {
		return fmt.Sprintf("%d min %d s", int(d/time.Minute), int(d%time.Minute/time.Second))
	}
	return incident.Duration(d)
}
