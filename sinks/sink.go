// Package sinks delivers notifications: the Sink interface every
// integration implements, the JSON payload they share, and the dispatcher
// that gives each sink its own queue and retries.
package sinks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/herald-k8s/herald/internal/incident"
)

// Sink publishes notifications to one destination.
type Sink interface {
	// Name is the sink's name from the configuration.
	Name() string
	// Send publishes one notification. It honours ctx, does not retry by
	// itself, and wraps failures worth retrying in *Retryable.
	Send(ctx context.Context, n incident.Notification) error
}

// Retryable marks a failure that may succeed later (network errors, 5xx,
// 429). After, when set, is how long the receiver asked us to wait.
type Retryable struct {
	After time.Duration
	Err   error
}

func (r *Retryable) Error() string {
	if r.After > 0 {
		return fmt.Sprintf("%v (retry after %s)", r.Err, r.After)
	}
	return r.Err.Error()
}

func (r *Retryable) Unwrap() error { return r.Err }

// IsRetryable reports whether err is worth retrying and after how long the
// receiver asked to wait (0 when it did not say).
func IsRetryable(err error) (bool, time.Duration) {
	var r *Retryable
	if errors.As(err, &r) {
		return true, r.After
	}
	return false, 0
}
