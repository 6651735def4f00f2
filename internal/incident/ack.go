package incident

import (
	"context"
	"sync"
	"time"
)

// Acknowledging. Someone says they are on it (Slack's Acknowledge
// button): who and when is recorded on the incident, in the ledger, so a
// restart or a failover keeps it, and every sink hears of it once (an
// Acknowledged notification: Slack edits its message, PagerDuty
// acknowledges its incident). The policy, like PagerDuty's: an
// acknowledged incident stops repeating (the reminder is for an incident
// nobody has taken), while a material change and the resolution are
// still said. A new occurrence of the problem starts unacknowledged.

// Acknowledged says someone took the incident on.
const Acknowledged Transition = "acknowledged"

// Ack is who acknowledged an incident, and when.
type Ack struct {
	// By is the actor as herald knows it: "slack:U0123ABC".
	By string `json:"by"`
	// Name is their name for people (redacted of nothing: a Slack
	// display name; sinks escape it).
	Name string    `json:"name,omitempty"`
	At   time.Time `json:"at"`
	// Key is the interaction that acknowledged it: pressing the button
	// again, or Slack delivering the same press to the next leader, finds
	// it and changes nothing.
	Key string `json:"key,omitempty"`
}

// AckResult is what Acks.Record did.
type AckResult int

const (
	// AckRecorded: the incident is acknowledged now.
	AckRecorded AckResult = iota
	// AckAlready: it was (by this press, or an earlier one): nothing
	// changed.
	AckAlready
	// AckNotOpen: no open incident has that ID (it resolved, or never
	// was): nothing to take on.
	AckNotOpen
)

// Acks is the tracker's acknowledgement policy.
type Acks struct{ t *Tracker }

// Acks returns the tracker's acknowledgement policy.
func (t *Tracker) Acks() Acks { return Acks{t} }

// Record acknowledges the open incident id. On AckRecorded it returns the
// Acknowledged notification to dispatch (pending for every sink, as any
// other, so a new leader still sends it) and the tracker version that
// holds it (Saved.Wait tells when the ledger has it). A muted incident is
// acknowledged all the same: it is a person's act, not news the mute
// holds back.
func (a Acks) Record(id string, ack Ack) (Notification, uint64, AckResult) {
	t := a.t
	t.mu.Lock()
	defer t.mu.Unlock()
	inc := t.byID(id)
	switch {
	case inc == nil || !inc.ResolvedAt.IsZero():
		return Notification{}, t.version, AckNotOpen
	case inc.Ack != nil:
		return Notification{}, t.version, AckAlready
	}
	if ack.At.IsZero() {
		ack.At = t.opts.Now()
	}
	inc.Ack = &ack
	n := t.record(inc, Acknowledged, ack.At, "")
	return n, t.version, AckRecorded
}

// quietsRepeat says an acknowledged incident sends no repeat.
func (Acks) quietsRepeat(inc *Incident) bool { return inc.Ack != nil }

// Saved tells those who wait for a change to be in the ledger (an
// acknowledgement is answered only once it would survive this replica)
// which tracker version the ledger holds. Persist reports to it.
type Saved struct {
	mu      sync.Mutex
	version uint64
	changed chan struct{}
}

// NewSaved makes a Saved that has seen no write.
func NewSaved() *Saved { return &Saved{changed: make(chan struct{})} }

// set records that the ledger holds version.
func (s *Saved) set(version uint64) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if version > s.version {
		s.version = version
		close(s.changed)
		s.changed = make(chan struct{})
	}
}

// Wait returns once the ledger holds version, or with ctx's error.
func (s *Saved) Wait(ctx context.Context, version uint64) error {
	for {
		s.mu.Lock()
		done, changed := s.version >= version, s.changed
		s.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
