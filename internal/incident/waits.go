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

// waits is the stage that holds findings back until they have lasted
// their rule's for:. It keeps, by object key and fingerprint, the record
// of each wait in progress; the tracker consults it for a finding with no
// open incident, and ends a wait when the incident opens or the finding
// goes.
//
// It also knows which members are settling: a detector says a finding is
// Settling while the problem is waiting out its own settle time (a crash
// loop briefly healthy); when the finding then goes, that wait stood in
// for the hold-down.
type waits struct {
	byObject map[string]map[string]*Incident
	// settling holds object+"\x00"+fingerprint while the object's last
	// finding was Settling.
	settling map[string]bool
}

func newWaits() waits {
	return waits{byObject: map[string]map[string]*Incident{}, settling: map[string]bool{}}
}

// settle records whether object's finding for fp is settling now.
func (w *waits) settle(object, fp string, on bool) {
	if on {
		w.settling[object+"\x00"+fp] = true
	} else {
		delete(w.settling, object+"\x00"+fp)
	}
}

// settled says whether object's last finding for fp was settling: its
// settle time was the wait, and no hold-down follows.
func (w *waits) settled(object, fp string) bool { return w.settling[object+"\x00"+fp] }

// left says how long f must still last before it may open an incident
// (0: it has lasted long enough), beginning its wait at now if none is in
// progress. began is the new wait's record, for the ledger (nil: none
// began).
func (w *waits) left(object, fp string, f rules.Finding, now time.Time) (left time.Duration, began *Incident) {
	if f.For <= 0 {
		return 0, nil
	}
	start := f.Since // the object's own record of when the problem began
	if start.IsZero() {
		rec := w.byObject[object][fp]
		if rec != nil && rec.Object.UID != f.Object.UID {
			// Another object of the same name (a StatefulSet's pod made
			// again): its wait is its own.
			rec = nil
		}
		if rec == nil {
			if w.byObject[object] == nil {
				w.byObject[object] = map[string]*Incident{}
			}
			rec = &Incident{ID: fp + "/waiting/" + object, Fingerprint: fp, Rule: f.Rule, Object: f.Object, Members: []string{object},
				FirstSeen: now, ResolvedAt: now, Ended: EndedWaiting}
			w.byObject[object][fp] = rec
			began = rec
		}
		start = rec.FirstSeen
	}
	return max(start.Add(f.For).Sub(now), 0), began
}

// end forgets object's wait for fp (it fired, or the finding went), and
// says whether there was one.
func (w *waits) end(object, fp string) bool {
	if _, ok := w.byObject[object][fp]; !ok {
		return false
	}
	delete(w.byObject[object], fp)
	if len(w.byObject[object]) == 0 {
		delete(w.byObject, object)
	}
	return true
}

// endRules ends the waits of the rules a reload removed, and says whether
// any ended.
func (w *waits) endRules(removed map[string]bool) (ended bool) {
	for object, byFP := range w.byObject {
		for fp, rec := range byFP {
			if removed[rec.Rule] {
				ended = w.end(object, fp) || ended
			}
		}
	}
	return ended
}

// keepOnly ends object's waits for findings not in seen, and says whether
// any ended.
func (w *waits) keepOnly(object string, seen map[string]bool) (ended bool) {
	for fp := range w.byObject[object] {
		if !seen[fp] {
			ended = w.end(object, fp) || ended
		}
	}
	return ended
}

// records lists the waits for the ledger, at most MaxPersistedWaits, those
// that began first.
func (w *waits) records() []*Incident {
	var out []*Incident
	for _, byFP := range w.byObject {
		for _, rec := range byFP {
			out = append(out, rec)
		}
	}
	if len(out) > MaxPersistedWaits {
		slices.SortFunc(out, func(a, b *Incident) int { return a.FirstSeen.Compare(b.FirstSeen) })
		out = out[:MaxPersistedWaits]
	}
	return out
}

// restore takes a wait record back from the ledger. It says false if rec
// is not a wait.
func (w *waits) restore(rec *Incident) bool {
	if rec.Ended != EndedWaiting {
		return false
	}
	if len(rec.Members) != 1 || rec.Fingerprint == "" || rec.FirstSeen.IsZero() {
		return true // not one this herald wrote: dropped
	}
	object := rec.Members[0]
	if w.byObject[object] == nil {
		w.byObject[object] = map[string]*Incident{}
	}
	w.byObject[object][rec.Fingerprint] = rec
	return true
}
