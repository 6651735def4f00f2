package incident

import (
	"maps"
	"slices"
	"strings"
	"time"
)

// What the tracker tells the rest of herald: queries for metrics, the
// start-up reconcile and reloads, and the state the ledger persists and
// restores.

// MemberKeys lists every object key some open incident counts as
// affected, or some wait is for: at start they are reconciled even if they
// are no longer in the cache (deleted while herald was down), so their
// incidents resolve and their waits end.
func (t *Tracker) MemberKeys() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	keys := slices.Collect(maps.Keys(t.byObject))
	for object := range t.waits.byObject {
		if _, ok := t.byObject[object]; !ok {
			keys = append(keys, object)
		}
	}
	slices.Sort(keys)
	return keys
}

// RuleRemoved is the change a resolution says when its rule was removed
// by a configuration reload.
const RuleRemoved = "rule removed"

// RuleChanged marks the open incidents of rules a reload changed: one
// that resolves before its problem is seen again resolved because of the
// change, and its message says so rather than claim a recovery.
func (t *Tracker) RuleChanged(changed map[string]bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, inc := range t.open {
		if changed[inc.Rule] {
			inc.ruleChanged = true
		}
	}
}

// ResolveRules resolves the open incidents of removed rules (a
// configuration reload took them away): each announced one says
// "resolved: rule removed", so no message stays red forever; one never
// announced (pending, muted from the start) just goes.
func (t *Tracker) ResolveRules(removed map[string]bool, now time.Time) []Notification {
	t.mu.Lock()
	defer t.mu.Unlock()
	var notes []Notification
	for fp, inc := range t.open {
		if !removed[inc.Rule] {
			continue
		}
		for m := range inc.members {
			t.unindex(m, fp)
			t.waits.settle(m, fp, false)
		}
		t.setOpen(inc, false)
		t.pacer.drop(inc)
		inc.ResolvingSince = time.Time{}
		inc.ResolvedAt, inc.Ended = now, EndedRuleRemoved
		t.retire(inc)
		if n, ok := t.notify(inc, Resolved, now, RuleRemoved); ok {
			notes = append(notes, n)
		}
		t.touch(inc)
	}
	if t.waits.endRules(removed) {
		t.version++
	}
	slices.SortFunc(notes, func(a, b Notification) int { return strings.Compare(a.Incident.ID, b.Incident.ID) })
	return notes
}

// OpenByRule counts the open incidents of each rule.
func (t *Tracker) OpenByRule() map[string]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.countOpen(func(inc *Incident) string { return inc.Rule }, nil)
}

// Open counts the open incidents.
func (t *Tracker) Open() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.open)
}

// Version changes whenever something worth persisting changed.
func (t *Tracker) Version() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.version
}

// Snapshot returns copies of every incident for the ledger, dropping
// resolved ones past the retention period whose deliveries are done, and
// the waits of findings not yet announced (waits.go).
func (t *Tracker) Snapshot() ([]Incident, uint64) {
	shared, version := t.SharedSnapshot()
	out := make([]Incident, len(shared))
	for i, inc := range shared {
		out[i] = *inc
	}
	return out, version
}

// SharedSnapshot is Snapshot without the copy: the incidents it returns
// are the ledger's own copies, shared with the next snapshots while they
// do not change, and must not be modified. The ledger writer reads these:
// copying every retained incident each second was the largest part of a
// flush.
func (t *Tracker) SharedSnapshot() ([]*Incident, uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.forgetResolved(t.opts.Now(), t.opts.Retention)
	all := t.order.sorted(append(t.all(), t.waits.records()...))
	out := make([]*Incident, len(all))
	for i, inc := range all {
		out[i] = inc.shared()
	}
	return out, t.version
}

// Restore loads incidents from the ledger into an empty tracker.
func (t *Tracker) Restore(incs []Incident) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range incs {
		inc := incs[i]
		if t.waits.restore(&inc) {
			continue
		}
		inc.Facts = maps.Clone(inc.Facts)
		t.occurrences[inc.Fingerprint] = max(t.occurrences[inc.Fingerprint], inc.Occurrence)
		if !inc.ResolvedAt.IsZero() {
			t.retire(&inc)
			continue
		}
		if !inc.restoreMembers() {
			continue // nothing could ever find it again, so it could never resolve
		}
		t.setOpen(&inc, true)
		for m := range inc.members {
			t.index(m, inc.Fingerprint)
		}
		t.pacer.restore(&inc)
		t.muting.restore(&inc)
	}
}
