package incident

import (
	"fmt"

	"time"
)

// Flap damping. A problem that keeps coming back (resolved, firing again,
// resolved…) would send two notifications per cycle. Each incident keeps
// when the recent occurrences of its problem started (Starts, carried from
// one occurrence to the next through the retained resolved incident, so
// a restart keeps it); when an incident would resolve and its problem
// started FlapOptions.Starts times within the window, it is marked
// flapping instead: it stays open, one update says so, and it resolves
// only after Quiet without the problem. A crash loop that is briefly
// healthy between crashes never gets this far: the crashloop detector's
// settle time keeps it one incident (docs/incidents.md).

// FlapOptions tune flap damping; Starts 0 turns it off.
type FlapOptions struct {
	Starts        int
	Window, Quiet time.Duration
}

// recentStarts is the Starts of a new occurrence of fp starting now: the
// previous occurrence's within the window, and now.
func (t *Tracker) recentStarts(fp string, now time.Time) []time.Time {
	f := t.opts.Flapping
	if f.Starts <= 0 {
		return nil
	}
	var starts []time.Time
	if prev := t.resolved[t.lastResolved[fp]]; prev != nil {
		for _, s := range prev.Starts {
			if now.Sub(s) < f.Window {
				starts = append(starts, s)
			}
		}
	}
	// Only the last Starts matter; keep the ledger entry small.
	if len(starts) >= f.Starts {
		starts = starts[len(starts)-f.Starts+1:]
	}
	return append(starts, now)
}

// markFlapping marks inc flapping if its problem started often enough
// within the window, and returns what the update that says so says.
func (t *Tracker) markFlapping(inc *Incident, now time.Time) (string, bool) {
	f := t.opts.Flapping
	if f.Starts <= 0 || inc.Flapping {
		return "", false
	}
	n := 0
	for _, s := range inc.Starts {
		if now.Sub(s) < f.Window {
			n++
		}
	}
	if n < f.Starts {
		return "", false
	}
	inc.Flapping = true
	t.touch(inc)
	return fmt.Sprintf("flapping: started %d times in %s; resolves after %s without the problem", n, Duration(f.Window), Duration(f.Quiet)), true
}

// FlappingByRule counts the open incidents marked flapping, by rule.
func (t *Tracker) FlappingByRule() map[string]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[string]int{}
	for _, inc := range t.open {
		if inc.Flapping {
			out[inc.Rule]++
		}
	}
	return out
}
