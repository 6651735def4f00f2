package leader

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// The election held to client-go's leaderelection point by point, on a
// fake clock: each test fails with the behaviour it replaced.

var t0 = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// heldByA is two candidates on a fake clock at t0, b with a 15 s lease
// duration, a (with aLease) holding the Lease.
func heldByA(t *testing.T, aLease time.Duration) (*clocktesting.FakePassiveClock, *memoryLeases, *elector, *elector) {
	t.Helper()
	clk := clocktesting.NewFakePassiveClock(t0)
	leases := &memoryLeases{}
	a, b := candidateOn(leases, "a", aLease, clk), candidateOn(leases, "b", 15*time.Second, clk)
	if !a.tryAcquireOrRenew(context.Background()) {
		t.Fatal("a could not take a Lease nobody held")
	}
	return clk, leases, a, b
}

// slowReads is memoryLeases whose reads answer readTakes after the API
// server read the Lease, on the fake clock: a slow API server.
type slowReads struct {
	*memoryLeases
	clock     *clocktesting.FakePassiveClock
	readTakes time.Duration
}

func (s *slowReads) GetLease(ctx context.Context, namespace, name string) (*coordinationv1.Lease, error) {
	l, err := s.memoryLeases.GetLease(ctx, namespace, name)
	s.clock.SetTime(s.clock.Now().Add(s.readTakes))
	return l, err
}

// TestFollowerTimesTheLeaseFromTheAnswer: a follower stamps what it saw
// when the read answers, not when it asked. Asked at t0, answered 3 s
// later: the holder's renewal may have been applied just before the
// answer, so the follower waits a whole lease duration from then.
func TestFollowerTimesTheLeaseFromTheAnswer(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakePassiveClock(t0)
	leases := &slowReads{memoryLeases: &memoryLeases{}, clock: clk}
	a, b := candidateOn(leases, "a", 15*time.Second, clk), candidateOn(leases, "b", 15*time.Second, clk)
	if !a.tryAcquireOrRenew(ctx) {
		t.Fatal("a could not take a Lease nobody held")
	}
	leases.readTakes = 3 * time.Second
	if b.tryAcquireOrRenew(ctx) {
		t.Fatal("b took a Lease just taken")
	}
	leases.readTakes = 0
	clk.SetTime(t0.Add(17 * time.Second)) // 17 s after b asked, 14 s after it was answered
	if b.tryAcquireOrRenew(ctx) {
		t.Fatal("b took the Lease 14 s after it saw it renewed (lease 15 s): it timed the renewal from before its read answered")
	}
	clk.SetTime(t0.Add(18*time.Second + time.Millisecond))
	if !b.tryAcquireOrRenew(ctx) {
		t.Fatal("b did not take the Lease a whole lease duration after it saw it renewed")
	}
}

// TestTheHoldersLeaseDurationDecides: expiry is judged by the holder's
// leaseDurationSeconds, not the follower's own --lease-duration (a
// rollout that changes the flag must not let a replica take over early).
func TestTheHoldersLeaseDurationDecides(t *testing.T) {
	ctx := context.Background()
	clk, _, _, b := heldByA(t, time.Minute)
	if b.tryAcquireOrRenew(ctx) {
		t.Fatal("b took a Lease just taken")
	}
	clk.SetTime(t0.Add(20 * time.Second))
	if b.tryAcquireOrRenew(ctx) {
		t.Fatal("b took a 60 s Lease 20 s after its renewal, by its own 15 s lease duration")
	}
	clk.SetTime(t0.Add(time.Minute + time.Millisecond))
	if !b.tryAcquireOrRenew(ctx) {
		t.Fatal("b did not take the Lease after the holder's 60 s")
	}
}

// TestReleaseRetriesAfterAConflict: a renewal the API server applied after
// the holder stopped waiting for it (cancelled at shutdown) leaves the
// holder with an old resourceVersion; its release conflicts, reads the
// Lease again, and releases it, so the handover is a retry period, not a
// whole lease duration.
func TestReleaseRetriesAfterAConflict(t *testing.T) {
	ctx := context.Background()
	_, leases, a, b := heldByA(t, 15*time.Second)
	// a's renewal, applied, its answer never read.
	applied, _ := leases.GetLease(ctx, "default", "herald")
	later := metav1.NewMicroTime(t0.Add(2 * time.Second))
	applied.Spec.RenewTime = &later
	if _, err := leases.UpdateLease(ctx, applied); err != nil {
		t.Fatal(err)
	}
	if err := a.release(ctx); err != nil {
		t.Fatalf("release after a renewal applied behind its back: %v", err)
	}
	l, _ := leases.GetLease(ctx, "default", "herald")
	if h := holder(l.Spec); h != "" {
		t.Fatalf("the Lease still names %q after release", h)
	}
	if !b.tryAcquireOrRenew(ctx) {
		t.Error("b did not take the released Lease at once")
	}
}

