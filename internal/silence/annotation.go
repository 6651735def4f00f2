package silence

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"

	"github.com/herald-k8s/herald/internal/incident"
)

// annotated is one silence-until annotation found on an object: on is
// the object ("Pod/shop/api-0", "Namespace/batch").
type annotated struct{ on, value string }

// by is what a mute by a names, for people: which annotation, on which
// object, and when the value asked for more than herald grants.
func (a annotated) by(asked time.Time, capped bool, max time.Duration) string {
	by := "annotation " + Annotation + " on " + a.on
	if capped {
		by += fmt.Sprintf("; it asks until %s, capped at %s", asked.UTC().Format(time.RFC3339), days(max))
	}
	return by
}

// days says a duration for people: "30 days", "36h0m0s".
func days(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		if n := d / (24 * time.Hour); n != 1 {
			return fmt.Sprintf("%d days", n)
		}
		return "1 day"
	}
	return d.String()
}

// maxAnchors bounds what annotationClock remembers: objects (each with
// its value) herald was asked about. Past it, those not asked about for
// longest are forgotten first.
const maxAnchors = 10000

// annotationClock remembers when herald first saw each silence-until
// value on each object: an annotation has no time of writing of its own,
// so herald's first sight is where its cap counts from (a Silence counts
// from its start). A new value is a new annotation: that is how one is
// renewed, as a Silence is renewed by a new one.
type annotationClock struct {
	mu   sync.Mutex
	seen map[annotated]*anchor
}

type anchor struct{ first, last time.Time }

func newAnnotationClock() *annotationClock {
	return &annotationClock{seen: map[annotated]*anchor{}}
}

// firstSeen is when a was first seen (now, if never before); at, when
// not zero, is an earlier sighting herald recorded elsewhere (a mute
// kept in the ledger across a restart).
func (c *annotationClock) firstSeen(a annotated, now, at time.Time) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	an := c.seen[a]
	if an == nil {
		if len(c.seen) >= maxAnchors {
			c.forgetOldest()
		}
		an = &anchor{first: now}
		c.seen[a] = an
	}
	if !at.IsZero() && at.Before(an.first) {
		an.first = at
	}
	an.last = now
	return an.first
}

func (c *annotationClock) forgetOldest() {
	var oldest annotated
	var at time.Time
	for a, an := range c.seen {
		if at.IsZero() || an.last.Before(at) {
			oldest, at = a, an.last
		}
	}
	delete(c.seen, oldest)
}

// annotationMute is what a mutes at now, given inc (whose recorded mute
// keeps the cap across restarts): until when, capped at max from when
// herald first saw it, and the Mute.By naming it. ok is false when a is
// not a time (logged once) or does not mute now.
func (m *Muter) annotationMute(a annotated, inc *incident.Incident, max time.Duration, now time.Time) (incident.Mute, bool) {
	asked, ok := m.until(a)
	if !ok || !now.Before(asked) {
		return incident.Mute{}, false
	}
	cappedBy := a.by(asked, true, max)
	var recorded time.Time
	if inc != nil && inc.MutedBy == cappedBy && !inc.MutedUntil.IsZero() {
		recorded = inc.MutedUntil.Add(-max) // its cap, counted back to when it was first seen
	}
	first := m.clock.firstSeen(a, now, recorded)
	until, capped := asked, false
	if limit := first.Add(max); until.After(limit) {
		until, capped = limit, true
	}
	if !now.Before(until) {
		return incident.Mute{}, false
	}
	if capped {
		return incident.Mute{By: cappedBy, Until: until}, true
	}
	return incident.Mute{By: a.by(asked, false, max), Until: until}, true
}

// until reads a's value, logging a value that is not a time once (by
// object and a digest of the value); past maxAnchors such values, once a
// minute at most.
func (m *Muter) until(a annotated) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339, a.value)
	if err == nil {
		return t, true
	}
	key := badAnnotation{on: a.on, value: sha256.Sum256([]byte(a.value))}
	m.mu.Lock()
	log := false
	switch {
	case m.badAnnotations[key]:
	case len(m.badAnnotations) < maxAnchors:
		m.badAnnotations[key], log = true, true
	case time.Since(m.badLoggedAt) >= time.Minute:
		m.badLoggedAt, log = time.Now(), true
	}
	m.mu.Unlock()
	if log {
		m.logger.Warn("ignoring an annotation that is not an RFC 3339 time (e.g. 2026-11-24T08:00:00Z)",
			"annotation", Annotation, "on", a.on, "value", shownValue(a.value))
	}
	return time.Time{}, false
}

// badAnnotation is an unreadable annotation value already logged: the
// object, and a digest of the value (which can be 256 KB).
type badAnnotation struct {
	on    string
	value [sha256.Size]byte
}

// shownValue is what the log shows of a value that is not a time: the
// value itself only when it is short and made of what a time is written
// with (a typo in a date), else its size. Whoever can annotate an object
// writes it, and a log line is no place for what they pasted.
func shownValue(v string) string {
	const maxShown = 40
	if len(v) <= maxShown && strings.Trim(v, "0123456789-+:.TtZz ") == "" {
		return v
	}
	return fmt.Sprintf("(%d bytes, not shown: not a time)", len(v))
}

// ObserveAnnotations makes a silence-until annotation added, changed or
// removed on one of inf's objects move Version, as a Silence created
// does: the tracker then asks about its open incidents again, says of
// each announced one an annotation now mutes that it is silenced (which
// annotation, on which object, until when), and sends what is owed by
// those one no longer mutes. Without it an annotation is read at the
// incident's next notification. Call it before inf starts.
func (m *Muter) ObserveAnnotations(inf cache.SharedIndexInformer) error {
	value := func(obj any) string {
		if o, err := meta.Accessor(obj); err == nil {
			return o.GetAnnotations()[Annotation]
		}
		return ""
	}
	moved := func() {
		m.mu.Lock()
		m.generation++
		m.mu.Unlock()
	}
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if value(obj) != "" {
				moved()
			}
		},
		UpdateFunc: func(old, obj any) {
			if value(old) != value(obj) {
				moved()
			}
		},
	})
	return err
}
