package fence

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestTransportChecksTheHoldBeforeEachRequest: on a simulated clock, a
// request made while the hold lasts reaches the receiver; one made after
// the clock passed the end of the hold (a paused process resuming) never
// leaves; a request without a fence (an informer's watch) is not touched.
func TestTransportChecksTheHoldBeforeEachRequest(t *testing.T) {
	var received atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { received.Add(1) }))
	defer srv.Close()
	client := &http.Client{Transport: Transport(http.DefaultTransport.(*http.Transport).Clone())}

	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	var now atomic.Int64
	now.Store(t0.UnixNano())
	f := New(func() time.Time { return t0.Add(10 * time.Second) }, func() time.Time { return time.Unix(0, now.Load()) })
	ctx := With(context.Background(), f)
	post := func(ctx context.Context) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader("alert"))
		resp, err := client.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return err
	}

	if err := post(ctx); err != nil || received.Load() != 1 {
		t.Fatalf("within the hold: %v, %d requests received; want 1", err, received.Load())
	}
	now.Store(t0.Add(10 * time.Second).UnixNano()) // the hold's last instant is past
	if err := post(ctx); !errors.Is(err, ErrExpired) {
		t.Errorf("after the hold: %v, want ErrExpired", err)
	}
	if n := received.Load(); n != 1 {
		t.Errorf("%d requests received; the one made after the hold left", n)
	}
	if err := post(context.Background()); err != nil || received.Load() != 2 {
		t.Errorf("a request without a fence: %v (%d received), want it sent", err, received.Load())
	}
	if err := Check(ctx); !errors.Is(err, ErrExpired) {
		t.Errorf("Check after the hold: %v, want ErrExpired", err)
	}
}

// TestTransportCutsARequestAtTheEndOfTheHold: a request that started
// within the hold and hangs (a receiver that does not answer) is cut when
// the hold ends, not at the sink's own timeout.
func TestTransportCutsARequestAtTheEndOfTheHold(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	client := &http.Client{Timeout: time.Minute, Transport: Transport(http.DefaultTransport.(*http.Transport).Clone())}
	until := time.Now().Add(300 * time.Millisecond)
	ctx := With(context.Background(), New(func() time.Time { return until }, nil))
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader("alert"))
	start := time.Now()
	_, err := client.Do(req)
	if err == nil {
		t.Fatal("a hanging request outlived the hold")
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the hanging request was cut after %s, want at the end of the hold (0.3 s)", took.Round(time.Millisecond))
	}
}

// TestTransportFollowsRenewals: a request slower than the hold had left
// when it started is not cut while renewals keep moving the hold's end
// (a leader over a slow receiver); reads are never fenced (the informers'
// lists and watches a leader starts outlive any one renewal).
func TestTransportFollowsRenewals(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(600 * time.Millisecond):
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	client := &http.Client{Transport: Transport(http.DefaultTransport.(*http.Transport).Clone())}
	var until atomic.Int64
	until.Store(time.Now().Add(200 * time.Millisecond).UnixNano())
	renewing := make(chan struct{})
	go func() { // a renewal every 50 ms, each holding 200 ms more
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-renewing:
				return
			case <-tick.C:
				until.Store(time.Now().Add(200 * time.Millisecond).UnixNano())
			}
		}
	}()
	ctx := With(context.Background(), New(func() time.Time { return time.Unix(0, until.Load()) }, nil))
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader("alert"))
	resp, err := client.Do(req)
	close(renewing)
	if err != nil {
		t.Fatalf("a 0.6 s request under a hold renewed every 50 ms was cut: %v", err)
	}
	resp.Body.Close()

	until.Store(time.Now().Add(-time.Second).UnixNano()) // the hold is over
	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	if resp, err := client.Do(req); err != nil {
		t.Errorf("a read after the hold was refused: %v", err)
	} else {
		resp.Body.Close()
	}
}
