package incident

import (
	"iter"
	"maps"
	"slices"
	"time"
)

// Muting. A silence, a maintenance window or an inhibiting incident mutes
// notifications, not evaluation (as in Alertmanager): a muted incident
// opens, changes and resolves in the tracker and the ledger as usual, and
// only what would be said is held back. When the mute ends, the incident
// says what is owed then: its firing if it was never announced, one
// update if it changed materially since its last notification, else
// nothing. An incident that resolves while muted and was never announced
// sends nothing at all; one that was announced before the mute sends its
// resolved, so that no message is left saying "firing" about a problem
// that is over.

// muteRecheck is how often every muted incident is asked about again,
// for mutes whose end no event announces (an annotation removed).
const muteRecheck = 10 * time.Second

// InhibitedBy begins the Mute.By of an incident an inhibition mutes.
const InhibitedBy = "inhibited by "

// Mute is why, and until when, an incident's notifications are held back.
type Mute struct {
	// By names what mutes it, for people: "silence shop/deploy-api",
	// "annotation herald.io/silence-until on Deployment shop/api",
	// "window nightly", "inhibited by node-notready Node/n1".
	By string
	// Until is when it ends (zero: not known in advance, as for an
	// inhibition that lasts while its source incident is open).
	Until time.Time
	// Source is the fingerprint of the inhibiting incident (inhibitions
	// only): it is told how many incidents it explains.
	Source string
	// Who asked for it, as the silence says (its createdBy: "slack:U0AB
	// (ana)", "alice"), one line; "" when nobody did (windows,
	// inhibitions) or it does not say.
	Who string
}

// Muter says whether an incident is muted now. open gives the open
// incidents (an inhibition's sources). The tracker asks it with its lock
// held, before each notification and while an incident stays muted: it
// must be quick, must not call back into the tracker, and must keep
// neither inc nor what open yields beyond the call.
type Muter interface {
	Mute(inc *Incident, open Open, now time.Time) (Mute, bool)
}

// Open is what a Muter may read of the open incidents.
type Open interface {
	// All yields every open incident.
	All() iter.Seq[*Incident]
	// WithReason yields the open incidents with that reason, from an
	// index: an inhibition's source names a reason, and scanning every
	// open incident before each notification cost in proportion to the
	// size of a storm.
	WithReason(reason string) iter.Seq[*Incident]
}

// openView is the tracker's Open; t.mu must be held while it is used.
type openView struct{ t *Tracker }

func (v openView) All() iter.Seq[*Incident] { return maps.Values(v.t.open) }

func (v openView) WithReason(reason string) iter.Seq[*Incident] {
	return maps.Values(v.t.openByReason[reason])
}

// addOpen and removeOpen keep t.open and its index by reason together.
func (t *Tracker) addOpen(inc *Incident) {
	if t.open[inc.Fingerprint] == nil {
		t.nsCap.count(inc, 1)
	}
	t.open[inc.Fingerprint] = inc
	byFP := t.openByReason[inc.Reason]
	if byFP == nil {
		byFP = map[string]*Incident{}
		t.openByReason[inc.Reason] = byFP
	}
	byFP[inc.Fingerprint] = inc
}

func (t *Tracker) removeOpen(fp string) {
	if inc := t.open[fp]; inc != nil {
		t.nsCap.count(inc, -1)
		delete(t.openByReason[inc.Reason], fp)
		if len(t.openByReason[inc.Reason]) == 0 {
			delete(t.openByReason, inc.Reason)
		}
	}
	delete(t.open, fp)
}

// notify makes the incident's next notification unless it is muted, in
// which case it records what holds it back and makes none.
func (t *Tracker) notify(inc *Incident, tr Transition, now time.Time, change string) (Notification, bool) {
	if tr == Resolved {
		t.unmute(inc)
		if inc.Seq == 0 { // never announced: nothing to take back
			return Notification{}, false
		}
		return t.record(inc, tr, now, change), true
	}
	if t.opts.Muter != nil {
		if m, ok := t.opts.Muter.Mute(inc, openView{t}, now); ok {
			again := t.muted[inc.Fingerprint] && inc.MutedBy == m.By
			t.mute(inc, m)
			// A repeat falls due at every reconcile while muted (it is
			// never sent): count it once.
			if t.opts.Muted != nil && !(again && tr == Repeat) {
				t.opts.Muted(inc, tr, m)
			}
			return Notification{}, false
		}
	}
	t.unmute(inc)
	if inc.Seq == 0 && (tr == Updated || tr == Repeat) {
		// Never announced (muted from its first sight, and an update
		// held meanwhile fell due as the mute ended): what is owed is
		// its firing, with what it is now.
		tr, change = Firing, ""
	}
	return t.record(inc, tr, now, change), true
}

// mute records m on inc. A held update is dropped: what changed is owed
// when the mute ends, and said then in one update.
func (t *Tracker) mute(inc *Incident, m Mute) {
	if inc.MutedBy != m.By || !inc.MutedUntil.Equal(m.Until) || !inc.HeldUntil.IsZero() || inc.MutedBySource != m.Source || inc.MutedWho != m.Who {
		prev := inc.MutedBySource
		inc.MutedBy, inc.MutedUntil, inc.HeldUntil, inc.MutedBySource, inc.MutedWho = m.By, m.Until, time.Time{}, m.Source, m.Who
		t.touch(inc)
		t.muted[inc.Fingerprint] = true
		t.recount(prev)
		t.recount(m.Source)
	}
	t.pacer.drop(inc)
	t.muted[inc.Fingerprint] = true
}

