package leader

import (
	"context"
	"errors"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Keeping the Lease once it is held: renewals every retry period, several
// in flight over a slow API server, the hold timed from each one's send.

// errLost: the Lease could not be renewed within RenewDeadline.
var errLost = errors.New("lease not renewed within the renew deadline")

// renew keeps the Lease until ctx ends (nil) or no renewal succeeds by
// validUntil (errLost). A renewal is sent every RetryPeriod whether or
// not the one before has answered (renewSchedule): the hold is timed from
// when the successful renewal was sent, so over a slow API server
// renewals that wait for each other leave gaps the deadline falls into;
// overlapping ones keep the Lease while a round trip is under the renew
// deadline, as client-go does, without timing anything from an answer.
// The Lease names another holder: lost at once.
func (e *elector) renew(ctx context.Context) error {
	e.mu.Lock()
	e.termOver = false
	e.mu.Unlock()
	s := newRenewSchedule(e.o.RetryPeriod, e.o.RenewDeadline, e.lastRenewal())
	type answer struct {
		sent      time.Time
		ok, taken bool
	}
	answers := make(chan answer, s.maxInFlight) // never blocks a sender, even after renew returns
	requests, stop := context.WithCancel(ctx)
	defer stop()
	for {
		now := e.now()
		if s.lost(now) {
			return e.lost(nil)
		}
		if s.due(now) {
			s.sent(now)
			go func(sent time.Time) {
				// A renewal answered after its own deadline is worth nothing.
				rctx, cancel := context.WithTimeout(requests, e.o.RenewDeadline)
				defer cancel()
				ok, taken := e.renewOnce(rctx, sent)
				answers <- answer{sent, ok, taken}
			}(now)
		}
		t := time.NewTimer(s.wake(e.now()))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case a := <-answers:
			t.Stop()
			s.answered(a.sent, a.ok)
			if a.taken {
				return e.lost(errors.New("the Lease names another holder"))
			}
		case <-t.C:
		}
	}
}

// lost records that this replica no longer leads and says why.
func (e *elector) lost(why error) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.leading, e.termOver = false, true
	if why == nil {
		why = e.lastErr
	}
	if why != nil {
		return fmt.Errorf("%w (last: %w)", errLost, why)
	}
	return errLost
}

// renewOnce sends one renewal, stamped sent. taken: it was refused
// because the Lease names another holder (taken, or deleted and
// recreated).
func (e *elector) renewOnce(ctx context.Context, sent time.Time) (ok, taken bool) {
	renewed, err := e.o.Client.RenewLease(ctx, e.o.Namespace, e.o.Name, e.o.Identity, metav1.NewMicroTime(sent))
	if err == nil {
		e.observeRenewal(renewed, sent)
		return true, false
	}
	e.failed("renewing the lease", err)
	if ctx.Err() != nil || !apierrors.IsInvalid(err) && !apierrors.IsNotFound(err) {
		return false, false // no answer, or the API server's trouble: the next renewal may succeed
	}
	current, err := e.o.Client.GetLease(ctx, e.o.Namespace, e.o.Name)
	if apierrors.IsNotFound(err) {
		return false, true
	}
	if err != nil {
		e.failed("reading the lease after a renewal was refused", err)
		return false, false
	}
	return false, holder(current.Spec) != e.o.Identity
}

// observeRenewal records a successful renewal sent at sent, unless one
// sent later was recorded already (renewals may answer out of order).
func (e *elector) observeRenewal(l *coordinationv1.Lease, sent time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if sent.Before(e.observedAt) || e.termOver {
		return
	}
	e.lease, e.observed, e.observedAt = l, l.Spec, sent
	e.leading = holder(l.Spec) == e.o.Identity
}

// renewSchedule is when the holder sends renewals and until when it
// leads, on its own clock: a renewal every retry period, at most
// maxInFlight unanswered; the hold ends deadline after the send of the
// latest renewal that succeeded. (Kept apart from the requests so that
// it can be tested over any latency on a simulated clock.)
type renewSchedule struct {
	retry, deadline      time.Duration
	maxInFlight          int
	validUntil, nextSend time.Time
	inFlight             int
}

// newRenewSchedule starts a schedule after a successful write sent at
// lastSent.
func newRenewSchedule(retry, deadline time.Duration, lastSent time.Time) *renewSchedule {
	return &renewSchedule{retry: retry, deadline: deadline, maxInFlight: max(1, int((deadline+retry-1)/retry)),
		validUntil: lastSent.Add(deadline), nextSend: lastSent.Add(retry)}
}

// lost says whether the hold has ended at now.
func (s *renewSchedule) lost(now time.Time) bool { return !now.Before(s.validUntil) }

// due says whether a renewal should be sent at now.
func (s *renewSchedule) due(now time.Time) bool {
	return s.inFlight < s.maxInFlight && !now.Before(s.nextSend)
}

// sent records a renewal sent at now.
func (s *renewSchedule) sent(now time.Time) {
	s.inFlight++
	s.nextSend = now.Add(s.retry)
}

// answered records the answer to the renewal sent at sent.
func (s *renewSchedule) answered(sent time.Time, ok bool) {
	s.inFlight--
	if until := sent.Add(s.deadline); ok && until.After(s.validUntil) {
		s.validUntil = until
	}
}

// wake is how long from now until the schedule has something to do: send
// the next renewal, or declare the hold ended.
func (s *renewSchedule) wake(now time.Time) time.Duration {
	at := s.validUntil
	if s.inFlight < s.maxInFlight && s.nextSend.Before(at) {
		at = s.nextSend
	}
	return max(at.Sub(now), 0)
}
