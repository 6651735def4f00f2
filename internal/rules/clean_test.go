package rules

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
)

// TestFindingsAreRedacted: whatever a finding carries from the object — a
// termination message, an Event's note and the detail made of it, what a
// template reads from the object — holds no secret the redactor knows
// (nor one of the configuration's context.redact patterns), and still
// says what was there.
func TestFindingsAreRedacted(t *testing.T) {
	const (
		termSecret  = "Tr0ub4dor-and-3"
		noteSecret  = "ghp_R2d2C3poL0ngT0kenF0rT3st1ngAbcd12345"
		annSecret   = "s3cr3t-in-annotation"
		extraSecret = "customer-48151623"
	)
	cfg := `
context: {redact: ['customer-[0-9]+']}
rules:
  - name: crash
    kind: Pod
    detector: crashloop
    message:
      title: '{{ .Reason }} {{ .Facts.lastMessage | trunc 40 }}'
      text: 'note: {{ .Object.metadata.annotations.note }}; last: {{ .Facts.lastMessage }}'
    runbookURL: 'https://runbooks.example.com/{{ .Object.metadata.annotations.note }}'
    sinks: [out]
  - {name: events, kind: Event, detector: warning-events, sinks: [out]}
sinks: [{name: out, stdout: {}}]
`
	set := compile(t, cfg)
	pod := loadObject(t, "crashloop.yaml").(*corev1.Pod).DeepCopy()
	pod.Annotations = map[string]string{"note": "db password=" + annSecret}
	for i := range pod.Status.ContainerStatuses {
		if term := pod.Status.ContainerStatuses[i].LastTerminationState.Terminated; term != nil {
			term.Message = "FATAL: connecting with password=" + termSecret + " for " + extraSecret
		}
	}
	ev := loadObject(t, "event-backoff.yaml").(*eventsv1.Event).DeepCopy()
	ev.Note = "pulling with token " + noteSecret + " failed"

	var texts []string
	for _, obj := range []struct {
		kind string
		o    any
	}{{"Pod", pod}, {"Event", ev}} {
		var findings []Finding
		var errs []RuleError
		switch o := obj.o.(type) {
		case *corev1.Pod:
			findings, errs = set.Evaluate("Pod", o, now, nil)
		case *eventsv1.Event:
			findings, errs = set.Evaluate("Event", o, now, nil)
		}
		if len(findings) == 0 || len(errs) > 0 {
			t.Fatalf("%s: %d findings, errors %v", obj.kind, len(findings), errs)
		}
		for _, f := range findings {
			texts = append(texts, f.Title, f.Text, f.RunbookURL)
			for _, v := range f.Facts {
				texts = append(texts, v)
			}
		}
	}
	all := strings.Join(texts, "\n")
	for _, secret := range []string{termSecret, noteSecret, annSecret, extraSecret} {
		if strings.Contains(all, secret) {
			t.Errorf("%q is in a finding:\n%s", secret, all)
		}
	}
	for _, want := range []string{"password=<redacted>", "token <redacted GitHub token> failed", "for <redacted>"} {
		if !strings.Contains(all, want) {
			t.Errorf("the findings do not say %q:\n%s", want, all)
		}
	}
}

// TestRuleErrorsAreRedacted: a rule's error, which herald logs, does not
// quote a secret of the object (CEL quotes a bad pattern it was given).
func TestRuleErrorsAreRedacted(t *testing.T) {
	set := compile(t, `
rules:
  - {name: c, kind: Pod, condition: 'object.metadata.name.matches(object.metadata.annotations.n)', sinks: [out]}
sinks: [{name: out, stdout: {}}]
`)
	pod := loadObject(t, "crashloop.yaml").(*corev1.Pod).DeepCopy()
	pod.Annotations = map[string]string{"n": "(password=hunter2-Pa55"}
	_, errs := set.Evaluate("Pod", pod, now, nil)
	if len(errs) != 1 || strings.Contains(errs[0].Error(), "hunter2") || !strings.Contains(errs[0].Error(), "password=<redacted>") {
		t.Errorf("errors %v, want one, redacted", errs)
	}
}
