package rules

import (
	"fmt"
	"time"

	"github.com/herald-k8s/herald/internal/links"
)

// What a rule's evaluation gives: findings, what they are about, and
// everything the incident tracker, the routes and the sinks need of them.

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
	// For is how long the problem must last before it fires.
	For time.Duration
	// Since is when the problem began according to the object itself
	// (a condition's lastTransitionTime); zero when the object does not
	// say, and then For counts from when herald first saw it.
	Since time.Time
	// RecheckAfter asks for the object to be evaluated again after this
	// long even if it does not change: the finding ends by the passing of
	// time (an OOM kill older than the rule's window).
	RecheckAfter time.Duration
	// Channel routes chat sinks when no route took the finding: the
	// rule's, or one its namespace's annotation chose.
	Channel string
	// Route, Dest and Mentions are the routes' decision (internal/route),
	// which replaced Sinks and Channel when a route matched.
	Route    string
	Dest     map[string]string
	Mentions []string
	// Settling: see Detection.Settling.
	Settling bool
	// Lifecycle settings of the rule, for the incident tracker.
	GroupByWorkload bool
	Repeat          time.Duration
	RestartStep     int
	// UpdateInterval paces the incident's updates (0: none).
	UpdateInterval time.Duration
	// NoContext and NoLogs: the rule's crash context settings.
	NoContext, NoLogs bool
	// RunbookURL is the rule's rendered runbook link ("" if none).
	RunbookURL string
	// RuleLinks are the rule's link templates, and RouteLinks those of
	// the routes that took the finding; Links is what the reconcile loop
	// filled them with (it knows the workload and the time window).
	RuleLinks  links.Set
	RouteLinks []links.Set
	Links      []links.Link
	// Group is the workload a grouped finding belongs to, and GroupTotal
	// how many pods it has; the reconcile loop fills them in from the
	// cache (the rules see one object at a time).
	Group      *ObjectRef
	GroupTotal int
	// Identity, when set, identifies the problem instead of its object
	// (an alert taken in from Alertmanager: its fingerprint), so that
	// two problems on one object with one reason stay two incidents.
	Identity string
}

// RuleError is a rule that failed on one object; the other rules' findings
// are still returned.
type RuleError struct {
	Rule string
	Err  error
}

func (e RuleError) Error() string { return fmt.Sprintf("rule %s: %v", e.Rule, e.Err) }

// NamespaceLabels returns a namespace's labels; ok is false when the
// namespace is not known (yet).
type NamespaceLabels func(namespace string) (labels map[string]string, ok bool)
