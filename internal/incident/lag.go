package incident

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// A delivery is recorded only by the next ledger save that succeeds. If
// saves fail (an admission webhook, a quota, RBAC, etcd's object size:
// ConfigMap writes refused while the Lease renews fine) or lag, every
// delivery since the last good save is sent again by the next leader. The
// gate bounds that: a sink may start a send only while the deliveries the
// ledger has not recorded — and those in flight — are fewer than
// MaxUnrecorded, and the oldest of them is younger than MaxAge. So a
// failover repeats at most MaxUnrecorded notifications, whatever the
// ledger's trouble (docs/operations.md).

// LagPolicy says what a sink does when the ledger is behind.
type LagPolicy string

const (
	// LagPause (the default) holds sends until the ledger catches up.
	LagPause LagPolicy = "pause"
	// LagSend sends anyway: a failover may then repeat every delivery
	// since the last good save.
	LagSend LagPolicy = "send"
)

// LedgerLag counts deliveries the ledger has not recorded and gates sends
// on them. The zero value is not usable: NewLedgerLag.
type LedgerLag struct {
	maxUnrecorded int
	maxAge        time.Duration
	policy        LagPolicy
	now           func() time.Time
	// onPause is told when sending pauses (with why) and resumes ("").
	onPause func(why string)

	mu        sync.Mutex
	delivered uint64      // deliveries counted so far
	recorded  uint64      // of them, those a successful save covers
	at        []time.Time // when each unrecorded delivery was made, oldest first
	inFlight  int         // sends allowed and not yet answered
	paused    bool
	changed   chan struct{}
	// urge asks the ledger writer for a save now, rather than at its next
	// tick: once half the limit is unrecorded, so that the save lands
	// before the gate closes. Without it, a storm faster than the limit a
	// second (50/s by default) paused every sink until the tick.
	urge chan struct{}
}

// NewLedgerLag makes a gate. onPause may be nil.
func NewLedgerLag(maxUnrecorded int, maxAge time.Duration, policy LagPolicy, onPause func(why string)) (*LedgerLag, error) {
	if maxUnrecorded < 1 || maxAge <= 0 {
		return nil, fmt.Errorf("ledger lag: want at least 1 delivery and a positive age (got %d, %s)", maxUnrecorded, maxAge)
	}
	if policy != LagPause && policy != LagSend {
		return nil, fmt.Errorf("ledger lag policy %q: want %q or %q", policy, LagPause, LagSend)
	}
	if onPause == nil {
		onPause = func(string) {}
	}
	return &LedgerLag{maxUnrecorded: maxUnrecorded, maxAge: maxAge, policy: policy, now: time.Now, onPause: onPause, changed: make(chan struct{}), urge: make(chan struct{}, 1)}, nil
}

// Acquire waits until n deliveries may start (policy pause), or ctx ends.
// done is called once the send has ended, saying how many of the n were
// delivered. A batch larger than the limit goes when nothing else is
// unrecorded, so that it cannot wait forever.
func (l *LedgerLag) Acquire(ctx context.Context, n int) (done func(delivered int), err error) {
	if l == nil {
		return func(int) {}, nil
	}
	l.mu.Lock()
	for {
		why := l.behind(n)
		if why == "" || l.policy == LagSend {
			break
		}
		if !l.paused {
			l.paused = true
			l.onPause(why)
		}
		if len(l.at) > 0 {
			l.askForSave()
		}
		changed := l.changed
		// The oldest delivery's age only grows: a save is what moves
		// the gate, and it signals changed.
		l.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-changed:
		}
		l.mu.Lock()
	}
	if l.paused {
		l.paused = false
		l.onPause("")
	}
	l.inFlight += n
	l.mu.Unlock()
	var once sync.Once
	return func(delivered int) {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.inFlight -= n
			now := l.now()
			for range delivered {
				l.delivered++
				l.at = append(l.at, now)
			}
			if 2*len(l.at) >= l.maxUnrecorded {
				l.askForSave()
			}
			l.signal()
		})
	}, nil
}

// behind says why n more sends may not start now ("" if they may). Call
// with mu held.
func (l *LedgerLag) behind(n int) string {
	unrecorded := len(l.at)
	if unrecorded+l.inFlight > 0 && unrecorded+l.inFlight+n > l.maxUnrecorded {
		return fmt.Sprintf("%d deliveries not yet recorded in the incident ledger and %d in flight (at most %d)", unrecorded, l.inFlight, l.maxUnrecorded)
	}
	if unrecorded > 0 {
		if age := l.now().Sub(l.at[0]); age >= l.maxAge {
			return fmt.Sprintf("the oldest delivery not yet recorded in the incident ledger is %s old (at most %s)", age.Round(time.Second), l.maxAge)
		}
	}
	return ""
}

// Mark is taken just before the ledger is read for a save: the
// deliveries counted so far are in what the save writes.
func (l *LedgerLag) Mark() uint64 {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.delivered
}

// Recorded says a save that began at mark succeeded.
func (l *LedgerLag) Recorded(mark uint64) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if mark <= l.recorded {
		return
	}
	l.at = l.at[mark-l.recorded:]
	l.recorded = mark
	l.signal()
}

// Unrecorded is how many deliveries the ledger has not recorded yet and
// how old the oldest is (0 if none).
func (l *LedgerLag) Unrecorded() (n int, oldest time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.at) == 0 {
		return 0, 0
	}
	return len(l.at), l.now().Sub(l.at[0])
}

// Paused says whether sending is held now.
func (l *LedgerLag) Paused() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.paused
}

// Urged is told when the gate wants the ledger written before the next
// tick (nil for a nil gate, which never asks).
func (l *LedgerLag) Urged() <-chan struct{} {
	if l == nil {
		return nil
	}
	return l.urge
}

// askForSave tells Urged, unless it was told already and not yet heard.
func (l *LedgerLag) askForSave() {
	select {
	case l.urge <- struct{}{}:
	default:
	}
}

func (l *LedgerLag) signal() {
	close(l.changed)
	l.changed = make(chan struct{})
}
