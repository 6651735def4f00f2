// Package rules turns the configured rules into compiled matchers: a cheap
// scope check that event handlers run before enqueueing, and an Evaluate
// that workers run on the cached object to produce findings.
package rules

import (
	"cmp"
	"fmt"
	"maps"
	"path"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/herald-k8s/herald/config"
	"github.com/herald-k8s/herald/internal/links"
	"github.com/herald-k8s/herald/internal/redact"
)

// Rule is one compiled rule.
type Rule struct {
	name, kind, severity, reason string
	include, exclude             []string
	nsSelector, selector         labels.Selector
	sinks                        []string
	forDur, repeat, updateEvery  time.Duration
	groupBy                      bool
	channel                      string
	restartStep                  int
	noContext, noLogs            bool
	detector                     Detector
	// wake: see detectorSpec.wake (nil for most detectors).
	wake      func(obj runtime.Object, p Params, now time.Time) time.Duration
	params    Params
	condition *condition
	message   *message
	exclusion *exclusion // exclude.go
	links     links.Set
	reads     string // detectorSpec.reads
	// readsVolumes: detectorSpec.readsVolumes.
	readsVolumes bool
}

// Set is every compiled rule, indexed by kind.
type Set struct {
	byKind map[string][]*Rule
	// needsNamespaces is true when some rule selects namespaces by label.
	needsNamespaces bool
	// groups is true when some rule groups by workload.
	groups bool
	// ignored is told of Events whose regarding object is not believed.
	ignored IgnoredEvent
	// redactor removes secrets from what findings carry: the built-in
	// patterns and the configuration's context.redact.
	redactor *redact.Redactor
	// reads are kinds detectors read through related (EndpointSlices),
	// which no rule watches itself.
	reads   []string
	related Related
	volumes VolumeStats
}

// UseRelated gives the detectors that read other cached objects (a
// Service's EndpointSlices) their lookups; without it they find nothing.
// Call it before the Set is used.
func (s *Set) UseRelated(r Related) { s.related = r }

// UseVolumes gives volume-filling the kubelet's readings; without it the
// detector finds nothing. Call it before the Set is used.
func (s *Set) UseVolumes(v VolumeStats) { s.volumes = v }

// VolumeWindow is the longest window of the rules that read volume
// stats: how long their samples must be kept. 0: no rule reads them, and
// nothing need poll the kubelets.
func (s *Set) VolumeWindow() time.Duration {
	var longest time.Duration
	for _, rs := range s.byKind {
		for _, r := range rs {
			if r.readsVolumes {
				longest = max(longest, r.params.Window)
			}
		}
	}
	return longest
}

// Reads lists the kinds detectors read beside the ones rules watch
// (EndpointSlice for no-endpoints): they are cached and watched too, and
// a change of one is a change of the object it belongs to.
func (s *Set) Reads() []string { return s.reads }

