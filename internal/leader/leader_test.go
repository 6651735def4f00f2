package leader

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
)

// TestLostLeaseIsReportedEvenWhenTheWorkEndsFirst: when renewing fails,
// client-go cancels the leader's context before it calls OnStoppedLeading,
// so work that stops promptly can return before the loss is signalled.
// Run must still report ErrLost (the caller starts over); returning nil
// would make herald exit as if asked to stop. A narrow unit test on leases
// kept in memory: the race needs many tries, each with a lease that breaks.
func TestLostLeaseIsReportedEvenWhenTheWorkEndsFirst(t *testing.T) {
	const tries = 30
	errs := make(chan error, tries)
	for range tries {
		go func() { errs <- loseLease(t) }()
	}
	for range tries {
		if err := <-errs; !errors.Is(err, ErrLost) {
			t.Fatalf("Run returned %v after the lease could not be renewed, want ErrLost", err)
		}
	}
}

// loseLease leads until renewing the lease starts failing, with work that
// returns as soon as its context ends.
func loseLease(t *testing.T) error {
	client := &memoryLeases{}
	broken := &client.broken
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return Run(ctx, Options{
		Client: client, Namespace: "default", Name: "herald", Identity: "test",
		LeaseDuration: time.Second, RenewDeadline: 600 * time.Millisecond, RetryPeriod: 100 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler),
	}, func(ctx context.Context) {
		broken.Store(true)
		<-ctx.Done()
	})
}

// memoryLeases keeps Leases in memory with the API server's optimistic
// concurrency (an update must carry the current resourceVersion); while
// broken, updates fail as when etcd is away.
type memoryLeases struct {
	broken  atomic.Bool
	mu      sync.Mutex
	leases  map[string]*coordinationv1.Lease
	version int
}

var leasesResource = schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}

func (m *memoryLeases) GetLease(_ context.Context, namespace, name string) (*coordinationv1.Lease, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l, ok := m.leases[namespace+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(leasesResource, name)
	}
	return l.DeepCopy(), nil
}

func (m *memoryLeases) CreateLease(_ context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := l.Namespace + "/" + l.Name
	if _, ok := m.leases[key]; ok {
		return nil, apierrors.NewAlreadyExists(leasesResource, l.Name)
	}
	if m.leases == nil {
		m.leases = map[string]*coordinationv1.Lease{}
	}
	return m.store(key, l), nil
}

func (m *memoryLeases) UpdateLease(_ context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	if m.broken.Load() {
		return nil, errors.New("etcd is away")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	key := l.Namespace + "/" + l.Name
	cur, ok := m.leases[key]
	if !ok {
		return nil, apierrors.NewNotFound(leasesResource, l.Name)
	}
	if l.ResourceVersion != cur.ResourceVersion {
		return nil, apierrors.NewConflict(leasesResource, l.Name, errors.New("the object has been modified"))
	}
	return m.store(key, l), nil
}

// RenewLease is the API server's JSON patch that tests the holder: 422
// Invalid when the Lease names another.
func (m *memoryLeases) RenewLease(_ context.Context, namespace, name, holder string, renewTime metav1.MicroTime) (*coordinationv1.Lease, error) {
	if m.broken.Load() {
		return nil, errors.New("etcd is away")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	key := namespace + "/" + name
	cur, ok := m.leases[key]
	if !ok {
		return nil, apierrors.NewNotFound(leasesResource, name)
	}
	if cur.Spec.HolderIdentity == nil || *cur.Spec.HolderIdentity != holder {
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: leasesResource.Group, Kind: "Lease"}, name, nil)
	}
	next := cur.DeepCopy()
	next.Spec.RenewTime = &renewTime
	return m.store(key, next), nil
}

func (m *memoryLeases) store(key string, l *coordinationv1.Lease) *coordinationv1.Lease {
	m.version++
	l = l.DeepCopy()
	l.ResourceVersion = strconv.Itoa(m.version)
	m.leases[key] = l
	return l.DeepCopy()
}

func candidate(leases Leases, identity string, leaseDuration time.Duration) *elector {
	return candidateOn(leases, identity, leaseDuration, clock.RealClock{})
}

func candidateOn(leases Leases, identity string, leaseDuration time.Duration, c clock.PassiveClock) *elector {
	return &elector{o: Options{Client: leases, Namespace: "default", Name: "herald", Identity: identity,
		LeaseDuration: leaseDuration, RenewDeadline: leaseDuration * 2 / 3, RetryPeriod: leaseDuration / 6, Logger: slog.New(slog.DiscardHandler), Clock: c}}
}

