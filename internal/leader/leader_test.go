package leader

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestLostLeaseIsReportedEvenWhenTheWorkEndsFirst: when renewing fails,
// client-go cancels the leader's context before it calls OnStoppedLeading,
// so work that stops promptly can return before the loss is signalled.
// Run must still report ErrLost (the caller starts over); returning nil
// would make herald exit as if asked to stop. A narrow unit test on a fake
// clientset: the race needs many tries, each with a lease that breaks.
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
	client := fake.NewClientset()
	var broken atomic.Bool
	client.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		if broken.Load() {
			return true, nil, errors.New("etcd is away")
		}
		return false, nil, nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return Run(ctx, Options{
		Client: client, Namespace: "default", Name: "herald", Identity: "test",
		LeaseDuration: 600 * time.Millisecond, RenewDeadline: 400 * time.Millisecond, RetryPeriod: 100 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler),
	}, func(ctx context.Context) {
		broken.Store(true)
		<-ctx.Done()
	})
}
