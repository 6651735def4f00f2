// Package rules turns the configured rules into compiled matchers: a cheap
// scope check that event handlers run before enqueueing, and an Evaluate
// that workers run on the cached object to produce findings.
package rules

import (
	"errors"
	"fmt"
	"path"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/herald-k8s/herald/config"
)

// ObjectRef names the object a finding is about.
type ObjectRef struct {
	Kind, Namespace, Name, UID string
}

// Finding is one problem a rule sees on one object (and container) now.
type Finding struct {
	Rule, Reason, Severity string
	Object                 ObjectRef
	// Container is set when the finding is about one container.
	Container string
	// Facts are details for messages: restartCount, exitCode, ...
	Facts map[string]string
	// Title and Text are the rendered message.
	Title, Text string
	// Sinks the notification goes to, by name.
	Sinks []string
	// Sustaining marks a problem that is not visible at this instant but
	// from which the object has not recovered either (a crash-looping
	// container that is briefly running between crashes). It keeps an
	// open incident open and never opens a new one.
	Sustaining bool
}

// Rule is one compiled rule.
type Rule struct {
	name, kind, severity string
	include, exclude     []string
	sinks                []string
	detector             Detector
}

// Set is every compiled rule, indexed by kind.
type Set struct {
	byKind map[string][]*Rule
}

// Compile checks and compiles the configured rules. Errors carry the
// config file's positions; all of them are returned at once.
func Compile(cfg *config.Config) (*Set, error) {
	set := &Set{byKind: map[string][]*Rule{}}
	var errs config.Errors
	for i, rc := range cfg.Rules {
		p := fmt.Sprintf("rules[%d]", i)
		kd, ok := detectors[rc.Kind]
		if !ok {
			errs = append(errs, cfg.ErrorAt(p+".kind", "unsupported kind %q; supported: %s", rc.Kind, supportedKinds()))
			continue
		}
		det, ok := kd[rc.Detector]
		if !ok {
			errs = append(errs, cfg.ErrorAt(p+".detector", "unknown detector %q for kind %s; available: %s", rc.Detector, rc.Kind, detectorNames(rc.Kind)))
			continue
		}
		set.byKind[rc.Kind] = append(set.byKind[rc.Kind], &Rule{
			name: rc.Name, kind: rc.Kind, severity: rc.Severity,
			include: rc.Namespaces.Include, exclude: rc.Namespaces.Exclude,
			sinks: rc.Sinks, detector: det,
		})
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return set, nil
}

// Kinds lists the kinds some rule watches: only these get informers.
func (s *Set) Kinds() []string {
	kinds := make([]string, 0, len(s.byKind))
	for k := range s.byKind {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	return kinds
}

// InScope reports whether any rule of kind could fire for obj. Event
// handlers call it before enqueueing, so it only looks at metadata.
func (s *Set) InScope(kind string, obj metav1.Object) bool {
	for _, r := range s.byKind[kind] {
		if r.inScope(obj) {
			return true
		}
	}
	return false
}

func (r *Rule) inScope(obj metav1.Object) bool {
	ns := obj.GetNamespace()
	if matchAny(r.exclude, ns) {
		return false
	}
	return len(r.include) == 0 || matchAny(r.include, ns)
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
// obj belongs to the informer cache and is only read.
func (s *Set) Evaluate(kind string, obj runtime.Object) ([]Finding, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T has no object metadata", obj)
	}
	ref := ObjectRef{Kind: kind, Namespace: m.GetNamespace(), Name: m.GetName(), UID: string(m.GetUID())}
	var findings []Finding
	var errs []error
	for _, r := range s.byKind[kind] {
		if !r.inScope(m) {
			continue
		}
		found, err := r.detector(obj)
		if err != nil {
			errs = append(errs, fmt.Errorf("rule %s: %w", r.name, err))
			continue
		}
		for _, d := range found {
			f := Finding{
				Rule: r.name, Reason: d.Reason, Severity: r.severity,
				Object: ref, Container: d.Container, Facts: d.Facts,
				Sinks: r.sinks, Sustaining: d.Sustaining,
			}
			f.Title, f.Text = render(f, d)
			findings = append(findings, f)
		}
	}
	return findings, errors.Join(errs...)
}
