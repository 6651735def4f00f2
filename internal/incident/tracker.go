package incident

import (
	"maps"
	"strconv"
	"sync"
	"time"

	"github.com/herald-k8s/herald/internal/rules"
)

// Options tune a Tracker.
type Options struct {
	// Now is the clock (time.Now in production).
	Now func() time.Time
	// HoldDown is how long a problem must stay gone before it resolves.
	HoldDown time.Duration
	// Retention is how long resolved incidents are kept (for deliveries
	// still pending and for the ledger's record).
	Retention time.Duration
	// Flapping keeps open incidents whose problem keeps coming back.
	Flapping FlapOptions
	// Coalesced is called for every change merged into a held update
	// (nil: not counted).
	Coalesced func(rule string)
	// Muter says whether an incident's notifications are muted now (nil:
	// never); Muted is told of each notification it held back.
	Muter Muter
	Muted func(inc *Incident, tr Transition, m Mute)
	// MuteVersion changes when what the Muter knows changes in a way
	// that may newly mute an announced incident (a silence added, one
	// starting); nil: never looked for.
	MuteVersion func(now time.Time) uint64
	// MaxOpenPerNamespace caps the open incidents of one namespace; a
	// problem beyond it joins the namespace's overflow incident
	// (overflow.go). 0: no cap.
	MaxOpenPerNamespace int
}

// Tracker holds every incident: open ones, and resolved ones for the
// retention period. It owns the incidents and their identity (its book);
// each policy that decides whether and when to speak is a stage of its
// own, with its own state, consulted in the order the package doc gives.
type Tracker struct {
	opts Options

	mu sync.Mutex
	// book is the incidents and their identity (book.go).
	book
	// waits holds findings back until they have lasted their rule's
	// for:, and knows which members are settling (waits.go).
	waits waits
	// nsCap caps the open incidents of a namespace (overflow.go).
	nsCap namespaceCap
	// flapping keeps an incident open while its problem keeps coming back
	// (flapping.go).
	flapping
	// pacer holds updates back until their interval has passed
	// (pacing.go); ReleaseHeld and NextHeld are its.
	pacer
	// muting holds back what silences, windows and inhibitions mute
	// (mute.go); ReleaseMuted, MutedBy and MutedByRule are its.
	muting
	// deliveries keeps which sinks still owe what (delivery.go).
	deliveries
	// order keeps the ledger's snapshots in order (snaporder.go).
	order snapshotOrder
}

// NewTracker makes an empty tracker.
func NewTracker(opts Options) *Tracker {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	t := &Tracker{opts: opts, book: newBook(), waits: newWaits(), nsCap: newNamespaceCap(opts.MaxOpenPerNamespace),
		flapping: flapping{cfg: opts.Flapping}, pacer: newPacer(), muting: newMuting(opts)}
	t.pacer.t, t.muting.t, t.deliveries.t, t.flapping.t = t, t, t, t
	return t
}

// Reconcile compares what the rules find on one object now with the
// incidents it belongs to, and returns the notifications that follow, and
// when the object should be looked at again even if it does not change
// (0: no need): a finding waiting out its rule's for:, a resolve hold-down,
// a repeat, or a finding that ends by itself. An object that is gone has
// no findings. Callers never reconcile the same object concurrently (the
// work queue ensures it); different objects may be reconciled in parallel.
func (t *Tracker) Reconcile(object string, findings []rules.Finding) (notes []Notification, recheck time.Duration) {
	return t.reconcile(object, findings, false)
}

// ReconcileGone is Reconcile for an object that no longer exists. Its
// own incidents resolve without the hold-down: an object that is gone
// cannot have the problem again (a replacement has a new UID, so a new
// incident). A workload's incident still waits it out, for the pod that
// replaces this one.
func (t *Tracker) ReconcileGone(object string) (notes []Notification, recheck time.Duration) {
	return t.reconcile(object, nil, true)
}

