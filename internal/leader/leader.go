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
// lead gets a context that ends when ctx ends or the lease is lost, and
// must return once its work is finished (in-flight sends done, ledger
// written). When ctx ends, Run waits for lead, then releases the lease so
// another replica takes over within a retry period, and returns nil. When
// the lease is lost, Run returns ErrLost without waiting. When lead
// returns by itself, Run releases the lease and returns nil.
func Run(ctx context.Context, o Options, lead func(ctx context.Context)) error {
	if o.LeaseDuration == 0 {
		o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = 15*time.Second, 10*time.Second, 2*time.Second
	}
	if o.RenewDeadline >= o.LeaseDuration || o.RetryPeriod <= 0 || o.RetryPeriod >= o.RenewDeadline {
		return fmt.Errorf("leader election: want retry period (%s) < renew deadline (%s) < lease duration (%s)", o.RetryPeriod, o.RenewDeadline, o.LeaseDuration)
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
	workCtx, stopWork := context.WithCancel(ctx)
	defer stopWork()
	renewCtx, stopRenewing := context.WithCancel(context.WithoutCancel(ctx))
	defer stopRenewing()
	lost := make(chan struct{}) // closed, before the work is told, once the lease is lost
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		if e.renew(renewCtx) != nil {
			close(lost)
			stopWork()
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
