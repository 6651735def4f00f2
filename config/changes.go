package config

import (
	"fmt"
	"slices"
	"time"
)

// Changes configures the "What changed" section of failure alerts: the
// rollouts of the failing workload and the edits of the ConfigMaps and
// Secrets its pods read, within Window before the failure
// (docs/rules.md#what-changed). It is context.changes, beside the crash
// context, but needs no API request per notification: herald learns it
// from the workloads it watches and from ConfigMap and Secret metadata.
type Changes struct {
	// Enabled turns the record and the section on (default true).
	Enabled *bool `yaml:"enabled"`
	// Window is how far before a failure a change is reported (default
	// 30m, at most 24h).
	Window time.Duration `yaml:"window"`
	// Kinds are the workload kinds whose rollouts are recorded (default
	// Deployment, StatefulSet, DaemonSet; no others are supported).
	Kinds []string `yaml:"kinds"`
	// ConfigObjects: also say when a ConfigMap or Secret the pod template
	// reads changed (default true; needs list and watch on their
	// metadata, never their data).
	ConfigObjects *bool `yaml:"configObjects"`
}

// DefaultChangesWindow is how far back a failure's changes are looked for.
const DefaultChangesWindow = 30 * time.Minute

// ChangeKinds are the workload kinds whose rollouts herald can record.
var ChangeKinds = []string{"Deployment", "StatefulSet", "DaemonSet"}

func (c *Changes) applyDefaults() {
	c.Enabled = orDefault(c.Enabled, true)
	c.ConfigObjects = orDefault(c.ConfigObjects, true)
	if c.Window == 0 {
		c.Window = DefaultChangesWindow
	}
	if c.Kinds == nil {
		c.Kinds = slices.Clone(ChangeKinds)
	}
}

func (c *Changes) validate(add func(path, format string, args ...any)) {
	if c.Window < time.Minute || c.Window > 24*time.Hour {
		add("context.changes.window", "must be between 1m and 24h, got %s", c.Window)
	}
	if c.Kinds != nil && len(c.Kinds) == 0 && isTrue(c.Enabled) {
		add("context.changes.kinds", "names no kind: list Deployment, StatefulSet or DaemonSet, or set context.changes.enabled: false")
	}
	for i, k := range c.Kinds {
		if !slices.Contains(ChangeKinds, k) {
			add(fmt.Sprintf("context.changes.kinds[%d]", i), "must be one of Deployment, StatefulSet, DaemonSet; got %q", k)
		}
	}
}

// On reports whether the change record is on.
func (c *Changes) On() bool { return isTrue(c.Enabled) && len(c.Kinds) > 0 }