func (t *Tracker) reconcile(object string, findings []rules.Finding, gone bool) (notes []Notification, recheck time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.opts.Now()
	soonest := func(d time.Duration) {
		if d > 0 && (recheck == 0 || d < recheck) {
			recheck = d
		}
	}
	seen := map[string]bool{}
	for _, f := range findings {
		fp := Fingerprint(f)
		seen[fp] = true
		soonest(f.RecheckAfter)
		if inc, ok := t.open[fp]; ok {
			if n, ok := t.continueIncident(inc, object, f, now, soonest); ok {
				notes = append(notes, n)
			}
			continue
		}
		if f.Sustaining {
			continue
		}
		left, began := t.waits.left(object, fp, f, now)
		if began != nil {
			t.touch(began)
		}
		if left > 0 {
			soonest(left)
			continue
		}
		if t.nsCap.full(f) {
			ofp, n, ok := t.nsCap.join(t, object, f, now)
			seen[ofp] = true
			soonest(overflowRecheck)
			if ok {
				notes = append(notes, n)
			}
			continue
		}
		if n, ok := t.openIncident(object, fp, f, now); ok {
			notes = append(notes, n)
		}
	}
	if t.waits.keepOnly(object, seen) {
		t.version++ // the ledger no longer holds them
	}
	for fp := range t.byObject[object] {
		if seen[fp] {
			continue
		}
		if n, ok := t.leave(object, fp, gone, now, soonest); ok {
			notes = append(notes, n)
		}
	}
	return notes, recheck
}

// continueIncident records that object still has the problem of an open
// incident, and says whether that is worth an update or a repeat.
func (t *Tracker) continueIncident(inc *Incident, object string, f rules.Finding, now time.Time, soonest func(time.Duration)) (Notification, bool) {
	if !inc.ResolvingSince.IsZero() {
		inc.ResolvingSince = time.Time{} // back within the hold-down: same incident
		t.touch(inc)
	}
	t.waits.settle(object, inc.Fingerprint, f.Settling)
	joined := false
	if !inc.hasMember(object) {
		if f.Sustaining && inc.Grouped {
			return Notification{}, false // not newly affected, only not recovered
		}
		inc.addMember(object)
		t.index(object, inc.Fingerprint)
		t.touch(inc)
		joined = true
	}
	// The rule may have been reloaded: its current settings and sinks
	// apply from now on, and it still finds the problem.
	inc.ruleChanged = false
	inc.repeat, inc.restartStep, inc.updateEvery, inc.Sinks, inc.Channel = f.Repeat, f.RestartStep, f.UpdateInterval, f.Sinks, f.Channel
	inc.Route, inc.Dest, inc.Mentions = f.Route, f.Dest, f.Mentions
	inc.NoContext, inc.NoLogs, inc.RunbookURL, inc.Links = f.NoContext, f.NoLogs, f.RunbookURL, f.Links
	if inc.Grouped {
		inc.Total = max(f.GroupTotal, inc.MemberCount)
	}
	switch {
	case inc.Grouped && inc.unseen == 0 && inc.MemberCount != inc.NotifiedMembers:
		inc.Facts, inc.Text = maps.Clone(f.Facts), f.Text
		return t.pacer.update(inc, now, joined)
	case !inc.Grouped && inc.restartStep > 0 && restarts(f.Facts)-inc.NotifiedRestarts >= inc.restartStep:
		rose := restarts(f.Facts) != restarts(inc.Facts)
		inc.Facts, inc.Title, inc.Text = maps.Clone(f.Facts), f.Title, f.Text
		return t.pacer.update(inc, now, rose)
	case inc.repeat > 0 && !t.Acks().quietsRepeat(inc):
		if wait := inc.LastNotified.Add(inc.repeat).Sub(now); wait > 0 {
			soonest(wait)
			return Notification{}, false
		}
		inc.Facts, inc.Text = maps.Clone(f.Facts), f.Text
		return t.notify(inc, Repeat, now, "")
	}
	return Notification{}, false
}

