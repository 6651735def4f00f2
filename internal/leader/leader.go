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
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// ErrLost is returned when the lease was lost while leading: the process
// must end at once, so that two replicas never notify together.
var ErrLost = errors.New("leader election lost")

// Options configure the election.
type Options struct {
	Client    kubernetes.Interface
	Namespace string
	Name      string // the Lease's name
	Identity  string
	// LeaseDuration, RenewDeadline and RetryPeriod are client-go's
	// (defaults 15s, 10s, 2s).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	Logger                                    *slog.Logger
	// Healthz, when set, makes /healthz fail if this replica leads but
	// has not renewed the lease in time.
	Healthz *leaderelection.HealthzAdaptor
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
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metaFor(o),
		Client:     o.Client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: o.Identity},
	}
	// The election runs on its own context: on shutdown it is cancelled
	// only after lead has returned, so the lease is released (not merely
	// left to expire) and never while work guarded by it is running.
	electCtx, stopElection := context.WithCancel(context.WithoutCancel(ctx))
	defer stopElection()
	leading := make(chan struct{})  // closed when lead starts
	leadDone := make(chan struct{}) // closed when lead returns
	lost := make(chan struct{})     // closed once the lease is lost while leading
	var loseOnce sync.Once
	markLost := func() { loseOnce.Do(func() { close(lost) }) }
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   o.LeaseDuration,
		RenewDeadline:   o.RenewDeadline,
		RetryPeriod:     o.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            o.Name,
		WatchDog:        o.Healthz,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leadCtx context.Context) {
				close(leading)
				o.Logger.Info("became the leader", "lease", o.Namespace+"/"+o.Name, "identity", o.Identity)
				if o.OnLeading != nil {
					o.OnLeading(true)
				}
				workCtx, cancel := context.WithCancel(ctx)
				go func() { // the lease lost ends the work too
					select {
					case <-leadCtx.Done():
					case <-workCtx.Done():
					}
					cancel()
				}()
				lead(workCtx)
				cancel()
				// client-go cancels leadCtx before it calls
				// OnStoppedLeading: work that stops promptly returns
				// first, so the loss is marked here too, before leadDone.
				if leadCtx.Err() != nil && electCtx.Err() == nil {
					markLost()
				}
				close(leadDone)
			},
			OnStoppedLeading: func() {
				if o.OnLeading != nil {
					o.OnLeading(false)
				}
				if electCtx.Err() == nil {
					markLost()
				}
			},
			OnNewLeader: func(identity string) {
				if identity != o.Identity {
					o.Logger.Info("following the leader", "leader", identity)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	elected := make(chan struct{})
	go func() {
		le.Run(electCtx) // returns after releasing, or when leadership ends
		close(elected)
	}()
	select {
	case <-lost:
		return ErrLost
	case <-leadDone:
		select {
		case <-lost: // it ended because the lease was lost
			return ErrLost
		default:
		}
		// The work ended by itself (a fatal error it reports to the
		// caller): step down rather than hold the lease idle.
		stopElection()
		<-elected
		return nil
	case <-ctx.Done():
	}
	// Shutting down: a leader finishes its work first, then releases.
	select {
	case <-leading:
		select {
		case <-leadDone:
		case <-lost:
		}
		select {
		case <-lost:
			return ErrLost
		default:
		}
	default: // never led: nothing to wait for
	}
	stopElection()
	<-elected
	o.Logger.Info("left the election", "identity", o.Identity)
	return nil
}

func metaFor(o Options) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: o.Name, Namespace: o.Namespace}
}
