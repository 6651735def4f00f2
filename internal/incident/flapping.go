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

// flapping is the stage of flap damping: it gives a new occurrence its
// recent starts, and marks an incident flapping where a resolution would
// otherwise be said.
type flapping struct {
	cfg FlapOptions
	t   *Tracker // for FlappingByRule
}

// starts is the Starts of a new occurrence starting now: those of the
// previous occurrence (prev, nil: none retained) within the window, and
// now.
func (f *flapping) starts(prev *Incident, now time.Time) []time.Time {
	if f.cfg.Starts <= 0 {
		return nil
	}
	var starts []time.Time
	if prev != nil {
		for _, s := range prev.Starts {
			if now.Sub(s) < f.cfg.Window {
				starts = append(starts, s)
			}
		}
	}
	// Only the last Starts matter; keep the ledger entry small.
	if len(starts) >= f.cfg.Starts {
		starts = starts[len(starts)-f.cfg.Starts+1:]
	}
	return append(starts, now)
}

// mark marks inc flapping if its problem started often enough within the
// window, and returns what the update that says so says.
func (f *flapping) mark(inc *Incident, now time.Time) (string, bool) {
	if f.cfg.Starts <= 0 || inc.Flapping {
		return "", false
	}
	n := 0
	for _, s := range inc.Starts {
		if now.Sub(s) < f.cfg.Window {
			n++
		}
	}
	if n < f.cfg.Starts {
		return "", false
	}
	inc.Flapping = true
	return fmt.Sprintf("flapping: started %d times in %s; resolves after %s without the problem", n, Duration(f.cfg.Window), Duration(f.cfg.Quiet)), true
}

// FlappingByRule counts the open incidents marked flapping, by rule.
func (f *flapping) FlappingByRule() map[string]int {
	t := f.t
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.countOpen(func(inc *Incident) string { return inc.Rule }, func(inc *Incident) bool { return inc.Flapping })
}