func (t *Tracker) openIncident(object, fp string, f rules.Finding, now time.Time) (Notification, bool) {
	if t.waits.end(object, fp) {
		t.version++
	}
	occ := t.nextOccurrence(fp)
	inc := &Incident{
		Starts:      t.flapping.starts(t.lastOf(fp), now),
		ID:          fp + "-" + strconv.Itoa(occ),
		Occurrence:  occ,
		Fingerprint: fp, Rule: f.Rule, Severity: f.Severity, Reason: f.Reason,
		Object: f.Object, Container: f.Container, Facts: maps.Clone(f.Facts),
		Title: f.Title, Text: f.Text, Sinks: f.Sinks, FirstSeen: now,
		repeat: f.Repeat, restartStep: f.RestartStep, updateEvery: f.UpdateInterval, Channel: f.Channel,
		Route: f.Route, Dest: f.Dest, Mentions: f.Mentions,
		NoContext: f.NoContext, NoLogs: f.NoLogs, RunbookURL: f.RunbookURL, Links: f.Links,
	}
	if f.GroupByWorkload && f.Group != nil {
		inc.Grouped, inc.Object, inc.Total = true, *f.Group, max(f.GroupTotal, 1)
	}
	inc.addMember(object)
	t.setOpen(inc, true)
	t.index(object, fp)
	t.waits.settle(object, fp, f.Settling)
	return t.notify(inc, Firing, now, "")
}

// leave records that object no longer has the problem of incident fp.
func (t *Tracker) leave(object, fp string, gone bool, now time.Time, soonest func(time.Duration)) (Notification, bool) {
	// A member that was settling has already waited out its settle time:
	// that wait stands in for the hold-down.
	settled := t.waits.settled(object, fp)
	t.waits.settle(object, fp, false)
	inc, ok := t.open[fp]
	if !ok {
		t.unindex(object, fp)
		return Notification{}, false
	}
	if inc.removeMember(object) {
		t.touch(inc)
	}
	if inc.MemberCount > 0 && len(inc.members) == 0 {
		// Only members restored from the ledger and not seen yet are
		// left: the start-up reconcile will tell (MembersSeen). The
		// object stays indexed, so this incident is looked at again.
		soonest(unseenRecheck)
		return Notification{}, false
	}
	if inc.MemberCount > 0 {
		t.unindex(object, fp)
		// Not while restored members are unseen: MembersSeen says it
		// all at once.
		if inc.Grouped && inc.unseen == 0 && inc.MemberCount != inc.NotifiedMembers {
			return t.pacer.update(inc, now, true)
		}
		return Notification{}, false
	}
	holdDown := t.opts.HoldDown
	switch {
	case gone && !inc.Grouped:
		holdDown = 0
	case inc.Flapping:
		holdDown = t.flapping.cfg.Quiet
	case settled:
		holdDown = 0
	}
	if inc.ResolvingSince.IsZero() {
		inc.ResolvingSince = now
		t.touch(inc)
	}
	if wait := inc.ResolvingSince.Add(holdDown).Sub(now); wait > 0 {
		soonest(wait) // object stays indexed so the recheck finds it
		return Notification{}, false
	}
	if change, ok := t.flapping.mark(inc, now); ok {
		t.touch(inc)
		// Quiet counts from when the problem went, as a hold-down does.
		soonest(max(inc.ResolvingSince.Add(t.flapping.cfg.Quiet).Sub(now), time.Second))
		return t.notify(inc, Updated, now, change)
	}
	t.unindex(object, fp)
	t.setOpen(inc, false)
	inc.ResolvedAt, inc.Ended = now, EndedRecovered
	switch {
	case gone:
		inc.Ended = EndedDeleted
	case inc.ruleChanged:
		inc.Ended = EndedRuleChanged
	}
	t.retire(inc)
	return t.notify(inc, Resolved, now, "")
}

// setOpen adds inc to the open incidents or takes it out, and keeps the
// stages that count them in step: the namespace cap, and muting's index
// by reason.
func (t *Tracker) setOpen(inc *Incident, open bool) {
	fp := inc.Fingerprint
	was := t.open[fp]
	if open {
		if was == nil {
			t.nsCap.count(inc, 1)
		}
		t.open[fp] = inc
		t.muting.opened(inc)
		return
	}
	if was != nil {
		t.nsCap.count(was, -1)
		t.muting.closed(was)
	}
	delete(t.open, fp)
}
