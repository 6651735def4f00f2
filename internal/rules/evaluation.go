package rules

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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
	in := &input{obj: obj, meta: m, now: now,
		ref: ObjectRef{Kind: kindName(kind), Namespace: m.GetNamespace(), Name: m.GetName(), UID: string(m.GetUID())}}
	var regarding regardingCheck
	for _, r := range s.byKind[kind] {
		if !r.inScope(m, nsLabels) {
			continue
		}
		if r.params.aboutRegarding && regarding.distrusted(s, obj) {
			continue
		}
		if r.wake != nil {
			if w := r.wake(obj, r.params, now); w > 0 && (ev.Wake == 0 || w < ev.Wake) {
				ev.Wake = w
			}
		}
		found, err := r.evaluate(in, s.redactor)
		if err != nil {
			ev.Errors = append(ev.Errors, RuleError{Rule: r.name, Err: redactError(err, s.redactor)})
		}
		found, err = r.exclusion.apply(found, in, &ev.Excluded)
		if err != nil {
			ev.Errors = append(ev.Errors, RuleError{Rule: r.name, Err: redactError(err, s.redactor)})
		}
		ev.Findings = append(ev.Findings, found...)
	}
	return ev
}
