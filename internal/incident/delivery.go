package incident

import (
	"slices"
)

// This file is the tracker's delivery bookkeeping: which sinks have not
// accepted which notification yet, and where a sink's message about an
// incident is.

// deliveries is the tracker's delivery bookkeeping: what each incident
// still owes which sink (its Pending, persisted with it), and the sinks'
// references to their messages.
type deliveries struct{ t *Tracker }

// Delivered records that sink accepted n; a digest counts for every
// notification it summarises.
func (d deliveries) Delivered(n Notification, sink string) {
	if n.Transition == Digest {
		for _, each := range n.Digest {
			d.Delivered(each, sink)
		}
		return
	}
	t := d.t
	t.mu.Lock()
	defer t.mu.Unlock()
	inc := t.byID(n.Incident.ID)
	if inc == nil {
		return
	}
	for i := range inc.Pending {
		p := &inc.Pending[i]
		if p.Seq != n.Seq {
			continue
		}
		if j := slices.Index(p.Sinks, sink); j >= 0 {
			p.Sinks = slices.Delete(p.Sinks, j, j+1)
			t.touch(inc)
		}
	}
	inc.Pending = slices.DeleteFunc(inc.Pending, func(p Pending) bool { return len(p.Sinks) == 0 })
}

// Ref returns what sink stored for an incident with SetRef ("" if none).
func (d deliveries) Ref(incidentID, sink string) string {
	t := d.t
	t.mu.Lock()
	defer t.mu.Unlock()
	if inc := t.byID(incidentID); inc != nil {
		return inc.Refs[sink]
	}
	return ""
}

// SetRef stores a sink's reference to its message about an incident; it
// is persisted with the incident, so edits in place survive a restart.
func (d deliveries) SetRef(incidentID, sink, ref string) {
	t := d.t
	t.mu.Lock()
	defer t.mu.Unlock()
	inc := t.byID(incidentID)
	if inc == nil {
		return
	}
	if inc.Refs == nil {
		inc.Refs = map[string]string{}
	}
	inc.Refs[sink] = ref
	t.touch(inc)
}

// Undelivered returns, for every notification some sink has not accepted,
// a copy addressed to just those sinks, oldest first: what a new leader or
// a restarted herald must still send.
func (d deliveries) Undelivered() []Notification {
	t := d.t
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []Notification
	for _, inc := range t.all() {
		for _, p := range inc.Pending {
			s := snapshot(inc)
			s.Sinks = slices.Clone(p.Sinks)
			out = append(out, Notification{Incident: s, Transition: p.Transition, Seq: p.Seq, Time: p.Time, Change: p.Change, Unmuted: p.Unmuted})
		}
	}
	slices.SortFunc(out, func(a, b Notification) int { return a.Time.Compare(b.Time) })
	return out
}

// Announced returns, for every open incident whose last notification was
// not a resolution, that notification (without its crash context, which
// the ledger does not keep): what receivers that must hear of an open
// alert again and again (sinks.Refresher) were last told, for a new
// leader or a restarted herald to keep telling them.
func (d deliveries) Announced() []Notification {
	t := d.t
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []Notification
	for _, inc := range t.open {
		if inc.Seq == 0 || inc.LastTransition == Resolved || inc.LastTransition == "" {
			continue
		}
		out = append(out, Notification{Incident: snapshot(inc), Transition: inc.LastTransition, Seq: inc.Seq, Time: inc.LastNotified})
	}
	slices.SortFunc(out, func(a, b Notification) int { return a.Time.Compare(b.Time) })
	return out
}

// Lookup returns a copy of the open or retained incident id: what an
// action from a message (a button) acts on.
func (d deliveries) Lookup(id string) (Incident, bool) {
	t := d.t
	t.mu.Lock()
	defer t.mu.Unlock()
	inc := t.byID(id)
	if inc == nil {
		return Incident{}, false
	}
	return snapshot(inc), true
}
