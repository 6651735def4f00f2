package sinks

import (
	"time"

	"github.com/herald-k8s/herald/internal/incident"
)

// Duration says d as people read it ("12 min", "3 h 20 min"): every sink
// says durations with it, so one reads the same everywhere. The words are
// incident.Duration's, which an update's change uses too.
func Duration(d time.Duration) string { return incident.Duration(d) }

// Ago is how long before now t was: "1 min ago".
func Ago(t, now time.Time) string { return Duration(now.Sub(t)) + " ago" }
