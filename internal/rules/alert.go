package rules

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/herald-k8s/herald/config"
	"github.com/herald-k8s/herald/internal/redact"
)

// AlertRule is the rule name of findings made from alerts another system
// raised (Alertmanager's, taken in by internal/intake): routes, silences
// and inhibit rules select them by it.
const AlertRule = config.AlertRule

// Alert is a problem another system found, as the intake read it: who
// found it, about which object, in its own words. Every text in it
// comes from outside herald and is untrusted; AlertFinding bounds and
// redacts it like a detector's facts.
type Alert struct {
	// Name is the alert's name (Alertmanager's alertname label), the
	// finding's reason; Fingerprint is the sender's identity of the
	// alert (Alertmanager's fingerprint).
	Name, Fingerprint string
	// Severity is info, warning or critical.
	Severity string
	// Object is what the alert is about. Mapped is false when its labels
	// named nothing herald could match: Object then holds at most the
	// namespace the labels named.
	Object    ObjectRef
	Container string
	Mapped    bool
	// Summary, Description and RunbookURL are the alert's annotations of
	// those names.
	Summary, Description, RunbookURL string
	// Labels are the alert's labels.
	Labels map[string]string
	// Since is when the sender says the problem began.
	Since time.Time
	// Sinks the finding goes to when no route takes it; Repeat and
	// UpdateInterval as a rule's.
	Sinks          []string
	Repeat         time.Duration
	UpdateInterval time.Duration
	// Problem is the reason of herald's own checks that names the same
	// problem ("" when none does): the crash context reads it as the
	// incident's reason (incident.Incident.Problem).
	Problem string
	// Agrees is set when a check of herald's own sees the same problem
	// on the object (the reason it found), and joined its finding into
	// this one; Observed are that finding's facts (restarts, exit code),
	// which herald made and cleaned.
	Agrees   string
	Observed map[string]string
}

// UnmappedNote ends the text of an alert whose labels name no object.
const UnmappedNote = "\n\n(herald could not match this alert's labels to an object in the cluster; it is routed by its labels)"

// MaxAlertLabels bounds the labels an alert's finding carries as facts:
// a sender can attach any number.
const MaxAlertLabels = 32

// AlertFinding is the finding an alert makes: its annotations lead the
// message, its labels are its facts, and its identity is the sender's
// fingerprint, so that two alerts on one object stay two incidents. Like
// every finding, what it carries is bounded and redacted here, before
// the tracker, the ledger, a sink or a log line sees it.
func (s *Set) AlertFinding(a Alert) Finding {
	red := s.redactor
	clean := func(v string, n int) string {
		return truncate(red.Redact(stripControls(redact.Bound(v, 8*n))), n)
	}
	f := Finding{
		Rule: AlertRule, Reason: red.Redact(a.Name), Severity: a.Severity,
		Object: a.Object, Container: a.Container, Identity: a.Fingerprint,
		Facts: maps.Clone(a.Observed), Since: a.Since, Sinks: a.Sinks,
		Repeat: a.Repeat, UpdateInterval: a.UpdateInterval,
	}
	if f.Facts == nil {
		f.Facts = map[string]string{}
	}
	if a.Problem != "" {
		f.Facts["problem"] = a.Problem
	}
	keys := slices.Sorted(maps.Keys(a.Labels))
	if len(keys) > MaxAlertLabels {
		f.Facts["labelsLeftOut"] = fmt.Sprint(len(keys) - MaxAlertLabels)
		keys = keys[:MaxAlertLabels]
	}
	for _, k := range keys {
		// Redacted as the pair it is, so that the redactor knows a
		// secret by its key (password=…) as it does in a log line.
		pair := clean(k+"="+a.Labels[k], 2*MaxFact)
		name, value, _ := strings.Cut(pair, "=")
		f.Facts["label."+truncate(name, 64)] = truncate(value, MaxFact)
	}
	f.Facts["alertFingerprint"] = a.Fingerprint
	if a.Agrees != "" {
		f.Facts["agrees"] = "herald (" + a.Agrees + ")"
	}

	// Titled like herald's own (what, where); the alert's own words
	// lead the text.
	f.Title = a.Name
	if a.Mapped {
		f.Title += ": " + objectTitle(a.Object, a.Container)
	}
	f.Title = clean(f.Title, MaxTitle)
	text := strings.TrimSpace(a.Summary + "\n" + a.Description)
	if !a.Mapped {
		// Said, so that nobody looks for logs and changes that are not
		// there: herald could not tell which object this is about.
		text = strings.TrimSpace(text + UnmappedNote)
	}
	f.Text = clean(text, MaxText)
	if u, err := url.Parse(a.RunbookURL); err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" && len(a.RunbookURL) <= MaxRunbookURL {
		f.RunbookURL = red.Redact(stripControls(a.RunbookURL))
	}
	// The crash context reads the pod's log and events with herald's
	// own permissions: only for a problem herald sees on the pod itself
	// (Agrees), never on an alert's word alone, which anyone who can
	// write a Prometheus rule can make name any pod.
	f.NoContext = a.Agrees == ""
	// Alertmanager decided the alert has lasted long enough: no wait.
	return f
}

// MoreSevere returns the more severe of two severities.
func MoreSevere(a, b string) string {
	rank := map[string]int{"info": 1, "warning": 2, "critical": 3}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// objectTitle names an object for a title: "Pod shop/web-1 container app".
func objectTitle(o ObjectRef, container string) string {
	s := o.Kind + " " + o.Name
	if o.Namespace != "" {
		s = o.Kind + " " + o.Namespace + "/" + o.Name
	}
	if container != "" {
		s += " container " + container
	}
	return s
}
