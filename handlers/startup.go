package handlers

import (
	"context"
	"slices"
	"time"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/sinks"
	"github.com/herald-k8s/herald/watcher"
)

// startupReconcile runs once the caches are synced, before the workers:
// it first hands the sinks what the ledger says was never delivered, then
// reconciles every cached object and every object the ledger counts as
// affected (those deleted while herald was down resolve here). On a first
// start its notifications go out as Startup says; otherwise they are real
// changes that happened while herald was away, and go out as usual.
func (c *Controller) startupReconcile(ctx context.Context) error {
	start := time.Now()
	undelivered := c.Incidents.Undelivered()
	for _, n := range undelivered {
		if err := c.Dispatcher.Dispatch(ctx, n); err != nil {
			return err
		}
	}
	keys := map[watcher.Key]bool{}
	for _, kind := range c.Watcher.Kinds() {
		if kind == "Namespace" && !slices.Contains(c.rules.Load().Kinds(), kind) {
			continue
		}
		kindKeys, err := c.Watcher.Keys(kind)
		if err != nil {
			return err
		}
		for _, k := range kindKeys {
			keys[k] = true
		}
	}
	for _, s := range c.Incidents.MemberKeys() {
		if k, ok := watcher.ParseKey(s); ok {
			keys[k] = true
		}
	}
	var notes []incident.Notification
	for k := range keys {
		a, err := c.assess(k)
		if err != nil {
			c.Logger.Warn("startup reconcile failed; the worker will retry", "key", k.String(), "error", err)
			c.queue.Add(k)
			continue
		}
		notes = append(notes, c.track(k, a)...)
	}
	// Every object has been seen: members restored from the ledger and
	// not seen again are gone.
	notes = append(notes, c.Incidents.MembersSeen()...)
	mode := "changes"
	if c.FirstStart {
		mode = c.Startup
	}
	c.Logger.Info("startup reconcile done", "objects", len(keys), "notifications", len(notes), "resent", len(undelivered), "mode", mode, "duration", time.Since(start).Round(time.Millisecond))
	switch mode {
	case "silent":
		for _, n := range notes {
			for _, s := range n.Incident.Sinks {
				c.Delivered(n, s)
			}
		}
		return nil
	case "digest":
		return c.dispatchDigests(ctx, notes)
	}
	for _, n := range notes {
		if err := c.Dispatcher.Dispatch(ctx, n); err != nil {
			return err
		}
	}
	return nil
}

// dispatchDigests sends each sink one message listing the incidents found
// for each of its destinations (a route's channel, a rule's): each team
// hears of its own.
func (c *Controller) dispatchDigests(ctx context.Context, notes []incident.Notification) error {
	type where struct{ sink, dest string }
	var order []where
	byDest := map[where][]incident.Notification{}
	for _, n := range notes {
		for _, s := range n.Incident.Sinks {
			w := where{s, sinks.Destination(n, s)}
			if byDest[w] == nil {
				order = append(order, w)
			}
			byDest[w] = append(byDest[w], n)
		}
	}
	for _, w := range order {
		list := byDest[w]
		d := incident.Notification{Transition: incident.Digest, Time: c.Now(), Digest: list,
			Incident: incident.Incident{Sinks: []string{w.sink}}}
		if w.dest != "" {
			d.Incident.Dest = map[string]string{w.sink: w.dest}
		}
		if err := c.Dispatcher.Dispatch(ctx, d); err != nil {
			return err
		}
	}
	return nil
}
