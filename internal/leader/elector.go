package leader

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Leases reads and writes the Lease (internal/kube's Client is one).
type Leases interface {
	GetLease(ctx context.Context, namespace, name string) (*coordinationv1.Lease, error)
	CreateLease(ctx context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error)
	UpdateLease(ctx context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error)
	// RenewLease sets the Lease's renewTime if holder still holds it
	// (not conditional on its resourceVersion).
	RenewLease(ctx context.Context, namespace, name, holder string, renewTime metav1.MicroTime) (*coordinationv1.Lease, error)
}

// elector holds or seeks one Lease, by the protocol every Kubernetes
// component uses (so herald's replicas interoperate with kubectl's view
// of the Lease), held point by point to client-go's leaderelection:
//
//   - a candidate takes the Lease once it has seen it unchanged for the
//     holder's own leaseDurationSeconds, timed from when the read that
//     showed the change answered (so a slow API server lengthens the wait
//     instead of eating the safety margin), or at once when its holder
//     released it; clocks of different machines are never compared;
//   - the holder times its hold from when it sent the renewal that
//     succeeded, and stops believing it leads RenewDeadline after that
//     (renew), LeaseDuration − RenewDeadline before any other candidate can
//     take the Lease;
//   - every write carries the resourceVersion it read, so of two
//     candidates only one wins; taking the Lease from anyone (a released
//     Lease included) counts a transition; release retries on a conflict.
type elector struct {
	o Options

	mu sync.Mutex
	// lease is the Lease as last read or written; observed and
	// observedAt are its spec and when this replica saw it change (for
	// its own writes, when the write was sent).
	lease      *coordinationv1.Lease
	observed   coordinationv1.LeaseSpec
	observedAt time.Time
	leading    bool
	// lastErr is the last failed request's error, said when the lease is
	// lost (each failure is only logged at debug level).
	lastErr error
}

func (e *elector) isLeading() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leading
}

// lastRenewal is when this replica sent the write that last succeeded.
func (e *elector) lastRenewal() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.observedAt
}

// failed records a failed request and logs it at debug level.
func (e *elector) failed(what string, err error) {
	e.mu.Lock()
	e.lastErr = fmt.Errorf("%s: %w", what, err)
	e.mu.Unlock()
	e.o.Logger.Debug(what, "error", err)
}

func (e *elector) now() time.Time { return e.o.Clock.Now() }

// holder of a spec, "" if none.
func holder(spec coordinationv1.LeaseSpec) string {
	if spec.HolderIdentity == nil {
		return ""
	}
	return *spec.HolderIdentity
}

// tryAcquireOrRenew makes one attempt to take or keep the Lease.
func (e *elector) tryAcquireOrRenew(ctx context.Context) bool {
	// The election's state is written by one goroutine at a time (acquire,
	// then renew, then release) and only ever under mu, so that /healthz
	// reads it under mu; no request is made holding mu, or a slow API
	// server would block the liveness probe.
	//
	// The holder renews what it wrote last, without reading it first
	// (half the requests); if someone else wrote since, the write fails
	// on its resourceVersion and the full path below reads it.
	if e.leading && e.lease != nil && e.now().Before(e.validUntil()) {
		if e.write(ctx, e.lease) == nil {
			return true
		}
	}
	current, err := e.o.Client.GetLease(ctx, e.o.Namespace, e.o.Name)
	answered := e.now()
	if apierrors.IsNotFound(err) {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: e.o.Name, Namespace: e.o.Namespace}}
		sent := e.now()
		l.Spec = e.spec(coordinationv1.LeaseSpec{}, sent, true)
		created, err := e.o.Client.CreateLease(ctx, l)
		if err != nil {
			e.failed("creating the lease", err)
			return false
		}
		e.observe(created, sent)
		return true
	}
	if err != nil {
		e.failed("reading the lease", err)
		return false
	}
	if !specEqual(current.Spec, e.observed) {
		if h := holder(current.Spec); h != holder(e.observed) && h != "" && h != e.o.Identity {
			e.o.Logger.Info("following the leader", "leader", h)
		}
		// Another's renewal is timed from when this read answered: the
		// renewal was applied before then, and possibly only just.
		e.observe(current, answered)
	}
	if h := holder(current.Spec); h != "" && h != e.o.Identity && answered.Before(e.observedAt.Add(e.heldFor(current.Spec))) {
		return false // held by another, and renewed within the holder's lease duration
	}
	return e.write(ctx, current) == nil
}

// heldFor is how long the holder of spec may go without renewing: its own
// leaseDurationSeconds (a replica started with another --lease-duration
// must not take over early), this replica's when the Lease has none.
func (e *elector) heldFor(spec coordinationv1.LeaseSpec) time.Duration {
	if spec.LeaseDurationSeconds != nil && *spec.LeaseDurationSeconds > 0 {
		return time.Duration(*spec.LeaseDurationSeconds) * time.Second
	}
	return e.o.LeaseDuration
}

// validUntil is when this replica stops believing it leads unless it
// renews first: RenewDeadline after it sent its last successful write.
func (e *elector) validUntil() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.observedAt.Add(e.o.RenewDeadline)
}

// transitions is the Lease's leaseTransitions as this replica last saw
// it: while it leads, the count as of its taking the Lease.
func (e *elector) transitions() int32 {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.lease == nil || e.lease.Spec.LeaseTransitions == nil {
		return 0
	}
	return *e.lease.Spec.LeaseTransitions
}

