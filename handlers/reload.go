package handlers

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/rules"
	"github.com/herald-k8s/herald/watcher"
)

// Rules changed at run time (a configuration reload): informers made or
// stopped, the Namespace cache kept while something needs it, and kinds
// whose CRD was missing retried.

// Reload puts a new rule set in force without a restart: kinds new to it
// get informers (started at once), kinds no rule needs any more are
// stopped, incidents of removed rules resolve ("rule removed"), and every
// object of the watched kinds is queued so the new rules see what exists.
// changed names the rules kept whose definition changed: an incident of
// theirs that resolves before its problem is seen again says so. ctx
// bounds handing the resolutions to the sinks.
func (c *Controller) Reload(ctx context.Context, set *rules.Set, changed map[string]bool) error {
	old := c.rules.Load()
	set.UseRelated(c.Watcher)
	set.UseVolumes(c.Volumes)
	// A new rule that reads fields the compact pod cache dropped makes
	// the pod informer list again, whole (below).
	podsWhole := c.Watcher.Compacted("Pod") && set.NeedsWholeObject("Pod")
	if set.GroupsByWorkload() && !old.GroupsByWorkload() && !podsWhole {
		if err := c.Watcher.IndexPodsByWorkload(); err != nil {
			return fmt.Errorf("indexing pods by workload needs a restart: %w", err)
		}
	}
	if set.NeedsNamespaces() || c.routes.Load().NeedsNamespaces() {
		if _, err := c.Watcher.Informer("Namespace"); err != nil {
			return err
		}
	}
	// In force before any informer is made, so new informers cache what
	// the new rules read.
	c.rules.Store(set)
	var added []string
	for _, kind := range set.Kinds() {
		isNew := !slices.Contains(old.Kinds(), kind)
		// A kind new to the rules may be watched already, pinned by
		// another reader (internal/changes) and keeping less than the
		// new rules read: it lists again too.
		if !isNew && kind == "Pod" && podsWhole || !c.keepsEnough(kind, set) {
			// The cache dropped what the new rules read: it lists again.
			// Workers wait for the new cache (ErrNotSynced).
			c.Watcher.Remove(kind)
			isNew = true
		}
		if isNew {
			if err := c.watch(kind); err != nil {
				c.rules.Store(old)
				return fmt.Errorf("watching %s: %w", kind, err)
			}
			added = append(added, kind)
		}
	}
	if podsWhole && set.GroupsByWorkload() {
		// The new pod informer needs the index before it starts.
		if err := c.Watcher.IndexPodsByWorkload(); err != nil {
			return err
		}
	}
	c.Watcher.StartAdded()
	for _, kind := range old.Kinds() {
		keepNamespaces := kind == "Namespace" && c.keepsNamespaces(set)
		switch {
		case slices.Contains(set.Kinds(), kind) || keepNamespaces:
		case c.Watcher.Pinned(kind):
			c.unwatch(kind) // the informer stays for its other reader
		default:
			c.unwatch(kind)
			c.Watcher.Remove(kind)
		}
	}
	removed := map[string]bool{}
	for _, name := range old.RuleNames() {
		if !slices.Contains(set.RuleNames(), name) {
			removed[name] = true
		}
	}
	c.Incidents.RuleChanged(changed)
	resolved := 0
	if len(removed) > 0 {
		err := c.outbox.hand(ctx, func() []incident.Notification {
			notes := c.Incidents.ResolveRules(removed, c.Now())
			resolved = len(notes)
			c.announce(notes, slog.String("reason", incident.RuleRemoved))
			return notes
		})
		if err != nil {
			// Only when ctx ends (herald stopping): the rules are in
			// force, and the ledger keeps what was not handed on.
			c.Logger.Warn("resolutions of removed rules not handed to the sinks; the ledger keeps them", "error", err)
		}
	}
	queued := 0
	for _, kind := range set.Kinds() {
		keys, err := c.Watcher.Keys(kind)
		if err != nil {
			continue // a kind added just now fills its queue as it lists
		}
		for _, k := range keys {
			c.queue.Add(k)
			queued++
		}
	}
	c.Logger.Info("rules reloaded", "rules", len(set.RuleNames()), "kindsAdded", added, "rulesRemoved", len(removed), "incidentsResolved", resolved, "objectsQueued", queued)
	return nil
}

// retryLateKinds tries the kinds that could not be watched at start every
// interval until they all can.
func (c *Controller) retryLateKinds(ctx context.Context, interval time.Duration) {
	for len(c.lateKinds) > 0 {
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
		var still []string
		for _, kind := range c.lateKinds {
			if err := c.watch(kind); err != nil {
				still = append(still, kind)
				continue
			}
			c.Logger.Info("now watching kind", "kind", kind)
		}
		c.lateKinds = still
		c.Watcher.Start(ctx)
	}
}

// keepsNamespaces says whether the Namespace cache is needed under set.
func (c *Controller) keepsNamespaces(set *rules.Set) bool {
	return set.NeedsNamespaces() || c.RouteByNamespace || c.Namespaces || c.routes.Load().NeedsNamespaces()
}

// keepFor is what the cache of kind keeps under set (watcher.Keep).
func keepFor(set *rules.Set, kind string) watcher.Keep {
	keys, all := set.AnnotationsRead(kind)
	return watcher.Keep{Whole: set.NeedsWholeObject(kind), Annotations: keys, AllAnnotations: all}
}

// keepsEnough reports whether kind's cache holds what set's rules read.
func (c *Controller) keepsEnough(kind string, set *rules.Set) bool {
	kept, ok := c.Watcher.Keeps(kind)
	return !ok || kept.Covers(keepFor(set, kind))
}

// Rules returns the rule set in force.
func (c *Controller) Rules() *rules.Set { return c.rules.Load() }