// TestReleaseLeavesAnotherHolderAlone: when the conflict was another
// replica taking the Lease, release reads it and leaves it be.
func TestReleaseLeavesAnotherHolderAlone(t *testing.T) {
	ctx := context.Background()
	clk, leases, a, b := heldByA(t, 15*time.Second)
	b.tryAcquireOrRenew(ctx) // sees a's hold
	clk.SetTime(t0.Add(16 * time.Second))
	if !b.tryAcquireOrRenew(ctx) {
		t.Fatal("b did not take a Lease unrenewed for its duration")
	}
	if err := a.release(ctx); err != nil {
		t.Fatalf("release: %v", err)
	}
	l, _ := leases.GetLease(ctx, "default", "herald")
	if h := holder(l.Spec); h != "b" {
		t.Errorf("a's release took the Lease from b: holder %q", h)
	}
}

// TestTransitionsAreCounted: leaseTransitions counts every change of
// holder, as client-go does: none for creating the Lease, one for taking
// a released Lease, one for taking an expired one, none for renewing.
func TestTransitionsAreCounted(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakePassiveClock(t0)
	leases := &memoryLeases{}
	a, b := candidateOn(leases, "a", 15*time.Second, clk), candidateOn(leases, "b", 15*time.Second, clk)
	transitions := func() int32 {
		l, _ := leases.GetLease(ctx, "default", "herald")
		return *l.Spec.LeaseTransitions
	}
	steps := []struct {
		what string
		do   func() bool
		want int32
	}{
		{"a creates the Lease", func() bool { return a.tryAcquireOrRenew(ctx) }, 0},
		{"a renews", func() bool { return a.tryAcquireOrRenew(ctx) }, 0},
		{"a releases", func() bool { return a.release(ctx) == nil }, 0},
		{"b takes the released Lease", func() bool { return b.tryAcquireOrRenew(ctx) }, 1},
		{"a takes it once b stopped renewing", func() bool {
			a.tryAcquireOrRenew(ctx) // sees b's renewal
			clk.SetTime(clk.Now().Add(16 * time.Second))
			return a.tryAcquireOrRenew(ctx)
		}, 2},
		{"a renews", func() bool { return a.tryAcquireOrRenew(ctx) }, 2},
	}
	for _, s := range steps {
		if !s.do() {
			t.Fatalf("%s: failed", s.what)
		}
		if got := transitions(); got != s.want {
			t.Errorf("%s: %d transitions, want %d", s.what, got, s.want)
		}
	}
}

// TestTimingsTheLeaseCannotHoldAreRefused: a Lease stores whole seconds;
// a sub-second (or fractional) duration would be written as something
// else (0 s, which the API server refuses), so Run refuses it at start
// with an error that says why. A nil logger is not a panic.
func TestTimingsTheLeaseCannotHoldAreRefused(t *testing.T) {
	for _, d := range []time.Duration{500 * time.Millisecond, 1500 * time.Millisecond} {
		err := Run(context.Background(), Options{Client: &memoryLeases{}, Namespace: "default", Name: "herald", Identity: "a",
			LeaseDuration: d, RenewDeadline: d / 2, RetryPeriod: d / 10}, func(context.Context) { t.Error("led with a refused lease duration") })
		if err == nil || !strings.Contains(err.Error(), "whole number of seconds") {
			t.Errorf("lease duration %s: %v, want an error saying it must be whole seconds", d, err)
		}
	}
	led := false
	err := Run(context.Background(), Options{Client: &memoryLeases{}, Namespace: "default", Name: "herald", Identity: "a",
		LeaseDuration: time.Second, RenewDeadline: 600 * time.Millisecond, RetryPeriod: 100 * time.Millisecond}, func(context.Context) { led = true })
	if err != nil || !led {
		t.Errorf("without a logger: Run = %v, led %v; want nil, true", err, led)
	}
}