func (t *Tracker) unmute(inc *Incident) {
	delete(t.muted, inc.Fingerprint)
	if inc.MutedBy != "" {
		prev := inc.MutedBySource
		inc.MutedBy, inc.MutedUntil, inc.MutedBySource, inc.MutedWho = "", time.Time{}, "", ""
		t.touch(inc)
		t.recount(prev)
	}
}

// recount sets how many incidents the inhibiting incident fp explains,
// and holds an update of it (gathered, paced) when that number grew: its
// message then says how many it covers. Fewer (they resolved, or it did)
// is not news worth a message.
func (t *Tracker) recount(fp string) {
	src := t.open[fp]
	if fp == "" || src == nil {
		return
	}
	n := 0
	for m := range t.muted {
		if inc := t.open[m]; inc != nil && inc.MutedBySource == fp {
			n++
		}
	}
	if n == src.Covers {
		return
	}
	grew := n > src.Covers
	src.Covers = n
	t.touch(src)
	if grew && src.Seq > 0 && src.MutedBy == "" && src.HeldUntil.IsZero() {
		now := t.opts.Now()
		t.pacer.holdSoon(src, now)
	}
}

// ReleaseMuted asks again about every muted incident and, for those no
// longer muted, makes what is owed: the firing of an incident never
// announced, or one update saying what changed while it was muted. When
// the silences changed, it also says of each announced incident a
// silence now covers that it is silenced. The leader calls it
// periodically (handlers), so a silence's start and end are acted on
// within that period even if no object changes.
func (t *Tracker) ReleaseMuted(now time.Time) []Notification {
	t.mu.Lock()
	defer t.mu.Unlock()
	changed := false
	if t.opts.MuteVersion != nil {
		v := t.opts.MuteVersion(now)
		changed, t.muteVersion = v != t.muteVersion, v
	}
	var notes []Notification
	if changed {
		notes = t.noteSilenced(now)
	}
	// Asking the Muter costs cache lookups per incident: each tick asks
	// only about mutes that may have ended (their time passed, their
	// source is gone, the silences changed); all of them every
	// muteRecheck, for what no event announces (an annotation removed).
	full := changed || now.Sub(t.mutesChecked) >= muteRecheck
	if full {
		t.mutesChecked = now
	}
	for _, fp := range slices.Sorted(maps.Keys(t.muted)) {
		inc := t.open[fp]
		if inc == nil {
			delete(t.muted, fp)
			continue
		}
		ended := !inc.MutedUntil.IsZero() && !now.Before(inc.MutedUntil)
		sourceGone := inc.MutedBySource != "" && t.open[inc.MutedBySource] == nil
		if !full && !ended && !sourceGone {
			continue
		}
		if t.opts.Muter != nil {
			if m, ok := t.opts.Muter.Mute(inc, openView{t}, now); ok {
				t.mute(inc, m) // it may now be another silence, or a later end
				continue
			}
		}
		was, said := inc.MutedBy, inc.LastTransition == Silenced
		t.unmute(inc)
		switch {
		case inc.Seq == 0:
			notes = append(notes, t.record(inc, Firing, now, ""))
		case material(inc) || said:
			// The channel was told "silenced": it is told the silence
			// ended, even when nothing else changed.
			n := t.record(inc, Updated, now, change(inc))
			if said {
				n.Unmuted = was
				inc.Pending[len(inc.Pending)-1].Unmuted = was
			}
			notes = append(notes, n)
		}
	}
	return notes
}

// noteSilenced makes a Silenced notification for each announced, open,
// unmuted incident that a silence, annotation or window now mutes; called
// only when MuteVersion moved, so the incidents are not asked every tick.
// Inhibitions say nothing here: they mute what their source explains,
// and the source's own message is the news.
func (t *Tracker) noteSilenced(now time.Time) []Notification {
	if t.opts.Muter == nil {
		return nil
	}
	var notes []Notification
	for _, fp := range slices.Sorted(maps.Keys(t.open)) {
		inc := t.open[fp]
		if inc.Seq == 0 || inc.MutedBy != "" || !inc.ResolvingSince.IsZero() {
			continue
		}
		m, ok := t.opts.Muter.Mute(inc, openView{t}, now)
		if !ok || m.Source != "" {
			continue
		}
		t.mute(inc, m)
		notes = append(notes, t.record(inc, Silenced, now, m.String()))
	}
	return notes
}

// String says what mutes and until when, for people.
func (m Mute) String() string {
	if m.Until.IsZero() {
		return m.By
	}
	return "silenced until " + m.Until.UTC().Format("2006-01-02 15:04 MST") + " (" + m.By + ")"
}

// MutedBy counts the open incidents held back now, by what mutes them
// (Mute.By).
func (t *Tracker) MutedBy() map[string]int {
	return t.countMuted(func(inc *Incident) string { return inc.MutedBy })
}

// MutedByRule counts the open incidents held back now, by rule.
func (t *Tracker) MutedByRule() map[string]int {
	return t.countMuted(func(inc *Incident) string { return inc.Rule })
}

func (t *Tracker) countMuted(by func(*Incident) string) map[string]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[string]int{}
	for fp := range t.muted {
		if inc := t.open[fp]; inc != nil {
			out[by(inc)]++
		}
	}
	return out
}
