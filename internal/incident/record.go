package incident

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"
)

// Making a notification: what the incident says, and what the tracker
// keeps of it until every sink has accepted it.

// notify makes the incident's next notification unless it is muted, in
// which case it records what holds it back and makes none.
func (t *Tracker) notify(inc *Incident, tr Transition, now time.Time, change string) (Notification, bool) {
	if tr == Resolved {
		t.muting.unmute(inc)
		if inc.Seq == 0 { // never announced: nothing to take back
			return Notification{}, false
		}
		return t.record(inc, tr, now, change), true
	}
	if m, ok := t.muting.ask(inc, now); ok {
		again := t.muting.muted[inc.Fingerprint] && inc.MutedBy == m.By
		t.muting.mute(inc, m)
		// A repeat falls due at every reconcile while muted (it is
		// never sent): count it once.
		if t.muting.told != nil && !(again && tr == Repeat) {
			t.muting.told(inc, tr, m)
		}
		return Notification{}, false
	}
	t.muting.unmute(inc)
	if inc.Seq == 0 && (tr == Updated || tr == Repeat) {
		// Never announced (muted from its first sight, and an update
		// held meanwhile fell due as the mute ended): what is owed is
		// its firing, with what it is now.
		tr, change = Firing, ""
	}
	return t.record(inc, tr, now, change), true
}

// record makes the incident's next notification and records it as
// pending for every sink until they accept it. It says all there is to
// say now, so an update held back is sent with it, or is moot. Callers go
// through notify, which first asks whether it is muted; only the muting
// stage itself (saying what a mute held back, or that one now holds) and
// an acknowledgement (never muted: Acks.Record) record directly.
func (t *Tracker) record(inc *Incident, tr Transition, now time.Time, change string) Notification {
	t.pacer.drop(inc)
	inc.Seq++
	inc.LastNotified, inc.LastTransition = now, tr
	inc.NotifiedMembers = inc.MemberCount
	inc.NotifiedRestarts = restarts(inc.Facts)
	inc.NotifiedCovers = inc.Covers
	if inc.Grouped && tr != Resolved { // resolved: the title says what it was
		inc.Title = groupTitle(inc)
		t.nsCap.nameMembers(inc)
	}
	inc.Pending = append(inc.Pending, Pending{Seq: inc.Seq, Transition: tr, Change: change, Time: now, Sinks: slices.Clone(inc.Sinks)})
	t.touch(inc)
	return Notification{Incident: snapshot(inc), Transition: tr, Seq: inc.Seq, Time: now, Change: change}
}

func groupTitle(inc *Incident) string {
	title := fmt.Sprintf("%s: %s %s/%s: %d/%d pods", inc.Reason, inc.Object.Kind, inc.Object.Namespace, inc.Object.Name, inc.MemberCount, inc.Total)
	if inc.Container != "" {
		title += " (container " + inc.Container + ")"
	}
	return title
}

func snapshot(inc *Incident) Incident {
	s := *inc
	s.Facts = maps.Clone(inc.Facts)
	s.Refs = maps.Clone(inc.Refs)
	s.Members = slices.Clone(inc.Members)
	if inc.Ack != nil {
		ack := *inc.Ack
		s.Ack = &ack
	}
	s.members = nil
	s.Sinks = slices.Clone(inc.Sinks)
	s.Starts = slices.Clone(inc.Starts)
	s.Pending = nil
	s.snap = nil
	s.listed, s.ordered = 0, 0 // this tracker's snapshot order's, not the copy's
	return s
}

func restarts(facts map[string]string) int {
	n, _ := strconv.Atoi(facts["restartCount"])
	return n
}
