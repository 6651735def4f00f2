package rules

import (
	"strings"

	"github.com/herald-k8s/herald/internal/redact"
	"github.com/herald-k8s/herald/internal/termsafe"
)

// What a finding carries from the object — its facts (a termination
// message, an Event's note), the detector's detail, the rendered title,
// text and runbook link — is bounded and redacted where the finding is
// made, in Rule.evaluate: the one place every finding passes, whoever
// asks for it (the reconcile loop and its start-up pass, `herald test`).
// So the incident tracker, the ledger's ConfigMaps, every sink and
// herald's own log hold only redacted text ("redact once, early",
// docs/architecture.md). Facts and detail are redacted before a template sees them
// (a template that cuts or rewrites a value would hide it from the
// redactor), the rendered text after (a template may read the object
// itself). What names the incident (rule, reason, object and container
// names) is not rewritten.

// MaxFact bounds one fact's value. Facts come from the object (a
// termination message can be megabytes) and travel into every payload and
// the ledger.
const MaxFact = 1024

// cleanDetection bounds each fact and the detail, makes them valid UTF-8
// and redacts them. The redactor sees more than is kept (the cut comes
// after it), so a secret across the cut is recognised whole.
func cleanDetection(d *Detection, red *redact.Redactor) {
	for k, v := range d.Facts {
		d.Facts[k] = truncate(red.Redact(stripControls(redact.Bound(v, 8*MaxFact))), MaxFact)
	}
	// Controls go first: a key word split by one (pass\x00word=…) would
	// read whole only after the redactor had passed.
	d.Detail = red.Redact(stripControls(redact.Bound(d.Detail, 8*MaxText)))
}

// stripControls removes what would act on a terminal or forge a line in a
// chat client's rendering — C0 controls but new line and tab, DEL, C1,
// the bidirectional overrides, the Unicode line separators — from text
// the object wrote (an OSC 52 clipboard write in a termination message).
func stripControls(s string) string {
	unsafe := func(r rune) bool { return r != '\n' && termsafe.Unsafe(r) }
	if !strings.ContainsFunc(s, unsafe) {
		return s
	}
	return strings.Map(func(r rune) rune {
		if unsafe(r) {
			return -1
		}
		return r
	}, s)
}

// redactError gives err a redacted text, for herald's log: a CEL error
// can quote a value of the object (a pattern that does not compile).
// errors.Is and As still see err.
func redactError(err error, red *redact.Redactor) error {
	if text := truncate(red.Redact(stripControls(redact.Bound(err.Error(), 8*MaxFact))), MaxFact); text != err.Error() {
		return redactedError{err, text}
	}
	return err
}

type redactedError struct {
	err  error
	text string
}

func (e redactedError) Error() string { return e.text }
func (e redactedError) Unwrap() error { return e.err }
