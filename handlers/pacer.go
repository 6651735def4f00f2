package handlers

import (
	"context"
	"time"

	"github.com/herald-k8s/herald/internal/incident"
)

// heldTick is how often the leader looks for held updates that are due;
// an update goes out at most this late after its interval ends.
const heldTick = 500 * time.Millisecond

// releaseHeld sends the updates the incident tracker held back for pacing
// once they are due (internal/incident/pacing.go), and what muted
// incidents owe once their silence, window or inhibition ends
// (internal/incident/mute.go), until ctx ends. They are not tied to any
// object's change, so no reconcile would send them.
func (c *Controller) releaseHeld(ctx context.Context) {
	tick := time.NewTicker(heldTick)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		now := c.Now()
		err := c.outbox.hand(ctx, func() []incident.Notification {
			notes := append(c.Incidents.ReleaseHeld(now), c.Incidents.ReleaseMuted(now)...)
			c.announce(notes)
			return notes
		})
		if err != nil {
			// The ledger still lists them as pending: the next leader or
			// restart sends them.
			c.Logger.Error("dispatching held notifications failed", "error", err)
		}
	}
}
