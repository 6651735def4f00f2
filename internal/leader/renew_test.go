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
)

// holdOver runs the holder's renewal schedule on a simulated clock for
// span, over an API server that answers in 50 ms for the first minute and
// then slows down at once to rtt per round trip (a renewal unanswered at
// the renew deadline is given up, as renew's request timeout does). It
// returns how long after the slow-down the hold ended (0: it lasted) and
// how many renewals were sent.
func holdOver(retry, deadline, rtt, span time.Duration) (lostAfter time.Duration, sent int) {
	slowFrom := t0.Add(time.Minute)
	now := t0
	s := newRenewSchedule(retry, deadline, now)
	type answer struct {
		sent, at time.Time
		ok       bool
	}
	var pending []answer
	for now.Before(t0.Add(span)) {
		if s.lost(now) {
			return now.Sub(slowFrom), sent
		}
		if s.due(now) {
			s.sent(now)
			sent++
			rtt := rtt
			if now.Before(slowFrom) {
				rtt = 50 * time.Millisecond
			}
			if rtt < deadline {
				pending = append(pending, answer{now, now.Add(rtt), true})
			} else {
				pending = append(pending, answer{now, now.Add(deadline), false})
			}
			continue
		}
		next := now.Add(s.wake(now))
		if len(pending) > 0 && !pending[0].at.After(next) { // answers come in the order sent
			a := pending[0]
			pending = pending[1:]
			now = a.at
			s.answered(a.sent, a.ok)
			continue
		}
		now = next
	}
	return 0, sent
}

// TestRenewalsSurviveTheLatencyClientGoSurvives: when the API server
// slows down at once, the holder keeps the Lease while a renewal's round
// trip stays under renew deadline − retry period — 6 s and 7.9 s with the
// default timings (15 s / 10 s / 2 s) — still timing its hold from each
// renewal's send, and still one renewal per retry period. Past that, the
// hold ends exactly the renew deadline after the last send that
// succeeded. (Renewals that waited for each other kept it only under
// (deadline − retry)/2 = 4 s.)
func TestRenewalsSurviveTheLatencyClientGoSurvives(t *testing.T) {
	const span = 10 * time.Minute
	for _, rtt := range []time.Duration{50 * time.Millisecond, 3 * time.Second, 6 * time.Second, 7900 * time.Millisecond} {
		lost, sent := holdOver(2*time.Second, 10*time.Second, rtt, span)
		if lost != 0 {
			t.Errorf("round trip %s, default timings: the hold ended %s after the slow-down, want kept for %s", rtt, lost, span)
		}
		if want := int(span / (2 * time.Second)); sent < want-1 || sent > want+1 {
			t.Errorf("round trip %s: %d renewals sent in %s, want about %d (one per retry period)", rtt, sent, span, want)
		}
	}
	// The scratch case: renew deadline 2 s, retry 0.4 s, 0.9 s round trips.
	if lost, _ := holdOver(400*time.Millisecond, 2*time.Second, 900*time.Millisecond, time.Minute); lost != 0 {
		t.Errorf("round trip 0.9 s, renew deadline 2 s, retry 0.4 s: lost after %s", lost)
	}
	// The last fast renewal was sent 2 s before the slow-down (one per
	// retry period, the first a retry period after the Lease was taken).
	if lost, _ := holdOver(2*time.Second, 10*time.Second, 8100*time.Millisecond, span); lost != 8*time.Second {
		t.Errorf("round trips of 8.1 s: the hold ended %s after the slow-down, want 8s: the renew deadline after the last successful send", lost)
	}
}

// slowRenewals is memoryLeases whose renewals are applied at once and
// answered after rtt: an API server slow to answer.
type slowRenewals struct {
	*memoryLeases
	rtt time.Duration

	mu             sync.Mutex
	inFlight, most int
}

func (s *slowRenewals) RenewLease(ctx context.Context, namespace, name, holder string, renewTime metav1.MicroTime) (*coordinationv1.Lease, error) {
	s.mu.Lock()
	s.inFlight++
	s.most = max(s.most, s.inFlight)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inFlight--
		s.mu.Unlock()
	}()
	l, err := s.memoryLeases.RenewLease(ctx, namespace, name, holder, renewTime)
	select {
	case <-time.After(s.rtt):
		return l, err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// TestRenewOverlapsRequests: the renewal loop itself, on the real clock,
// keeps the Lease over round trips past what renewals waiting for each
// other survive ((1 s − 0.2 s)/2 = 0.4 s; here 0.6 s), by having several
// in flight.
func TestRenewOverlapsRequests(t *testing.T) {
	leases := &slowRenewals{memoryLeases: &memoryLeases{}, rtt: 600 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var lost error
	err := Run(ctx, Options{Client: leases, Namespace: "default", Name: "herald", Identity: "a",
		LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 200 * time.Millisecond},
		func(work context.Context) {
			select {
			case <-work.Done():
				lost = context.Cause(work)
			case <-time.After(4 * time.Second): // twenty retry periods, four renew deadlines
				cancel()
			}
		})
	if err != nil || lost != nil {
		t.Fatalf("over 0.6 s round trips (renew deadline 1 s): Run = %v, the work ended with %v; want the Lease kept", err, lost)
	}
	leases.mu.Lock()
	defer leases.mu.Unlock()
	if leases.most < 2 {
		t.Errorf("at most %d renewal in flight, want several", leases.most)
	}
}

// TestTimingsClientGoRefusesAreRefused: a renew deadline within 1.2 retry
// periods leaves no room for a retry after a jittered one (client-go
// refuses it too).
func TestTimingsClientGoRefusesAreRefused(t *testing.T) {
	err := Run(context.Background(), Options{Client: &memoryLeases{}, Namespace: "default", Name: "herald", Identity: "a",
		LeaseDuration: 15 * time.Second, RenewDeadline: 2400 * time.Millisecond, RetryPeriod: 2 * time.Second},
		func(context.Context) { t.Error("led with refused timings") })
	if err == nil || !strings.Contains(err.Error(), "1.2") {
		t.Errorf("renew deadline 2.4 s, retry period 2 s: %v, want an error naming the 1.2 factor", err)
	}
	if !errors.Is(Run(context.Background(), Options{Client: &memoryLeases{}, Namespace: "default", Name: "herald", Identity: "a",
		LeaseDuration: 15 * time.Second, RenewDeadline: 2500 * time.Millisecond, RetryPeriod: 2 * time.Second},
		func(context.Context) {}), nil) {
		t.Error("renew deadline 2.5 s, retry period 2 s was refused")
	}
}

// TestARenewalAnsweredAfterTheLossLeadsNoMore: a renewal sent before the
// term was lost and answered after it does not make the replica lead
// again; the next term's renewals count.
func TestARenewalAnsweredAfterTheLossLeadsNoMore(t *testing.T) {
	e := candidate(nil, "a", 15*time.Second)
	id := "a"
	self := &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{HolderIdentity: &id}}
	sent := time.Now()
	e.lost(nil)
	e.observeRenewal(self, sent.Add(time.Second))
	if e.isLeading() {
		t.Fatal("a renewal answered after the loss made the replica lead again")
	}
	e.mu.Lock()
	e.termOver = false // what the next term's renew loop does first
	e.mu.Unlock()
	e.observeRenewal(self, sent.Add(2*time.Second))
	if !e.isLeading() {
		t.Fatal("the next term's renewal did not count")
	}
}
