package leader

import (
	"context"
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
	// termOver is set when a term is lost, until the next renew loop: a
	// renewal answered after the loss does not make this replica lead
	// again.
	termOver bool
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
