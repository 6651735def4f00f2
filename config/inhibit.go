package config

import (
	"fmt"
	"slices"
)

// Inhibit configures inhibition: while a source incident is open, the
// target incidents it covers send nothing (they still open and resolve;
// what they owe goes out when the source resolves).
type Inhibit struct {
	// Builtin turns on herald's own inhibitions (default true): a
	// NotReady node mutes the incidents of pods on it, and a stuck
	// rollout mutes its Deployment's crash loops.
	Builtin *bool `yaml:"builtin"`
	// Rules are inhibitions of your own.
	Rules []InhibitRule `yaml:"rules"`
}

// InhibitRule mutes target incidents while a source incident is open and
// both have the same value of every field in Equal.
type InhibitRule struct {
	Source IncidentMatcher `yaml:"source"`
	Target IncidentMatcher `yaml:"target"`
	// Equal lists what source and target must share: node (a Node's name,
	// a pod's node), workload (a workload incident's, a pod's owner),
	// namespace.
	Equal []string `yaml:"equal"`
}

// IncidentMatcher selects incidents; every field given must match.
type IncidentMatcher struct {
	Rule     string `yaml:"rule"`
	Kind     string `yaml:"kind"`
	Reason   string `yaml:"reason"`
	Severity string `yaml:"severity"`
}

// InhibitEqualFields are the fields an inhibit rule may require equal.
var InhibitEqualFields = []string{"node", "workload", "namespace"}

// BuiltinInhibitions are on unless inhibit.builtin is false.
func (c *Config) BuiltinInhibitions() bool { return isTrue(c.Inhibit.Builtin) }

func (m IncidentMatcher) empty() bool { return m == IncidentMatcher{} }

func (c *Config) validateInhibit(add func(path, format string, args ...any)) {
	for i, r := range c.Inhibit.Rules {
		p := fmt.Sprintf("inhibit.rules[%d]", i)
		if r.Source.empty() {
			add(p+".source", "must name at least one of rule, kind, reason, severity (an empty source would inhibit on any incident)")
		}
		if r.Target.empty() {
			add(p+".target", "must name at least one of rule, kind, reason, severity (an empty target would mute every incident)")
		}
		if r.Source.Severity != "" && !severities[r.Source.Severity] {
			add(p+".source.severity", "must be info, warning or critical; got %q", r.Source.Severity)
		}
		if r.Target.Severity != "" && !severities[r.Target.Severity] {
			add(p+".target.severity", "must be info, warning or critical; got %q", r.Target.Severity)
		}
		if len(r.Equal) == 0 {
			add(p+".equal", "must list at least one of %v: without it one incident anywhere would mute its targets everywhere", InhibitEqualFields)
		}
		for j, f := range r.Equal {
			if !slices.Contains(InhibitEqualFields, f) {
				add(fmt.Sprintf("%s.equal[%d]", p, j), "must be one of %v; got %q", InhibitEqualFields, f)
			}
		}
	}
}
