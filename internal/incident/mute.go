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

// muting is the stage that holds back what silences, windows and
// inhibitions mute. It keeps which open incidents are muted, an index of
// the open incidents by reason (for the Muter's inhibitions), and when
// the mutes were last asked about.
type muting struct {
	muter Muter
	// told is told of each notification held back (Options.Muted).
	told func(inc *Incident, tr Transition, m Mute)
	// versionAt is Options.MuteVersion.
	versionAt func(now time.Time) uint64
	// muted lists the open incidents whose notifications a silence,
	// window or inhibition holds back (MutedBy).
	muted map[string]bool
	// byReason indexes the open incidents by reason → fingerprint.
	byReason map[string]map[string]*Incident
	// seenVersion is the version announced incidents were last checked
	// at, checked when every muted incident last was.
	seenVersion uint64
	checked     time.Time
	t           *Tracker // to say what is owed when a mute ends
}

func newMuting(opts Options) muting {
	return muting{muter: opts.Muter, told: opts.Muted, versionAt: opts.MuteVersion,
		muted: map[string]bool{}, byReason: map[string]map[string]*Incident{}}
}

// openView is the tracker's Open; the tracker's lock must be held while
// it is used.
type openView struct{ m *muting }

func (v openView) All() iter.Seq[*Incident] { return maps.Values(v.m.t.open) }

func (v openView) WithReason(reason string) iter.Seq[*Incident] {
	return maps.Values(v.m.byReason[reason])
}

// opened and closed keep the index by reason as incidents open and close.
func (m *muting) opened(inc *Incident) {
	byFP := m.byReason[inc.Reason]
	if byFP == nil {
		byFP = map[string]*Incident{}
		m.byReason[inc.Reason] = byFP
	}
	byFP[inc.Fingerprint] = inc
}

func (m *muting) closed(inc *Incident) {
	delete(m.byReason[inc.Reason], inc.Fingerprint)
	if len(m.byReason[inc.Reason]) == 0 {
		delete(m.byReason, inc.Reason)
	}
}

// ask says whether inc is muted now, and by what.
func (m *muting) ask(inc *Incident, now time.Time) (Mute, bool) {
	if m.muter == nil {
		return Mute{}, false
	}
	return m.muter.Mute(inc, openView{m}, now)
}

// restore takes back a mute the ledger kept.
func (m *muting) restore(inc *Incident) {
	if inc.MutedBy != "" {
		m.muted[inc.Fingerprint] = true
	}
}

// mute records m on inc. A held update is dropped: what changed is owed
// when the mute ends, and said then in one update.
func (m *muting) mute(inc *Incident, mu Mute) {
	t := m.t
	if inc.MutedBy != mu.By || !inc.MutedUntil.Equal(mu.Until) || !inc.HeldUntil.IsZero() || inc.MutedBySource != mu.Source || inc.MutedWho != mu.Who {
		prev := inc.MutedBySource
		inc.MutedBy, inc.MutedUntil, inc.HeldUntil, inc.MutedBySource, inc.MutedWho = mu.By, mu.Until, time.Time{}, mu.Source, mu.Who
		t.touch(inc)
		m.muted[inc.Fingerprint] = true
		m.recount(prev)
		m.recount(mu.Source)
	}
	t.pacer.drop(inc)
	m.muted[inc.Fingerprint] = true
}

func (m *muting) unmute(inc *Incident) {
	delete(m.muted, inc.Fingerprint)
	if inc.MutedBy != "" {
		prev := inc.MutedBySource
		inc.MutedBy, inc.MutedUntil, inc.MutedBySource, inc.MutedWho = "", time.Time{}, "", ""
		m.t.touch(inc)
		m.recount(prev)
	}
}

// recount sets how many incidents the inhibiting incident fp explains,
// and holds an update of it (gathered, paced) when that number grew: its
// message then says how many it covers. Fewer (they resolved, or it did)
// is not news worth a message.
func (m *muting) recount(fp string) {
	t := m.t
	src := t.open[fp]
	if fp == "" || src == nil {
		return
	}
	n := 0
	for muted := range m.muted {
		if inc := t.open[muted]; inc != nil && inc.MutedBySource == fp {
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
func (m *muting) ReleaseMuted(now time.Time) []Notification {
	t := m.t
	t.mu.Lock()
	defer t.mu.Unlock()
	changed := false
	if m.versionAt != nil {
		v := m.versionAt(now)
		changed, m.seenVersion = v != m.seenVersion, v
	}
	var notes []Notification
	if changed {
		notes = m.noteSilenced(now)
	}
	// Asking the Muter costs cache lookups per incident: each tick asks
	// only about mutes that may have ended (their time passed, their
	// source is gone, the silences changed); all of them every
	// muteRecheck, for what no event announces (an annotation removed).
	full := changed || now.Sub(m.checked) >= muteRecheck
	if full {
		m.checked = now
	}
	for _, fp := range slices.Sorted(maps.Keys(m.muted)) {
		inc := t.open[fp]
		if inc == nil {
			delete(m.muted, fp)
			continue
		}
		ended := !inc.MutedUntil.IsZero() && !now.Before(inc.MutedUntil)
		sourceGone := inc.MutedBySource != "" && t.open[inc.MutedBySource] == nil
		if !full && !ended && !sourceGone {
			continue
		}
		if mu, ok := m.ask(inc, now); ok {
			m.mute(inc, mu) // it may now be another silence, or a later end
			continue
		}
		was, said := inc.MutedBy, inc.LastTransition == Silenced
		m.unmute(inc)
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
func (m *muting) noteSilenced(now time.Time) []Notification {
	t := m.t
	var notes []Notification
	for _, fp := range slices.Sorted(maps.Keys(t.open)) {
		inc := t.open[fp]
		if inc.Seq == 0 || inc.MutedBy != "" || !inc.ResolvingSince.IsZero() {
			continue
		}
		mu, ok := m.ask(inc, now)
		if !ok || mu.Source != "" {
			continue
		}
		m.mute(inc, mu)
		notes = append(notes, t.record(inc, Silenced, now, mu.String()))
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
func (m *muting) MutedBy() map[string]int {
	return m.count(func(inc *Incident) string { return inc.MutedBy })
}

// MutedByRule counts the open incidents held back now, by rule.
func (m *muting) MutedByRule() map[string]int {
	return m.count(func(inc *Incident) string { return inc.Rule })
}

func (m *muting) count(by func(*Incident) string) map[string]int {
	t := m.t
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.countOpen(by, func(inc *Incident) bool { return m.muted[inc.Fingerprint] })
}
