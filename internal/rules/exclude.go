package rules

import (
	"fmt"
	"path"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/herald-k8s/herald/config"
)

// A rule's exclude block (config.Exclude) drops findings that are known
// noise. It runs after the rule has made its findings, so every excluded
// finding can be counted (herald_findings_excluded_total) and shown by
// `herald test`: the detectors are cheap, and the costly part, the when
// expression, runs only on objects that have a finding. logPattern sees
// the finding's facts as the operator would: redacted and cut to MaxFact
// (clean.go), which also bounds the regexp's (linear) work.

// Exclusion kinds, the `by` label of herald_findings_excluded_total.
const (
	ByNames      = "names"
	ByContainers = "containers"
	ByNamespaces = "namespaces"
	ByLabels     = "labels"
	ByLogPattern = "logPattern"
	ByWhen       = "when"
)

// logFacts are the facts that carry what a crash said: the log line
// enrichment adds, the termination message (with the container's
// terminationMessagePolicy FallbackToLogsOnError, its last log lines),
// a waiting container's or a condition's message, an Event's note.
var logFacts = []string{"lastLogLine", "lastMessage", "message", "note"}

// Excluded is a finding a rule's exclude block dropped.
type Excluded struct {
	Finding Finding
	// By is which kind of exclusion matched (ByNames, ...).
	By string
	// Path is where it is configured (rules[0].exclude.containers),
	// Pattern what matched there ("istio-proxy").
	Path, Pattern string
	// Subject is what the pattern matched, e.g. "container istio-proxy"
	// or "workload Deployment/canary-web".
	Subject string
}

// String reads `excluded by rules[0].exclude.containers "istio-proxy"
// (container istio-proxy)`.
func (e Excluded) String() string {
	s := fmt.Sprintf("excluded by %s %q", e.Path, e.Pattern)
	if e.Subject != "" {
		s += " (" + e.Subject + ")"
	}
	return s
}

// exclusion is a compiled exclude block.
type exclusion struct {
	path                          string // rules[i].exclude
	names, containers, namespaces []string
	labelsSrc                     string
	labels                        labels.Selector
	logSrc                        string
	logRE                         *regexp.Regexp
	when                          *condition
}

func compileExclude(cfg *config.Config, p string, ex *config.Exclude, env *celEnv) (*exclusion, config.Errors) {
	if ex == nil {
		return nil, nil
	}
	x := &exclusion{path: p, names: ex.Names, containers: ex.Containers, namespaces: ex.Namespaces,
		labelsSrc: ex.Labels, logSrc: ex.LogPattern}
	var errs config.Errors
	var err error
	if ex.Labels != "" {
		if x.labels, err = labels.Parse(ex.Labels); err != nil {
			errs = append(errs, cfg.ErrorAt(p+".labels", "bad label selector: %v", err))
		}
	}
	if ex.LogPattern != "" {
		if x.logRE, err = regexp.Compile(ex.LogPattern); err != nil {
			errs = append(errs, cfg.ErrorAt(p+".logPattern", "bad regular expression: %v", err)) // config checked it
		}
	}
	if ex.When != "" {
		cond, issues := env.compile(ex.When)
		for _, is := range issues {
			errs = append(errs, cfg.ErrorInValue(p+".when", is.line, is.col, "%s", is.msg))
		}
		x.when = cond
	}
	return x, errs
}

// apply keeps the findings no exclusion matches and adds the others to
// excluded. A when expression that fails keeps the findings it would have
// judged (fail open: nothing is lost) and returns its error, reported as
// the rule's.
func (x *exclusion) apply(found []Finding, in *input, excluded *[]Excluded) ([]Finding, error) {
	if x == nil || len(found) == 0 {
		return found, nil
	}
	kept := found[:0:0]
	var whenErr error
	whenDone, whenTrue := false, false
	for _, f := range found {
		e, ok := x.match(f, in)
		if !ok && x.when != nil && whenErr == nil {
			if !whenDone {
				whenTrue, whenErr = x.evalWhen(in)
				whenDone = true
			}
			if whenTrue {
				e, ok = Excluded{By: ByWhen, Path: x.path + ".when", Pattern: x.when.source}, true
			}
		}
		if !ok {
			kept = append(kept, f)
			continue
		}
		e.Finding = f
		*excluded = append(*excluded, e)
	}
	return kept, whenErr
}

// match checks the cheap exclusions, object-wide first, then per finding.
func (x *exclusion) match(f Finding, in *input) (Excluded, bool) {
	at := func(by, pattern, subject string) (Excluded, bool) {
		return Excluded{By: by, Path: x.path + "." + by, Pattern: pattern, Subject: subject}, true
	}
	if g, ok := firstMatch(x.namespaces, f.Object.Namespace); ok {
		return at(ByNamespaces, g, "namespace "+f.Object.Namespace)
	}
	if g, ok := firstMatch(x.names, f.Object.Name); ok {
		return at(ByNames, g, "name "+f.Object.Name)
	}
	if len(x.names) > 0 && f.Object.UID == in.ref.UID {
		if kind, name, owned := workload(in); owned {
			if g, ok := firstMatch(x.names, name); ok {
				return at(ByNames, g, "workload "+kind+"/"+name)
			}
		}
	}
	if x.labels != nil && x.labels.Matches(labels.Set(in.meta.GetLabels())) {
		return at(ByLabels, x.labelsSrc, "")
	}
	if f.Container != "" {
		if g, ok := firstMatch(x.containers, f.Container); ok {
			return at(ByContainers, g, "container "+f.Container)
		}
	}
	if x.logRE != nil {
		for _, k := range logFacts {
			if v := f.Facts[k]; v != "" && x.logRE.MatchString(v) {
				return at(ByLogPattern, x.logSrc, "fact "+k)
			}
		}
	}
	return Excluded{}, false
}

func (x *exclusion) evalWhen(in *input) (bool, error) {
	obj, err := in.objectMap()
	if err != nil {
		return false, fmt.Errorf("exclude.when: %w", err)
	}
	ok, err := x.when.eval(obj, in.now)
	if err != nil {
		return false, fmt.Errorf("exclude.when: %w", err)
	}
	return ok, nil
}

func firstMatch(globs []string, s string) (string, bool) {
	for _, g := range globs {
		// Globs were checked when the config was loaded.
		if ok, _ := path.Match(g, s); ok {
			return g, true
		}
	}
	return "", false
}

// workload names the controller that owns the evaluated object: a
// Deployment through its ReplicaSet (whose name is the Deployment's and
// the pod-template-hash), else the controlling owner. The watcher's index
// reads pods the same way; rules may not import it (docs/architecture.md).
func workload(in *input) (kind, name string, owned bool) {
	for _, o := range in.meta.GetOwnerReferences() {
		if o.Controller == nil || !*o.Controller {
			continue
		}
		if hash := in.meta.GetLabels()["pod-template-hash"]; o.Kind == "ReplicaSet" && hash != "" && strings.HasSuffix(o.Name, "-"+hash) {
			return "Deployment", strings.TrimSuffix(o.Name, "-"+hash), true
		}
		return o.Kind, o.Name, true
	}
	return "", "", false
}

// whenSource is the when expression's text ("" if none), for the
// annotations and fields the cache must keep.
func (x *exclusion) whenSource() string {
	if x == nil || x.when == nil {
		return ""
	}
	return x.when.source
}