// Compile checks and compiles the configured rules: kinds, detectors, CEL
// conditions, selectors and templates. Errors carry the config file's
// positions; all of them are returned at once.
func Compile(cfg *config.Config) (*Set, error) {
	red, err := redact.New(cfg.Context.Redact)
	if err != nil {
		return nil, fmt.Errorf("context.%w", err) // config.Validate checked them
	}
	set := &Set{byKind: map[string][]*Rule{}, redactor: red}
	var errs config.Errors
	celEnv, err := newCELEnv()
	if err != nil {
		return nil, err
	}
	for i, rc := range cfg.Rules {
		p := fmt.Sprintf("rules[%d]", i)
		r, ruleErrs := compileRule(cfg, p, rc, celEnv)
		errs = append(errs, ruleErrs...)
		if r != nil {
			set.byKind[r.kind] = append(set.byKind[r.kind], r)
			set.needsNamespaces = set.needsNamespaces || r.nsSelector != nil
			set.groups = set.groups || r.groupBy
			if r.reads != "" && !slices.Contains(set.reads, r.reads) {
				set.reads = append(set.reads, r.reads)
			}
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	set.trustCustomKinds()
	return set, nil
}

func compileRule(cfg *config.Config, p string, rc config.Rule, celEnv *celEnv) (*Rule, config.Errors) {
	var errs config.Errors
	kind, err := KindID(rc.Kind, rc.APIVersion)
	if err != nil {
		field := ".apiVersion"
		if rc.APIVersion == "" {
			field = ".kind"
		}
		return nil, config.Errors{cfg.ErrorAt(p+field, "%v", err)}
	}
	r := &Rule{
		name: rc.Name, kind: kind, severity: rc.Severity, reason: rc.Reason,
		include: rc.Namespaces.Include, exclude: rc.Namespaces.Exclude, sinks: rc.Sinks,
		params:  Params{Threshold: rc.Threshold, Window: rc.Window, Reasons: rc.Reasons, Except: rc.Except, Critical: rc.Critical},
		groupBy: rc.GroupBy == "workload", repeat: rc.Repeat, restartStep: rc.RestartStep,
		channel: rc.Channel,
	}
	r.noContext, r.noLogs = !cfg.ContextOn(rc), !cfg.LogsOn(rc)
	if rc.UpdateInterval != nil { // set by config.Parse's defaults
		r.updateEvery = *rc.UpdateInterval
	}
	if rc.Detector != "" {
		spec, ok := detectors[kind][rc.Detector]
		switch {
		case !ok && len(detectors[kind]) == 0:
			errs = append(errs, cfg.ErrorAt(p+".detector", "kind %s has no built-in detectors; use a CEL condition (detectors exist for %s)", rc.Kind, kindsWithDetectors()))
		case !ok:
			errs = append(errs, cfg.ErrorAt(p+".detector", "unknown detector %q for kind %s; available: %s", rc.Detector, rc.Kind, detectorNames(kind)))
		default:
			r.detector, r.wake, r.reads = spec.detect, spec.wake, spec.reads
			r.forDur = spec.defaultFor
			r.params = r.params.withDefaults(spec, rc.Settle)
			r.readsVolumes = spec.readsVolumes
			if r.params.Horizon = spec.defaultHorizon; rc.Horizon != nil {
				r.params.Horizon = *rc.Horizon
			}
			if spec.readsVolumes {
				errs = append(errs, checkVolumeParams(cfg, p, r.params)...)
			}
		}
	}
	if rc.Condition != "" {
		if r.reason == "" {
			r.reason = rc.Name
		}
		cond, issues := celEnv.compile(rc.Condition)
		for _, is := range issues {
			errs = append(errs, cfg.ErrorInValue(p+".condition", is.line, is.col, "%s", is.msg))
		}
		if cond != nil {
			if yields, wrong := cond.sampleYield(rc.Kind); wrong {
				errs = append(errs, cfg.ErrorAt(p+".condition", "CEL: the condition must be true or false, but on a %s it yields a %s (compare it: == \"…\", > 0, has(…))", rc.Kind, yields))
			}
		}
		r.condition = cond
	}
	if r.groupBy && kind != "Pod" {
		errs = append(errs, cfg.ErrorAt(p+".groupBy", "groupBy: workload groups pods; this rule watches %s", rc.Kind))
	}
	if rc.For != nil {
		r.forDur = *rc.For
		if bound := detectors[kind][rc.Detector].forIsBound; bound != "" && r.forDur <= 0 {
			errs = append(errs, cfg.ErrorAt(p+".for", "for: is %s before the %s detector alerts: give the longest that is normal (e.g. for: 2h), not %s", bound, rc.Detector, r.forDur))
		}
	}
	if rc.Labels != "" {
		if r.selector, err = labels.Parse(rc.Labels); err != nil {
			errs = append(errs, cfg.ErrorAt(p+".labels", "bad label selector: %v", err))
		}
	}
	if rc.Namespaces.Labels != "" {
		if r.nsSelector, err = labels.Parse(rc.Namespaces.Labels); err != nil {
			errs = append(errs, cfg.ErrorAt(p+".namespaces.labels", "bad label selector: %v", err))
		}
	}
	var exclErrs, linkErrs config.Errors
	r.exclusion, exclErrs = compileExclude(cfg, p+".exclude", rc.Exclude, celEnv)
	errs = append(errs, exclErrs...)
	r.links, linkErrs = links.Compile(cfg, p+".links", rc.Links)
	errs = append(errs, linkErrs...)
	msg, msgErrs := compileMessage(rc.Message, rc.RunbookURL)
	for _, e := range msgErrs {
		field := p + ".message." + e.field
		if e.field == "runbookURL" {
			field = p + ".runbookURL"
		}
		errs = append(errs, cfg.ErrorAt(field, "%v", e.err))
	}
	r.message = msg
	if len(errs) > 0 {
		return nil, errs
	}
	return r, nil
}

// Kinds lists the kinds some rule watches: only these get informers.
func (s *Set) Kinds() []string {
	kinds := slices.Collect(maps.Keys(s.byKind))
	for _, k := range s.reads {
		if !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	slices.Sort(kinds)
	return kinds
}

// NeedsNamespaces reports whether a rule selects namespaces by label, so
// that the watcher must cache namespaces too.
func (s *Set) NeedsNamespaces() bool { return s.needsNamespaces }

// RuleNames lists the rules' names.
func (s *Set) RuleNames() []string {
	var names []string
	for _, rs := range s.byKind {
		for _, r := range rs {
			names = append(names, r.name)
		}
	}
	slices.Sort(names)
	return names
}

// GroupsByWorkload reports whether a rule groups pods by workload, so that
// the pod cache must be indexed by workload.
func (s *Set) GroupsByWorkload() bool { return s.groups }

// NeedsWholeObject reports whether some rule of kind reads fields the
// built-in detectors do not: a CEL condition or a template using .Object
// may read any field, so such a kind must be cached whole.
func (s *Set) NeedsWholeObject(kind string) bool {
	for _, r := range s.byKind[kind] {
		if r.condition != nil || (r.message != nil && r.message.needsObject) || r.exclusion.whenSource() != "" {
			return true
		}
	}
	return false
}

// InScope reports whether any rule of kind could fire for obj. Event
// handlers call it before enqueueing, so it only looks at metadata.
func (s *Set) InScope(kind string, obj metav1.Object, nsLabels NamespaceLabels) bool {
	for _, r := range s.byKind[kind] {
		if r.inScope(obj, nsLabels) {
			return true
		}
	}
	return false
}

func (r *Rule) inScope(obj metav1.Object, nsLabels NamespaceLabels) bool {
	ns := obj.GetNamespace()
	if matchAny(r.exclude, ns) || (len(r.include) > 0 && !matchAny(r.include, ns)) {
		return false
	}
	if r.selector != nil && !r.selector.Matches(labels.Set(obj.GetLabels())) {
		return false
	}
	if r.nsSelector != nil {
		if ns == "" || nsLabels == nil {
			return false
		}
		l, ok := nsLabels(ns)
		if !ok || !r.nsSelector.Matches(labels.Set(l)) {
			return false
		}
	}
	return true
}

func matchAny(patterns []string, s string) bool {
	for _, p := range patterns {
		// Patterns were checked when the config was loaded.
		if ok, _ := path.Match(p, s); ok {
			return true
		}
	}
	return false
}

// Evaluate runs every rule of kind against obj and returns what they find.
// obj belongs to the informer cache and is only read. A rule that fails is
// reported in the errors; the other rules' findings are returned.
func (s *Set) Evaluate(kind string, obj runtime.Object, now time.Time, nsLabels NamespaceLabels) ([]Finding, []RuleError) {
	ev := s.EvaluateWithExclusions(kind, obj, now, nsLabels)
	return ev.Findings, ev.Errors
}

// input is one object being evaluated; its map form is made at most once
// and only if a CEL condition or a template needs it.
type input struct {
	related Related
	volumes VolumeStats
	obj     runtime.Object
	meta    metav1.Object
	ref     ObjectRef
	now     time.Time
	asMap   map[string]any
	mapErr  error
	mapDone bool
}

func (in *input) objectMap() (map[string]any, error) {
	if !in.mapDone {
		in.asMap, in.mapErr = toMap(in.obj)
		in.mapDone = true
	}
	return in.asMap, in.mapErr
}

// evaluate runs the rule on one object. Each finding is made here, and
// here what it carries from the object is bounded and redacted (clean.go).
func (r *Rule) evaluate(in *input, red *redact.Redactor) ([]Finding, error) {
	var found []Detection
	if r.detector != nil {
		p := r.params
		p.related, p.volumes = in.related, in.volumes
		d, err := r.detector(in.obj, p, in.now)
		if err != nil {
			return nil, err
		}
		found = d
	} else {
		obj, err := in.objectMap()
		if err != nil {
			return nil, err
		}
		ok, err := r.condition.eval(obj, in.now)
		if err != nil {
			return nil, err
		}
		if ok {
			found = []Detection{{Reason: r.reason}}
		}
	}
	findings := make([]Finding, 0, len(found))
	var renderErr error
	for _, d := range found {
		cleanDetection(&d, red)
		f := Finding{
			Rule: r.name, Reason: d.Reason, Severity: cmp.Or(d.Severity, r.severity),
			Object: in.ref, Container: d.Container, Facts: d.Facts,
			Sinks: r.sinks, Sustaining: d.Sustaining, Settling: d.Settling, For: r.forDur,
			Since: d.Since, RecheckAfter: d.RecheckAfter,
			GroupByWorkload: r.groupBy, Repeat: r.repeat, RestartStep: r.restartStep, UpdateInterval: r.updateEvery,
			NoContext: r.noContext, NoLogs: r.noLogs,
			Channel: r.channel, RuleLinks: r.links,
		}
		if d.Object != nil {
			f.Object = *d.Object
		}
		var err error
		f.Title, f.Text, f.RunbookURL, err = r.message.render(f, d, in, red)
		if err != nil && renderErr == nil {
			renderErr = fmt.Errorf("message template: %w", err)
		}
		findings = append(findings, f)
	}
	return findings, renderErr
}
