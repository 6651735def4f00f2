package rules

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/herald-k8s/herald/internal/redact"
)

// Evaluation is everything the rules make of one object.
type Evaluation struct {
	Findings []Finding
	// Errors are rules that failed on the object; the others' findings
	// are still in Findings.
	Errors []RuleError
	// Excluded are findings the rules' exclude blocks dropped, for the
	// caller to count (the reconcile loop) or show (herald test).
	Excluded []Excluded
	// Wake: evaluate the object again after this long, though it may not
	// change, for a problem that can begin by the passing of time alone (a
	// CronJob's run comes due and does not start). 0: no such time.
	Wake time.Duration
}

// EvaluateWithExclusions is Evaluate that also says which findings the
// rules' exclude blocks dropped, and why.
func (s *Set) EvaluateWithExclusions(kind string, obj runtime.Object, now time.Time, nsLabels NamespaceLabels) Evaluation {
	var ev Evaluation
	m, ok := obj.(metav1.Object)
	if !ok {
		ev.Errors = []RuleError{{Rule: "*", Err: fmt.Errorf("%T has no object metadata", obj)}}
		return ev
	}
	in := &input{obj: obj, meta: m, now: now, related: s.related, volumes: s.volumes,
		ref: ObjectRef{Kind: kindName(kind), Namespace: m.GetNamespace(), Name: m.GetName(), UID: string(m.GetUID())}}
	var regarding regardingCheck
	for _, r := range s.byKind[kind] {
		if !r.inScope(m, nsLabels) {
			continue
		}
		if r.params.aboutRegarding && regarding.distrusted(s, obj) {
			continue
		}
		found, wake, err := r.evaluateGuarded(in, s.redactor)
		if err != nil {
			ev.Errors = append(ev.Errors, RuleError{Rule: r.name, Err: redactError(err, s.redactor)})
		}
		if wake > 0 && (ev.Wake == 0 || wake < ev.Wake) {
			ev.Wake = wake
		}
		found, err = r.exclusion.apply(found, in, &ev.Excluded)
		if err != nil {
			ev.Errors = append(ev.Errors, RuleError{Rule: r.name, Err: redactError(err, s.redactor)})
		}
		ev.Findings = append(ev.Findings, found...)
	}
	return ev
}

// minWake is the soonest a rule may ask to look at an unchanged object
// again: a detector that asked for less would spin a worker on it.
const minWake = time.Second

// evaluateGuarded runs the rule on one object and asks when to look again
// (wake). A panic in either — a detector, or a library it calls, on an
// object shaped as nothing foresaw — is this rule's error on this object:
// the other rules, the other objects and the process go on.
func (r *Rule) evaluateGuarded(in *input, red *redact.Redactor) (found []Finding, wake time.Duration, err error) {
	defer func() {
		if p := recover(); p != nil {
			found, wake, err = nil, 0, fmt.Errorf("the %s rule failed on this object (a bug in herald; please report it): %v", r.name, p)
		}
	}()
	if r.wake != nil {
		if wake = r.wake(in.obj, r.params, in.now); wake > 0 {
			wake = max(wake, minWake)
		}
	}
	found, err = r.evaluate(in, red)
	return found, wake, err
}
