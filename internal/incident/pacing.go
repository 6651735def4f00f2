package incident

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Update pacing. An incident's first notification goes out at once; a
// material change after it (more pods of the workload, the restart count
// up by the rule's step) is held until the rule's update interval has
// passed since the last notification (and for a short gather time at
// least), and every change meanwhile is merged into it: the
// state at that time wins, and the update says what changed since the
// last notification ("2 → 10 of 10 pods"). A resolved (or any other
// notification) says it all and makes the held update moot. Pacing is
// per incident, so one incident's held update never delays another's
// first alert.

// gather is the least time a paced update waits, even when the last
// notification is older than the interval: the pods of a workload that
// recover (or crash) together change the incident within moments, and
// one update says it all.
const gather = 2 * time.Second

// pacer is the stage that holds an incident's updates back until its
// update interval has passed. It keeps which open incidents have an
// update held (the incident's HeldUntil says until when, and the ledger
// keeps that).
type pacer struct {
	held map[string]bool // fingerprint → an update is held
	t    *Tracker        // to say what falls due (ReleaseHeld)
}

func newPacer() pacer { return pacer{held: map[string]bool{}} }

// hold decides an update of inc at now: send it now (true), or hold it
// until its interval has passed (HeldUntil set; newly says the incident
// changed for the ledger).
func (p *pacer) hold(inc *Incident, now time.Time) (sendNow, newly bool) {
	every := inc.updateEvery
	due := inc.HeldUntil
	if due.IsZero() {
		due = later(inc.LastNotified.Add(every), now.Add(min(every, gather)))
	}
	if every <= 0 || !due.After(now) {
		return true, false
	}
	if !inc.HeldUntil.IsZero() {
		return false, false
	}
	inc.HeldUntil = due
	p.held[inc.Fingerprint] = true
	return false, true
}

// holdSoon holds an update of inc for a change that is not its own (an
// incident it explains opened): at its interval, and a gather time at
// least.
func (p *pacer) holdSoon(inc *Incident, now time.Time) {
	inc.HeldUntil = later(inc.LastNotified.Add(inc.updateEvery), now.Add(gather))
	p.held[inc.Fingerprint] = true
}

// drop forgets inc's held update: it was said, it is moot, or a mute took
// it (what changed is owed when the mute ends).
func (p *pacer) drop(inc *Incident) {
	inc.HeldUntil = time.Time{}
	delete(p.held, inc.Fingerprint)
}

// restore takes back a held update the ledger kept.
func (p *pacer) restore(inc *Incident) {
	if !inc.HeldUntil.IsZero() {
		p.held[inc.Fingerprint] = true
	}
}

// due lists, in fingerprint order, the open incidents whose held update
// is due at now, and forgets the holds of incidents that are gone.
func (p *pacer) due(now time.Time, open map[string]*Incident) []*Incident {
	var out []*Incident
	for _, fp := range slices.Sorted(maps.Keys(p.held)) {
		switch inc := open[fp]; {
		case inc == nil || inc.HeldUntil.IsZero():
			delete(p.held, fp)
		case !inc.HeldUntil.After(now):
			out = append(out, inc)
		}
	}
	return out
}

// next is when the earliest held update is due (zero: none held).
func (p *pacer) next(open map[string]*Incident) time.Time {
	var next time.Time
	for fp := range p.held {
		if inc := open[fp]; inc != nil && (next.IsZero() || inc.HeldUntil.Before(next)) {
			next = inc.HeldUntil
		}
	}
	return next
}

// update sends an update of inc now, or holds it; changed says whether
// this reconcile changed what the update would say (counted as merged
// when an update is already held).
func (p *pacer) update(inc *Incident, now time.Time, changed bool) (Notification, bool) {
	t := p.t
	sendNow, newly := p.hold(inc, now)
	switch {
	case sendNow:
		return t.notify(inc, Updated, now, change(inc))
	case newly:
		t.touch(inc)
	case changed && t.opts.Coalesced != nil:
		t.opts.Coalesced(inc.Rule)
	}
	return Notification{}, false
}

// ReleaseHeld sends the held updates that are due at now: those whose
// incident still differs from what its last notification said. The
// leader calls it periodically (handlers); nothing else sends them.
func (p *pacer) ReleaseHeld(now time.Time) []Notification {
	t := p.t
	t.mu.Lock()
	defer t.mu.Unlock()
	var notes []Notification
	for _, inc := range p.due(now, t.open) {
		if !material(inc) { // changed back to what was last said: nothing to say
			p.drop(inc)
			t.touch(inc)
			continue
		}
		if n, ok := t.notify(inc, Updated, now, change(inc)); ok {
			notes = append(notes, n)
		}
	}
	return notes
}

// NextHeld is when the earliest held update is due (zero: none held).
func (p *pacer) NextHeld() time.Time {
	t := p.t
	t.mu.Lock()
	defer t.mu.Unlock()
	return p.next(t.open)
}

// material reports whether inc differs from what its last notification
// said in a way worth an update (the hold was made for such a change;
// this checks it still holds).
func material(inc *Incident) bool {
	if inc.Covers != inc.NotifiedCovers {
		return true
	}
	if inc.Grouped {
		return inc.MemberCount != inc.NotifiedMembers
	}
	return restarts(inc.Facts) > inc.NotifiedRestarts
}

// change says what an update changes since the last notification.
func change(inc *Incident) string {
	var parts []string
	switch {
	case inc.Rule == OverflowRule && inc.MemberCount != inc.NotifiedMembers:
		parts = append(parts, fmt.Sprintf("%s → %s held back", Thousands(inc.NotifiedMembers), Thousands(inc.MemberCount)))
	case inc.Grouped && inc.MemberCount != inc.NotifiedMembers:
		parts = append(parts, fmt.Sprintf("%d → %d of %d pods", inc.NotifiedMembers, inc.MemberCount, inc.Total))
	case !inc.Grouped && restarts(inc.Facts) != inc.NotifiedRestarts:
		parts = append(parts, fmt.Sprintf("restarts %d → %d", inc.NotifiedRestarts, restarts(inc.Facts)))
	}
	if inc.Covers != inc.NotifiedCovers {
		parts = append(parts, fmt.Sprintf("explains %d → %d other incidents (muted while it is open)", inc.NotifiedCovers, inc.Covers))
	}
	return strings.Join(parts, "; ")
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