// holdUntil is when this replica's hold on the Lease ends by its own
// clock (validUntil), or the zero time when it does not lead: the fence
// every sink and ledger request is checked against.
func (e *elector) holdUntil() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.leading {
		return time.Time{}
	}
	return e.observedAt.Add(e.o.RenewDeadline)
}

// write updates l to say this replica holds it as of now; the hold is
// timed from when the write was sent (the API server may apply it at any
// moment until it answers).
func (e *elector) write(ctx context.Context, l *coordinationv1.Lease) error {
	sent := e.now()
	next := l.DeepCopy()
	next.Spec = e.spec(l.Spec, sent, false)
	updated, err := e.o.Client.UpdateLease(ctx, next)
	if err != nil {
		e.failed("writing the lease", err)
		return err
	}
	e.observe(updated, sent)
	return nil
}

// spec is the Lease's spec with this replica holding it since now (or
// since it first took it). Taking it from anyone, or after it was
// released, counts one more transition, as client-go does; creating it
// counts none.
func (e *elector) spec(old coordinationv1.LeaseSpec, now time.Time, creating bool) coordinationv1.LeaseSpec {
	seconds := int32(e.o.LeaseDuration / time.Second)
	at := metav1.NewMicroTime(now)
	spec := coordinationv1.LeaseSpec{HolderIdentity: &e.o.Identity, LeaseDurationSeconds: &seconds, RenewTime: &at, AcquireTime: &at}
	transitions := int32(0)
	if old.LeaseTransitions != nil {
		transitions = *old.LeaseTransitions
	}
	if holder(old) == e.o.Identity && old.AcquireTime != nil {
		acquired := *old.AcquireTime
		spec.AcquireTime = &acquired
	} else if !creating {
		transitions++
	}
	spec.LeaseTransitions = &transitions
	return spec
}

func (e *elector) observe(l *coordinationv1.Lease, at time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.lease, e.observed, e.observedAt = l, l.Spec, at
	e.leading = holder(l.Spec) == e.o.Identity
}

// acquire tries until it holds the Lease (true) or ctx ends (false), every
// RetryPeriod with jitter, so candidates that started together spread out.
func (e *elector) acquire(ctx context.Context) bool {
	for {
		if e.tryAcquireOrRenew(ctx) {
			return true
		}
		wait := e.o.RetryPeriod + time.Duration(rand.Int64N(int64(e.o.RetryPeriod)*6/5+1))
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
	}
}

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
	e.leading = false
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
	if sent.Before(e.observedAt) {
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

// release gives the Lease up (no holder, a one-second duration) so that
// another candidate takes it at its next try instead of after it expires.
// A conflict means a write of this replica's was applied after it stopped
// waiting for the answer (a cancelled renewal): the Lease is read again
// and released if it still names this replica.
func (e *elector) release(ctx context.Context) error {
	for {
		e.mu.Lock()
		l, leading := e.lease, e.leading
		e.mu.Unlock()
		if !leading || l == nil {
			return nil
		}
		next := l.DeepCopy()
		none, one, now := "", int32(1), metav1.NewMicroTime(e.now())
		next.Spec.HolderIdentity, next.Spec.LeaseDurationSeconds, next.Spec.RenewTime, next.Spec.AcquireTime = &none, &one, &now, &now
		updated, err := e.o.Client.UpdateLease(ctx, next)
		if err == nil {
			e.observe(updated, e.now())
			return nil
		}
		if !apierrors.IsConflict(err) {
			return fmt.Errorf("releasing the lease: %w", err)
		}
		current, err := e.o.Client.GetLease(ctx, e.o.Namespace, e.o.Name)
		if err != nil {
			return fmt.Errorf("releasing the lease: reading it after a conflict: %w", err)
		}
		e.observe(current, e.now()) // leading stays true only if it still names this replica
	}
}

// expiredFor reports how long past its LeaseDuration this replica's hold
// has gone unrenewed; 0 if it does not lead or renewed in time.
func (e *elector) expiredFor() time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.leading {
		return 0
	}
	return max(0, e.now().Sub(e.observedAt)-e.o.LeaseDuration)
}

func specEqual(a, b coordinationv1.LeaseSpec) bool {
	return holder(a) == holder(b) && microEqual(a.RenewTime, b.RenewTime) && microEqual(a.AcquireTime, b.AcquireTime) &&
		int32Equal(a.LeaseDurationSeconds, b.LeaseDurationSeconds) && int32Equal(a.LeaseTransitions, b.LeaseTransitions)
}

func microEqual(a, b *metav1.MicroTime) bool {
	return (a == nil) == (b == nil) && (a == nil || a.Equal(b))
}

func int32Equal(a, b *int32) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// Healthz makes /healthz fail when this replica leads but has not renewed
// the Lease for longer than LeaseDuration plus a tolerance: a leader stuck
// that way is better restarted (another replica may lead already).
type Healthz struct {
	tolerance time.Duration
	mu        sync.Mutex
	e         *elector
}

// NewHealthz makes a Healthz; Options.Healthz connects it to an election.
func NewHealthz(tolerance time.Duration) *Healthz { return &Healthz{tolerance: tolerance} }

func (h *Healthz) set(e *elector) {
	h.mu.Lock()
	h.e = e
	h.mu.Unlock()
}

// Check implements a health check: nil while healthy.
func (h *Healthz) Check(*http.Request) error {
	h.mu.Lock()
	e := h.e
	h.mu.Unlock()
	if e == nil {
		return nil
	}
	if late := e.expiredFor(); late > h.tolerance {
		return fmt.Errorf("leader has not renewed lease %s/%s for %s past its duration", e.o.Namespace, e.o.Name, late.Round(time.Second))
	}
	return nil
}
