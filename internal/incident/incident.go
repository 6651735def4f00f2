// Package incident turns findings into incidents with a lifecycle, so that
// a problem is announced once when it starts and once when it ends, however
// many times the object changes in between.
package incident

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/herald-k8s/herald/internal/rules"
)

// Transition is what happened to an incident.
type Transition string

const (
	Firing   Transition = "firing"
	Resolved Transition = "resolved"
)

// Incident is one problem on one object (and container), from first sight
// until it is over.
type Incident struct {
	// ID names this occurrence of the problem: the fingerprint and when it
	// was first seen. A problem that resolves and comes back later is a
	// new incident with a new ID, so receivers that drop redeliveries by
	// ID never drop its notifications.
	ID          string
	Fingerprint string
	Rule        string
	Severity    string
	Reason      string
	Object      rules.ObjectRef
	Container   string
	Facts       map[string]string
	Title, Text string
	Sinks       []string
	FirstSeen   time.Time
	LastSeen    time.Time
	// seq is the number of notifications sent so far.
	seq int
}

// Notification is one message about an incident.
type Notification struct {
	Incident   Incident
	Transition Transition
	// Seq counts the incident's notifications from 1; with the
	// fingerprint it is the idempotency key.
	Seq  int
	Time time.Time
}

// ID is the idempotency key receivers use to drop redeliveries: the same
// notification sent twice has the same ID, two different ones never do.
func (n Notification) ID() string {
	return n.Incident.ID + "-" + strconv.Itoa(n.Seq)
}

// Fingerprint identifies the incident a finding belongs to. It is stable
// across herald restarts: it hashes only what names the problem.
func Fingerprint(f rules.Finding) string {
	h := sha256.Sum256([]byte(strings.Join([]string{f.Rule, f.Object.UID, f.Container, f.Reason}, "\x00")))
	return hex.EncodeToString(h[:8])
}

// Tracker holds the open incidents of every object.
type Tracker struct {
	now func() time.Time

	mu       sync.Mutex
	byObject map[string]map[string]*Incident // object key → fingerprint → incident
	// pending holds when a finding that must last for a while was first
	// seen, by object key and fingerprint, until it fires or goes away.
	pending map[string]map[string]time.Time
}

// NewTracker makes an empty tracker; now is the clock (time.Now in
// production).
func NewTracker(now func() time.Time) *Tracker {
	return &Tracker{now: now, byObject: map[string]map[string]*Incident{}, pending: map[string]map[string]time.Time{}}
}

// Reconcile compares what the rules find on one object now with the
// incidents open for it, and returns the notifications that follow, and
// when the object should be looked at again even if it does not change
// (0: no need): a finding waiting out its rule's for:, or one that ends
// by itself. An object that is gone has no findings: its incidents
// resolve. Callers never reconcile the same object concurrently (the work
// queue ensures it); different objects may be reconciled in parallel.
func (t *Tracker) Reconcile(object string, findings []rules.Finding) (notes []Notification, recheck time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	open := t.byObject[object]
	pending := t.pending[object]
	seen := map[string]bool{}
	soonest := func(d time.Duration) {
		if d > 0 && (recheck == 0 || d < recheck) {
			recheck = d
		}
	}
	for _, f := range findings {
		fp := Fingerprint(f)
		seen[fp] = true
		soonest(f.RecheckAfter)
		if inc, ok := open[fp]; ok {
			inc.LastSeen, inc.Facts = now, maps.Clone(f.Facts)
			continue
		}
		if f.Sustaining {
			continue
		}
		if f.For > 0 {
			start := f.Since
			if start.IsZero() {
				if pending == nil {
					pending = map[string]time.Time{}
					t.pending[object] = pending
				}
				if _, ok := pending[fp]; !ok {
					pending[fp] = now
				}
				start = pending[fp]
			}
			if wait := start.Add(f.For).Sub(now); wait > 0 {
				soonest(wait)
				continue
			}
		}
		delete(pending, fp)
		inc := &Incident{
			ID:          fp + "-" + strconv.FormatInt(now.UnixMilli(), 36),
			Fingerprint: fp, Rule: f.Rule, Severity: f.Severity, Reason: f.Reason,
			Object: f.Object, Container: f.Container, Facts: maps.Clone(f.Facts),
			Title: f.Title, Text: f.Text, Sinks: f.Sinks,
			FirstSeen: now, LastSeen: now,
		}
		if open == nil {
			open = map[string]*Incident{}
			t.byObject[object] = open
		}
		open[fp] = inc
		notes = append(notes, inc.notify(Firing, now))
	}
	for fp := range pending {
		if !seen[fp] {
			delete(pending, fp)
		}
	}
	if len(pending) == 0 {
		delete(t.pending, object)
	}
	for fp, inc := range open {
		if !seen[fp] {
			notes = append(notes, inc.notify(Resolved, now))
			delete(open, fp)
		}
	}
	if len(open) == 0 {
		delete(t.byObject, object)
	}
	return notes, recheck
}

// Open counts the open incidents.
func (t *Tracker) Open() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, m := range t.byObject {
		n += len(m)
	}
	return n
}

func (inc *Incident) notify(tr Transition, now time.Time) Notification {
	inc.seq++
	snapshot := *inc
	snapshot.Facts = maps.Clone(inc.Facts)
	return Notification{Incident: snapshot, Transition: tr, Seq: inc.seq, Time: now}
}
