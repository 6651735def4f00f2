package incident

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestLedgerLagPausesAtTheLimit: with saves failing, sends stop once the
// unrecorded deliveries and those in flight reach the limit, say why once,
// and go on when a save records them; an old unrecorded delivery pauses
// too; policy send never waits.
func TestLedgerLagPausesAtTheLimit(t *testing.T) {
	var whys []string
	lag, err := NewLedgerLag(3, 30*time.Second, LagPause, func(why string) { whys = append(whys, why) })
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	var now atomic.Int64
	now.Store(t0.UnixNano())
	lag.now = func() time.Time { return time.Unix(0, now.Load()) }
	ctx := context.Background()

	inFlight, err := lag.Acquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		done, err := lag.Acquire(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		done(1)
	}
	// Two delivered, one in flight: a fourth must wait.
	mark := lag.Mark()
	blocked, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := lag.Acquire(blocked, 1); err == nil {
		t.Fatal("a fourth send started with 2 deliveries unrecorded and 1 in flight (limit 3)")
	}
	if !lag.Paused() || len(whys) != 1 || !strings.Contains(whys[0], "2 deliveries not yet recorded") {
		t.Errorf("paused %v, said %q", lag.Paused(), whys)
	}
	inFlight(1)
	if n, _ := lag.Unrecorded(); n != 3 {
		t.Errorf("%d unrecorded, want 3", n)
	}

	resumed := make(chan error, 1)
	go func() {
		done, err := lag.Acquire(ctx, 1)
		if err == nil {
			done(1)
		}
		resumed <- err
	}()
	lag.Recorded(mark) // a save that began with 2 delivered succeeded
	if err := <-resumed; err != nil {
		t.Fatal(err)
	}
	if n, _ := lag.Unrecorded(); n != 2 {
		t.Errorf("%d unrecorded after the save recorded 2 of 3 and one more went, want 2", n)
	}
	if whys[len(whys)-1] != "" {
		t.Errorf("resuming was not said: %q", whys)
	}

	// The oldest unrecorded delivery is 30 s old: paused, whatever the count.
	lag.Recorded(lag.Mark())
	done, _ := lag.Acquire(ctx, 1)
	done(1)
	now.Store(t0.Add(31 * time.Second).UnixNano())
	aged, cancel2 := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel2()
	if _, err := lag.Acquire(aged, 1); err == nil || !strings.Contains(whys[len(whys)-1], "31s old") {
		t.Errorf("with a delivery unrecorded for 31 s (at most 30 s): %v, said %q", err, whys[len(whys)-1])
	}

	send, _ := NewLedgerLag(1, time.Second, LagSend, nil)
	for range 5 {
		done, err := send.Acquire(ctx, 1)
		if err != nil {
			t.Fatalf("policy send waited: %v", err)
		}
		done(1)
	}
	if n, _ := send.Unrecorded(); n != 5 {
		t.Errorf("policy send: %d unrecorded, want 5 (counted, not held)", n)
	}
}

// TestLedgerLagAsksForAWriteAtHalfItsLimit: the gate asks the ledger
// writer for a write once half its limit is unrecorded, not before.
func TestLedgerLagAsksForAWriteAtHalfItsLimit(t *testing.T) {
	lag, err := NewLedgerLag(4, time.Hour, LagPause, nil)
	if err != nil {
		t.Fatal(err)
	}
	deliver := func() {
		sent, err := lag.Acquire(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		sent(1)
	}
	deliver()
	select {
	case <-lag.Urged():
		t.Fatal("asked for a write with one delivery of four unrecorded")
	default:
	}
	deliver()
	select {
	case <-lag.Urged():
	default:
		t.Fatal("did not ask for a write with two deliveries of four unrecorded")
	}
}