// TestOneCandidateHoldsTheLease: of two candidates only one holds the
// Lease; the other does not take it while it is renewed, and takes it at
// its next try once it is released, counting one transition.
func TestOneCandidateHoldsTheLease(t *testing.T) {
	ctx := context.Background()
	leases := &memoryLeases{}
	a, b := candidate(leases, "a", time.Hour), candidate(leases, "b", time.Hour)
	if !a.tryAcquireOrRenew(ctx) {
		t.Fatal("a could not take a Lease nobody held")
	}
	for range 3 {
		if b.tryAcquireOrRenew(ctx) {
			t.Fatal("b took the Lease a holds and renews")
		}
		if !a.tryAcquireOrRenew(ctx) {
			t.Fatal("a could not renew its Lease")
		}
	}
	if err := a.release(ctx); err != nil {
		t.Fatal(err)
	}
	if !b.tryAcquireOrRenew(ctx) {
		t.Fatal("b did not take the released Lease at once")
	}
	l, _ := leases.GetLease(ctx, "default", "herald")
	if holder(l.Spec) != "b" || *l.Spec.LeaseTransitions != 1 || *l.Spec.LeaseDurationSeconds != 3600 {
		t.Errorf("Lease after the handover: holder %q, transitions %d, duration %ds; want b, 1 (taking a released Lease is a transition), 3600",
			holder(l.Spec), *l.Spec.LeaseTransitions, *l.Spec.LeaseDurationSeconds)
	}
	if a.tryAcquireOrRenew(ctx) {
		t.Error("a took the Lease back while b holds it")
	}
}

// TestAnUnrenewedLeaseIsTakenAfterItsDuration: a holder that stops
// renewing (killed) loses the Lease to another candidate, but only once
// that candidate has seen it unchanged for a whole lease duration, by its
// own clock.
func TestAnUnrenewedLeaseIsTakenAfterItsDuration(t *testing.T) {
	ctx := context.Background()
	const leaseDuration = time.Second // a Lease counts whole seconds
	leases := &memoryLeases{}
	a, b := candidate(leases, "a", leaseDuration), candidate(leases, "b", leaseDuration)
	if !a.tryAcquireOrRenew(ctx) {
		t.Fatal("a could not take a Lease nobody held")
	}
	start := time.Now()
	if b.tryAcquireOrRenew(ctx) {
		t.Fatal("b took a Lease just renewed")
	}
	acquireCtx, cancel := context.WithTimeout(ctx, 10*leaseDuration)
	defer cancel()
	if !b.acquire(acquireCtx) {
		t.Fatal("b never took the Lease a stopped renewing")
	}
	if waited := time.Since(start); waited < leaseDuration {
		t.Errorf("b took the Lease after %s, before its duration (%s) had passed", waited, leaseDuration)
	}
	l, _ := leases.GetLease(ctx, "default", "herald")
	if holder(l.Spec) != "b" || *l.Spec.LeaseTransitions != 1 {
		t.Errorf("Lease: holder %q, transitions %d; want b, 1", holder(l.Spec), *l.Spec.LeaseTransitions)
	}
	if a.tryAcquireOrRenew(ctx) {
		t.Error("a renewed a Lease b had taken")
	}
}

// TestHealthzFailsWhenTheLeaderIsLate: /healthz fails when this replica
// leads but has not renewed for longer than its lease plus the tolerance,
// and never for a replica that does not lead.
func TestHealthzFailsWhenTheLeaderIsLate(t *testing.T) {
	leases := &memoryLeases{}
	e := candidate(leases, "a", time.Second)
	h := NewHealthz(time.Second)
	h.set(e)
	if err := h.Check(nil); err != nil {
		t.Errorf("a follower is unhealthy: %v", err)
	}
	if !e.tryAcquireOrRenew(context.Background()) {
		t.Fatal("could not take the Lease")
	}
	if err := h.Check(nil); err != nil {
		t.Errorf("a leader that just renewed is unhealthy: %v", err)
	}
	e.mu.Lock()
	e.observedAt = time.Now().Add(-3 * time.Second) // last renewed 3 s ago: 2 s past a 1 s lease
	e.mu.Unlock()
	if err := h.Check(nil); err == nil {
		t.Error("a leader 2 s past its lease (tolerance 1 s) is healthy")
	}
}

// slowLeases answers reads only when released, as an API server that
// hangs.
type slowLeases struct {
	*memoryLeases
	release chan struct{}
}

func (s slowLeases) GetLease(ctx context.Context, namespace, name string) (*coordinationv1.Lease, error) {
	<-s.release
	return s.memoryLeases.GetLease(ctx, namespace, name)
}

// TestHealthzAnswersWhileTheLeaseIsBeingRenewed: a renewal waiting on a
// slow API server must not hold up /healthz (a liveness probe that
// times out restarts the pod).
func TestHealthzAnswersWhileTheLeaseIsBeingRenewed(t *testing.T) {
	slow := slowLeases{memoryLeases: &memoryLeases{}, release: make(chan struct{})}
	e := candidate(slow, "a", time.Second)
	h := NewHealthz(time.Second)
	h.set(e)
	tried := make(chan bool)
	go func() { tried <- e.tryAcquireOrRenew(context.Background()) }()
	checked := make(chan error, 1)
	go func() { checked <- h.Check(nil) }()
	select {
	case err := <-checked:
		if err != nil {
			t.Errorf("healthz during the renewal: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("healthz did not answer while a renewal waited on the API server")
	}
	close(slow.release)
	if !<-tried {
		t.Error("the renewal did not take the Lease once the API server answered")
	}
}
