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
}

// elector holds or seeks one Lease, by the protocol every Kubernetes
// component uses (so herald's replicas interoperate with kubectl's view
// of the Lease): a holder renews before LeaseDuration runs out; another
// candidate takes the Lease once it has seen it unchanged for a whole
// LeaseDuration (by its own clock: clocks of different machines are never
// compared) or when its holder has released it (no holder). Every write
// carries the resourceVersion it read, so of two candidates only one wins.
type elector struct {
	o Options

	mu sync.Mutex
	// lease is the Lease as last read or written; observed and
	// observedAt are its spec and when this replica saw it change.
	lease      *coordinationv1.Lease
	observed   coordinationv1.LeaseSpec
	observedAt time.Time
	leading    bool
}

// holder of a spec, "" if none.
func holder(spec coordinationv1.LeaseSpec) string {
	if spec.HolderIdentity == nil {
		return ""
	}
	return *spec.HolderIdentity
}

// tryAcquireOrRenew makes one attempt to take or keep the Lease.
func (e *elector) tryAcquireOrRenew(ctx context.Context) bool {
	now := time.Now()
	// The election's state is written by one goroutine at a time (acquire,
	// then renew, then release) and only ever under mu, so that /healthz
	// reads it under mu; no request is made holding mu, or a slow API
	// server would block the liveness probe.
	//
	// The holder renews what it wrote last, without reading it first
	// (half the requests); if someone else wrote since, the write fails
	// on its resourceVersion and the full path below reads it.
	if e.leading && e.lease != nil && now.Before(e.observedAt.Add(e.o.LeaseDuration)) {
		if e.write(ctx, e.lease, now) == nil {
			return true
		}
	}
	current, err := e.o.Client.GetLease(ctx, e.o.Namespace, e.o.Name)
	if apierrors.IsNotFound(err) {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: e.o.Name, Namespace: e.o.Namespace}}
		l.Spec = e.spec(coordinationv1.LeaseSpec{}, now)
		created, err := e.o.Client.CreateLease(ctx, l)
		if err != nil {
			e.o.Logger.Debug("creating the lease", "error", err)
			return false
		}
		e.observe(created, now)
		return true
	}
	if err != nil {
		e.o.Logger.Debug("reading the lease", "error", err)
		return false
	}
	if !specEqual(current.Spec, e.observed) {
		if h := holder(current.Spec); h != holder(e.observed) && h != "" && h != e.o.Identity {
			e.o.Logger.Info("following the leader", "leader", h)
		}
		e.observe(current, now)
	}
	if h := holder(current.Spec); h != "" && h != e.o.Identity && now.Before(e.observedAt.Add(e.o.LeaseDuration)) {
		return false // held by another, and renewed within a LeaseDuration
	}
	return e.write(ctx, current, now) == nil
}

// write updates l to say this replica holds it as of now.
func (e *elector) write(ctx context.Context, l *coordinationv1.Lease, now time.Time) error {
	next := l.DeepCopy()
	next.Spec = e.spec(l.Spec, now)
	updated, err := e.o.Client.UpdateLease(ctx, next)
	if err != nil {
		e.o.Logger.Debug("writing the lease", "error", err)
		return err
	}
	e.observe(updated, now)
	return nil
}

// spec is the Lease's spec with this replica holding it since now (or
// since it first took it), one more transition if it was another's.
func (e *elector) spec(old coordinationv1.LeaseSpec, now time.Time) coordinationv1.LeaseSpec {
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
	} else if holder(old) != "" {
		transitions++
	}
	spec.LeaseTransitions = &transitions
	return spec
}

func (e *elector) observe(l *coordinationv1.Lease, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.lease, e.observed, e.observedAt = l, l.Spec, now
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

// renew keeps the Lease every RetryPeriod until ctx ends (nil) or a renewal
// does not succeed within RenewDeadline, retrying every RetryPeriod meanwhile
// (errLost).
func (e *elector) renew(ctx context.Context) error {
	for {
		t := time.NewTimer(e.o.RetryPeriod)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		if !e.renewWithin(ctx) {
			if ctx.Err() != nil {
				return nil
			}
			e.mu.Lock()
			e.leading = false
			e.mu.Unlock()
			return errLost
		}
	}
}

func (e *elector) renewWithin(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, e.o.RenewDeadline)
	defer cancel()
	for {
		if e.tryAcquireOrRenew(ctx) {
			return true
		}
		t := time.NewTimer(e.o.RetryPeriod)
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
func (e *elector) release(ctx context.Context) error {
	if !e.leading || e.lease == nil {
		return nil
	}
	next := e.lease.DeepCopy()
	none, one, now := "", int32(1), metav1.NewMicroTime(time.Now())
	next.Spec.HolderIdentity, next.Spec.LeaseDurationSeconds, next.Spec.RenewTime, next.Spec.AcquireTime = &none, &one, &now, &now
	updated, err := e.o.Client.UpdateLease(ctx, next)
	if err != nil {
		return fmt.Errorf("releasing the lease: %w", err)
	}
	e.observe(updated, time.Now())
	return nil
}

// expiredFor reports how long past its LeaseDuration this replica's hold
// has gone unrenewed; 0 if it does not lead or renewed in time.
func (e *elector) expiredFor() time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.leading {
		return 0
	}
	return max(0, time.Since(e.observedAt)-e.o.LeaseDuration)
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
