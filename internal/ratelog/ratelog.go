// Package ratelog keeps a repeated problem from flooding the log: one line
// per key per interval, with a count of what was held back.
package ratelog

import (
	"sync"
	"time"
)

// Limiter lets one log line per key through per interval.
type Limiter struct {
	interval time.Duration
	now      func() time.Time

	mu   sync.Mutex
	last map[string]time.Time
	held map[string]int
}

// New makes a Limiter; now is the clock (time.Now in production).
func New(interval time.Duration, now func() time.Time) *Limiter {
	return &Limiter{interval: interval, now: now, last: map[string]time.Time{}, held: map[string]int{}}
}

// Allow reports whether to log for key now, and how many lines were held
// back since the last one.
func (l *Limiter) Allow(key string) (held int, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if last, seen := l.last[key]; seen && now.Sub(last) < l.interval {
		l.held[key]++
		return 0, false
	}
	held = l.held[key]
	l.last[key], l.held[key] = now, 0
	return held, true
}
