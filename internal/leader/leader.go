// Package leader runs herald's active work on one replica at a time, by a
// Lease: every replica keeps warm caches; only the holder of the lease
// reconciles, writes the ledger and notifies.
package leader

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"k8s.io/utils/clock"

	"github.com/herald-k8s/herald/internal/fence"
)

// ErrLost is returned when the lease was lost while leading: the process
// must end at once, so that two replicas never notify together.
var ErrLost = errors.New("leader election lost")

// Options configure the election.
type Options struct {
	Client    Leases
	Namespace string
	Name      string // the Lease's name
	Identity  string
	// LeaseDuration, RenewDeadline and RetryPeriod are those of every
	// Kubernetes component (defaults 15s, 10s, 2s).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	Logger                                    *slog.Logger
	// Healthz, when set, makes /healthz fail if this replica leads but
	// has not renewed the lease in time.
	Healthz *Healthz
	// OnLeading is told when this replica starts (true) and stops (false)
	// leading, for metrics.
	OnLeading func(bool)
	// OnLost is called the moment this replica stops believing it leads,
	// before lead's context is cancelled: the caller fences its work
	// there, even work that a shutdown had already asked to drain.
	OnLost func()
	// Clock tells the time (tests pass a fake one); the real clock when
	// nil. Timers and request deadlines always run on the real clock.
	Clock clock.PassiveClock
}

// validate fills in defaults and refuses timings the protocol cannot
// keep: a Lease counts whole seconds, and the holder must give up before
// another candidate may take over.
func (o *Options) validate() error {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.LeaseDuration == 0 {
		o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = 15*time.Second, 10*time.Second, 2*time.Second
	}
	if o.LeaseDuration < time.Second || o.LeaseDuration%time.Second != 0 {
		return fmt.Errorf("leader election: lease duration %s: want a whole number of seconds, at least 1s (a Lease stores leaseDurationSeconds; the API server refuses 0)", o.LeaseDuration)
	}
	if o.RenewDeadline >= o.LeaseDuration || o.RetryPeriod <= 0 || o.RetryPeriod >= o.RenewDeadline {
		return fmt.Errorf("leader election: want retry period (%s) < renew deadline (%s) < lease duration (%s)", o.RetryPeriod, o.RenewDeadline, o.LeaseDuration)
	}
	if o.RenewDeadline*5 <= o.RetryPeriod*6 {
		// As client-go: acquisition retries are jittered up to 1.2 retry
		// periods, and the deadline must leave room for more than one.
		return fmt.Errorf("leader election: renew deadline (%s) must be more than 1.2 × the retry period (%s)", o.RenewDeadline, o.RetryPeriod)
	}
	if o.Client == nil || o.Name == "" || o.Identity == "" {
		return errors.New("leader election: a client, a Lease name and an identity are required")
	}
	return nil
}

// Identity is the pod name (or host name) with a random suffix, so that a
// restarted pod with the same name is a new candidate.
func Identity() string {
	name := os.Getenv("POD_NAME")
	if name == "" {
		name, _ = os.Hostname()
	}
	return name + "_" + rand.Text()[:8]
}

// Run campaigns for the lease and runs lead while this replica holds it.
// lead gets a context that ends when ctx ends or the lease is lost. When
// ctx ends, lead should finish its work (drain), and Run waits for it,
// then releases the lease so another replica takes over within a retry
// period, and returns nil. When the lease is lost, lead's context ends
// with ErrLost as its cause (context.Cause) — a fence, not a drain: lead
// must stop everything at once, as another replica may take over
// LeaseDuration − RenewDeadline later — and Run returns ErrLost without
// waiting for it. When lead returns by itself, Run releases the lease and
// returns nil.
func Run(ctx context.Context, o Options, lead func(ctx context.Context)) error {
	if err := o.validate(); err != nil {
		return err
	}
	e := &elector{o: o}
	if o.Healthz != nil {
		o.Healthz.set(e)
	}
	if !e.acquire(ctx) {
		o.Logger.Info("left the election", "identity", o.Identity)
		return nil
	}
	o.Logger.Info("became the leader", "lease", o.Namespace+"/"+o.Name, "identity", o.Identity)
	if o.OnLeading != nil {
		o.OnLeading(true)
		defer o.OnLeading(false)
	}
	// Renewal runs on its own context: on shutdown it stops only after
	// lead has returned, so the lease is released (not merely left to
	// expire) and never while work guarded by it is running.
	workCtx, stopWork := context.WithCancelCause(ctx)
	defer stopWork(nil)
	// The fence at the edge: every sink and ledger request made under the
	// work's context is checked against the hold just before it is sent.
	workCtx = fence.With(workCtx, fence.New(e.holdUntil, e.now))
	workCtx = fence.WithEpoch(workCtx, fence.Epoch{LeaseTransitions: e.transitions()})
	renewCtx, stopRenewing := context.WithCancel(context.WithoutCancel(ctx))
	defer stopRenewing()
	lost := make(chan struct{}) // closed, before the work is told, once the lease is lost
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		if err := e.renew(renewCtx); err != nil {
			o.Logger.Warn("lost the lease: no renewal succeeded within the renew deadline", "lease", o.Namespace+"/"+o.Name,
				"identity", o.Identity, "lastRenewal", e.lastRenewal(), "renewDeadline", o.RenewDeadline, "error", err)
			if o.OnLost != nil {
				o.OnLost()
			}
			stopWork(ErrLost) // before lost is closed: Run's deferred stopWork(nil) must not set the cause first
			close(lost)
		}
	}()
	leadDone := make(chan struct{})
	go func() {
		defer close(leadDone)
		lead(workCtx)
	}()
	isLost := func() bool {
		select {
		case <-lost:
			return true
		default:
			return false
		}
	}
	select {
	case <-lost:
		return ErrLost
	case <-leadDone:
		// The work ended: the lease was lost (lost is closed first), or
		// it ended by itself (a fatal error it reports to the caller):
		// step down rather than hold the lease idle.
	case <-ctx.Done():
		// Shutting down: a leader finishes its work first, then releases.
		select {
		case <-leadDone:
		case <-lost:
		}
	}
	if isLost() {
		return ErrLost
	}
	stopRenewing()
	<-renewed
	if isLost() {
		return ErrLost
	}
	releaseCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.RenewDeadline)
	defer cancel()
	if err := e.release(releaseCtx); err != nil {
		o.Logger.Warn("the lease was not released; another replica takes over when it expires", "error", err)
	}
	o.Logger.Info("left the election", "identity", o.Identity)
	return nil
}
