// Package fence stops a deposed leader's requests at the moment they
// would leave, not only when a timer says so.
//
// The leader's hold on its Lease ends, by its own clock, a renew deadline
// after it sent its last successful renewal (internal/leader). A timer
// fires then and cancels the leader's work — but a process that was
// paused (a long GC, CPU starvation, SIGSTOP, a frozen cgroup or VM)
// wakes every goroutine whose timer expired at once, and a sink retry
// can reach the network before the timer that fences it runs. So the
// leader's work context carries a Fence, and every request herald makes
// for a sink or the ledger checks it immediately before it is sent and
// runs under a deadline at the end of the hold.
package fence

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// ErrExpired: the hold on the Lease has ended by this replica's clock;
// nothing more may be sent for it.
var ErrExpired = errors.New("this replica's hold on the leader lease has ended (by its own clock): not sent")

// Fence is a leader's term: valid until an instant that each successful
// renewal moves later.
type Fence struct {
	validUntil func() time.Time
	now        func() time.Time
}

// New makes a Fence. validUntil is read at every check (a time with a
// monotonic reading, so a wall-clock step cannot move it); now is the
// clock (time.Now when nil).
func New(validUntil, now func() time.Time) *Fence {
	if now == nil {
		now = time.Now
	}
	return &Fence{validUntil: validUntil, now: now}
}

// Check says whether a request may start now: nil while the hold lasts.
func (f *Fence) Check() error {
	if until := f.validUntil(); !f.now().Before(until) {
		return fmt.Errorf("%w (held until %s)", ErrExpired, until.Format(time.RFC3339Nano))
	}
	return nil
}

// ValidUntil is the end of the hold as of now.
func (f *Fence) ValidUntil() time.Time { return f.validUntil() }

type key struct{}

// With returns ctx carrying f: every request made under it is fenced.
// (A context made WithoutCancel from it still carries f: a last ledger
// write after a shutdown is fenced too.)
func With(ctx context.Context, f *Fence) context.Context { return context.WithValue(ctx, key{}, f) }

// From returns the Fence ctx carries, or nil.
func From(ctx context.Context) *Fence {
	f, _ := ctx.Value(key{}).(*Fence)
	return f
}

// Check checks the Fence ctx carries; nil when it carries none.
func Check(ctx context.Context) error {
	if f := From(ctx); f != nil {
		return f.Check()
	}
	return nil
}

// Bound returns ctx cancelled (with ErrExpired as its cause) when the hold
// ends — the end as it is then: each renewal moves it later, and a
// request that outlives one end the hold had when it started is not cut
// while the replica still leads — or ErrExpired if it has ended already;
// ctx without a Fence is returned as it is.
func Bound(ctx context.Context) (context.Context, context.CancelFunc, error) {
	f := From(ctx)
	if f == nil {
		return ctx, func() {}, nil
	}
	if err := f.Check(); err != nil {
		return ctx, func() {}, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	var mu sync.Mutex
	var timer *time.Timer
	var watch func()
	watch = func() {
		mu.Lock()
		defer mu.Unlock()
		if ctx.Err() != nil {
			return
		}
		if err := f.Check(); err != nil {
			cancel(ErrExpired)
			return
		}
		// The timer runs on the real clock: f's may be a test's.
		timer = time.AfterFunc(f.validUntil().Sub(f.now()), watch)
	}
	watch()
	return ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if timer != nil {
			timer.Stop()
		}
		cancel(context.Canceled)
	}, nil
}

// Transport fences each request that could change something (any method
// but GET and HEAD) whose context carries a Fence: checked immediately
// before it is sent, and cut at the end of the hold. Reads pass as they
// are — they notify no one and write nothing, and the informers' lists
// and watches a leader starts must outlive any one renewal.
func Transport(next http.RoundTripper) http.RoundTripper {
	return roundTripper{next}
}

type roundTripper struct{ next http.RoundTripper }

func (t roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodGet || req.Method == http.MethodHead {
		return t.next.RoundTrip(req)
	}
	ctx, cancel, err := Bound(req.Context())
	if err != nil {
		if req.Body != nil {
			req.Body.Close() // a RoundTripper closes the body, even on error
		}
		return nil, err
	}
	if From(req.Context()) == nil {
		return t.next.RoundTrip(req)
	}
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = &cancelOnClose{resp.Body, cancel} // the deadline covers reading the answer
	return resp, nil
}

type cancelOnClose struct {
	body interface {
		Read([]byte) (int, error)
		Close() error
	}
	cancel context.CancelFunc
}

func (c *cancelOnClose) Read(p []byte) (int, error) { return c.body.Read(p) }
func (c *cancelOnClose) Close() error {
	err := c.body.Close()
	c.cancel()
	return err
}

// Epoch names a leader's term in what it sends: the Lease's
// leaseTransitions when this replica took it, and the ledger's epoch its
// claim opened, as "transitions.ledger" (either 0 when unknown). Of two
// notifications, the one of the greater epoch — compared number by
// number — was sent by the later leader, so a receiver may refuse an
// older one that arrives late.
type Epoch struct {
	LeaseTransitions int32
	Ledger           uint64
}

func (e Epoch) String() string { return fmt.Sprintf("%d.%d", e.LeaseTransitions, e.Ledger) }

type epochKey struct{}

// WithEpoch returns ctx carrying e.
func WithEpoch(ctx context.Context, e Epoch) context.Context {
	return context.WithValue(ctx, epochKey{}, e)
}

// EpochFrom returns the Epoch ctx carries, "" when none (no election).
func EpochFrom(ctx context.Context) string {
	if e, ok := ctx.Value(epochKey{}).(Epoch); ok {
		return e.String()
	}
	return ""
}

// EpochOf returns the Epoch ctx carries (the zero Epoch when none).
func EpochOf(ctx context.Context) Epoch {
	e, _ := ctx.Value(epochKey{}).(Epoch)
	return e
}
