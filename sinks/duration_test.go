package sinks

import (
	"testing"
	"time"
)

// TestAgo: a past time reads as a human duration before now (the table
// of durations is incident.Duration's test).
func TestAgo(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		d    time.Duration
		want string
	}{{time.Minute, "1 min ago"}, {200 * time.Minute, "3 h 20 min ago"}, {45 * time.Second, "45 s ago"}} {
		if got := Ago(now.Add(-c.d), now); got != c.want {
			t.Errorf("Ago(now-%s) = %q, want %q", c.d, got, c.want)
		}
	}
}
