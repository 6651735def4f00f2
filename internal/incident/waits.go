package incident

import (
	"slices"
	"time"

	"github.com/herald-k8s/herald/internal/rules"
)

// A finding that must last for a while (a rule's for:) is announced once
// it has lasted that long. Where the object records when the problem
// began (a condition's lastTransitionTime, a container's state), the
// detector says so (Finding.Since) and the wait is timed from that.
// Otherwise the tracker times it from when it first saw the finding, and
// the ledger keeps that instant: a restart or a failover in the middle of
// the wait resumes it rather than beginning it again, so a rolling
// upgrade of herald never delays an alert by a whole for:.
//
// A wait is kept in the ledger as a record of its own: an Incident whose
// Ended is EndedWaiting, whose one member is the object and whose
// FirstSeen is when the wait began. It is written as resolved (its
// ResolvedAt is that instant too), so a herald that does not know waits
// reads it as old history, never as an open problem.

// EndedWaiting marks a ledger record that is a wait, not an incident.
const EndedWaiting = "waiting"

// MaxPersistedWaits bounds the waits the ledger keeps (the oldest): a
// rollout of thousands of pods each pending for a while must not grow the
// ledger past its size. A wait past the bound is timed again after a
// restart, as it was before waits were kept.
const MaxPersistedWaits = 1000

// beginWait returns when object's wait for fp began, beginning it now if
// it has not; t.mu must be held.
func (t *Tracker) beginWait(object, fp string, f rules.Finding, now time.Time) time.Time {
	if w := t.pending[object][fp]; w != nil {
		return w.FirstSeen
	}
	if t.pending[object] == nil {
		t.pending[object] = map[string]*Incident{}
	}
	w := &Incident{ID: fp + "/waiting/" + object, Fingerprint: fp, Rule: f.Rule, Object: f.Object, Members: []string{object},
		FirstSeen: now, ResolvedAt: now, Ended: EndedWaiting}
	t.pending[object][fp] = w
	t.touch(w)
	return now
}

// endWait forgets object's wait for fp (it fired, or the finding went);
// t.mu must be held.
func (t *Tracker) endWait(object, fp string) {
	if _, ok := t.pending[object][fp]; !ok {
		return
	}
	delete(t.pending[object], fp)
	if len(t.pending[object]) == 0 {
		delete(t.pending, object)
	}
	t.version++ // the ledger no longer holds it
}

// waitRecords lists the waits for the ledger, at most MaxPersistedWaits,
// those that began first; t.mu must be held.
func (t *Tracker) waitRecords() []*Incident {
	var out []*Incident
	for _, byFP := range t.pending {
		for _, w := range byFP {
			out = append(out, w)
		}
	}
	if len(out) > MaxPersistedWaits {
		slices.SortFunc(out, func(a, b *Incident) int { return a.FirstSeen.Compare(b.FirstSeen) })
		out = out[:MaxPersistedWaits]
	}
	return out
}

// restoreWait takes a wait record back from the ledger; t.mu must be
// held. It says false if rec is not a wait.
func (t *Tracker) restoreWait(rec *Incident) bool {
	if rec.Ended != EndedWaiting {
		return false
	}
	if len(rec.Members) != 1 || rec.Fingerprint == "" || rec.FirstSeen.IsZero() {
		return true // not one this herald wrote: dropped
	}
	object := rec.Members[0]
	if t.pending[object] == nil {
		t.pending[object] = map[string]*Incident{}
	}
	t.pending[object][rec.Fingerprint] = rec
	return true
}