// slowThenHung answers the first renewal slowly (it succeeds), and lets
// every later one hang until its caller gives up: an API server that
// slows down, then goes away.
type slowThenHung struct {
	*memoryLeases
	slow time.Duration

	mu      sync.Mutex
	updates int
	sent    time.Time // when the successful renewal was sent
}

func (s *slowThenHung) RenewLease(ctx context.Context, namespace, name, holder string, renewTime metav1.MicroTime) (*coordinationv1.Lease, error) {
	s.mu.Lock()
	s.updates++
	n := s.updates
	if n == 1 {
		s.sent = time.Now()
	}
	s.mu.Unlock()
	if n > 1 {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	out, err := s.memoryLeases.RenewLease(ctx, namespace, name, holder, renewTime)
	select { // the API server applied it at once; its answer takes slow
	case <-time.After(s.slow):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return out, err
}

// TestLossIsDeclaredByTheRenewDeadline: the holder stops believing it
// leads RenewDeadline after it sent its last successful renewal, however
// long that renewal took to answer: then it is fenced (its work's context
// ends, with ErrLost as the cause) LeaseDuration − RenewDeadline before any
// follower can take over. Timing the deadline from the start of the next
// attempt instead lets a slow answer push the fence past the moment a
// follower may lead.
func TestLossIsDeclaredByTheRenewDeadline(t *testing.T) {
	const renewDeadline = 600 * time.Millisecond
	leases := &slowThenHung{memoryLeases: &memoryLeases{}, slow: 400 * time.Millisecond}
	var fencedAt time.Time
	var cause error
	fenced := make(chan struct{})
	err := Run(context.Background(), Options{Client: leases, Namespace: "default", Name: "herald", Identity: "a",
		LeaseDuration: time.Second, RenewDeadline: renewDeadline, RetryPeriod: 100 * time.Millisecond},
		func(ctx context.Context) {
			<-ctx.Done()
			fencedAt, cause = time.Now(), context.Cause(ctx)
			close(fenced)
		})
	if !errors.Is(err, ErrLost) {
		t.Fatalf("Run = %v, want ErrLost", err)
	}
	// Run returns without waiting for lead; the fence is what matters.
	select {
	case <-fenced:
	case <-time.After(5 * time.Second):
		t.Fatal("lead's context did not end after the lease was lost")
	}
	leases.mu.Lock()
	sent := leases.sent
	leases.mu.Unlock()
	if !errors.Is(cause, ErrLost) {
		t.Errorf("lead's context ended with %v, want ErrLost as its cause", cause)
	}
	if after := fencedAt.Sub(sent); after > renewDeadline+150*time.Millisecond {
		t.Errorf("fenced %s after the last successful renewal was sent; want within the renew deadline (%s): a follower may lead from 1 s", after.Round(time.Millisecond), renewDeadline)
	}
}

// TestLeaderLosesAtOnceWhenAnotherHolds: a leader whose renewal finds the
// Lease held by another replica (it was taken, or deleted and recreated)
// stops believing it leads then, not at its renew deadline: two replicas
// must not both think they lead for the rest of it.
func TestLeaderLosesAtOnceWhenAnotherHolds(t *testing.T) {
	ctx := context.Background()
	leases := &memoryLeases{}
	a := candidate(leases, "a", 15*time.Second) // renew deadline 10 s
	if !a.tryAcquireOrRenew(ctx) {
		t.Fatal("a could not take a Lease nobody held")
	}
	taken, _ := leases.GetLease(ctx, "default", "herald")
	b := "b"
	taken.Spec.HolderIdentity = &b
	if _, err := leases.UpdateLease(ctx, taken); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := a.renew(ctx); !errors.Is(err, errLost) || !strings.Contains(err.Error(), "another holder") {
		t.Fatalf("a's renewal of a Lease b holds: %v, want errLost naming another holder", err)
	}
	// Its first renewal is due a retry period (2.5 s) after it took the
	// Lease; the renew deadline is 10 s.
	if took := time.Since(start); took > a.o.RetryPeriod+time.Second {
		t.Errorf("a went on believing it led for %s after it saw b hold the Lease", took.Round(time.Millisecond))
	}
}
