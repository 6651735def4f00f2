package ratelog

import (
	"testing"
	"time"
)

func TestOneLinePerKeyPerInterval(t *testing.T) {
	now := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	l := New(time.Minute, func() time.Time { return now })
	if _, ok := l.Allow("a"); !ok {
		t.Fatal("the first line was held")
	}
	for range 3 {
		if _, ok := l.Allow("a"); ok {
			t.Fatal("a repeat within the interval got through")
		}
	}
	if _, ok := l.Allow("b"); !ok {
		t.Error("another key was held")
	}
	now = now.Add(time.Minute)
	if held, ok := l.Allow("a"); !ok || held != 3 {
		t.Errorf("after the interval: ok %v, held %d; want through, 3 held", ok, held)
	}
}
