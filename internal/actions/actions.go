// Package actions does what a person asks of an incident from its alert
// (a Slack button): silence it, unsilence it, acknowledge it, or read
// more of its log. It knows nothing of Slack: a Press says who asked
// what of which incident, and the Result says what came of it, for the
// receiver to tell them.
//
// Each action is idempotent by the press's Key, so a press that reaches
// two replicas (the leader died before Slack heard its acknowledgement,
// and Slack delivered it again to the next) happens once: a silence's
// name is made from the key (the API server refuses the second create),
// and an acknowledgement is recorded in the ledger before the press is
// answered (the next leader reads it there).
package actions

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/silence"
)

// Kind is what a press asks.
type Kind string

const (
	Silence1h       Kind = "silence-1h"
	Silence4h       Kind = "silence-4h"
	SilenceResolved Kind = "silence-until-resolved"
	Unsilence       Kind = "unsilence"
	Acknowledge     Kind = "acknowledge"
	MoreLogs        Kind = "more-logs"
)

// Permission is the allow list that governs k (config.Interactive's
// names): unsilencing takes what silencing does.
func (k Kind) Permission() string {
	switch k {
	case Acknowledge:
		return "acknowledge"
	case MoreLogs:
		return "moreLogs"
	}
	return "silence"
}

// Actor is who pressed: an ID the receiver vouches for (Slack's user
// ID) and their name for people.
type Actor struct {
	Via, ID, Name string
}

// By is the actor as herald records it: "slack:U0AB12CD (ana)".
func (a Actor) By() string {
	s := a.Via + ":" + a.ID
	if a.Name != "" {
		s += " (" + a.Name + ")"
	}
	return s
}

// Press is one request.
type Press struct {
	// Key is the same for every delivery of one press, and differs
	// between presses (Slack: the action's action_ts and the user).
	Key        string
	Kind       Kind
	IncidentID string
	Actor      Actor
}

// Outcome is how an action ended, for metrics and logs.
type Outcome string

const (
	Done    Outcome = "done"
	Already Outcome = "already" // an earlier delivery of this press, or another press, did it
	Refused Outcome = "refused" // not possible for this incident (resolved, no namespace, …)
	Failed  Outcome = "failed"  // an API error: the press may be tried again
)

// Result is what came of a press.
type Result struct {
	Outcome Outcome
	// Say is one sentence for the person who pressed.
	Say string
	// Logs are More logs' lines.
	Logs *incident.Logs
	// Quiet: this very press was carried out before (Slack delivered it
	// again, to this replica or the next leader): nothing to say twice.
	Quiet bool
}

// Incidents is what actions read and change of the tracker.
type Incidents interface {
	Lookup(id string) (incident.Incident, bool)
	Acks() incident.Acks
}

// Silences creates, reads and deletes Silence resources.
type Silences interface {
	Create(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error)
	Get(ctx context.Context, namespace, name string) (*unstructured.Unstructured, error)
	// List returns the Silences of namespace with the labels given.
	List(ctx context.Context, namespace string, labels map[string]string) ([]unstructured.Unstructured, error)
	// Delete deletes the Silence with that UID (a precondition: not one
	// made again under its name since it was read).
	Delete(ctx context.Context, namespace, name string, uid types.UID) error
}

// Labels of the Silences a press creates.
const (
	LabelCreatedVia = "herald.io/created-via"
	LabelIncident   = "herald.io/incident"
)

// Options wire an Executor.
type Options struct {
	Incidents Incidents
	// Dispatch sends a notification the way the reconcile loop does
	// (an acknowledgement's, to every sink of its incident).
	Dispatch func(ctx context.Context, n incident.Notification) error
	// Saved says when the ledger holds a change (nil: not persisted,
	// nothing to wait for).
	Saved    *incident.Saved
	Silences Silences
	// Events records what was done as a Kubernetes Event (nil: not).
	Events func(ctx context.Context, ev *corev1.Event) error
	// Logs fetches more of an incident's log (nil: not available).
	Logs func(ctx context.Context, inc incident.Incident, lines int) (*incident.Logs, error)
	// MaxSilence bounds "until resolved" (silences.maxDuration).
	MaxSilence time.Duration
	Now        func() time.Time
	Logger     *slog.Logger
}

// Executor carries out presses.
type Executor struct {
	opts Options
	// silencing serialises the silence presses of one incident: two
	// people pressing at once would each find no silence and each make
	// one. Presses of other incidents go side by side.
	silencing keyedLock
}

// New makes an Executor.
func New(opts Options) *Executor {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxSilence <= 0 {
		opts.MaxSilence = silence.MaxDuration
	}
	return &Executor{opts: opts}
}

// Do carries out p.
func (x *Executor) Do(ctx context.Context, p Press) Result {
	inc, ok := x.opts.Incidents.Lookup(p.IncidentID)
	if !ok {
		return Result{Outcome: Refused, Say: "herald no longer knows incident " + p.IncidentID + ": it resolved long ago, or this Slack app also serves another cluster's herald (give each cluster its own Slack app: docs/buttons.md)."}
	}
	switch p.Kind {
	case Silence1h:
		return x.silence(ctx, p, inc, time.Hour)
	case Silence4h:
		return x.silence(ctx, p, inc, 4*time.Hour)
	case SilenceResolved:
		return x.silence(ctx, p, inc, 0)
	case Unsilence:
		return x.unsilence(ctx, p, inc)
	case Acknowledge:
		return x.acknowledge(ctx, p, inc)
	case MoreLogs:
		return x.moreLogs(ctx, p, inc)
	}
	return Result{Outcome: Refused, Say: "herald does not know that button."}
}

func (x *Executor) acknowledge(ctx context.Context, p Press, inc incident.Incident) Result {
	n, version, res := x.opts.Incidents.Acks().Record(inc.ID, incident.Ack{By: p.Actor.Via + ":" + p.Actor.ID, Name: p.Actor.Name, At: x.opts.Now(), Key: p.Key})
	switch res {
	case incident.AckNotOpen:
		return Result{Outcome: Refused, Say: "Incident " + inc.ID + " has resolved: nothing to acknowledge."}
	case incident.AckAlready:
		who, same := "someone", false
		if cur, ok := x.opts.Incidents.Lookup(inc.ID); ok && cur.Ack != nil {
			who, same = cur.Ack.By, cur.Ack.Key == p.Key
			if cur.Ack.Name != "" {
				who = cur.Ack.Name
			}
		}
		if same { // this press, delivered again: its Event, in case the first delivery died before it
			x.record(ctx, p, objectRef(inc), "Acknowledged", fmt.Sprintf("%s acknowledged incident %s (%s) from Slack", p.Actor.By(), inc.ID, inc.Reason))
		}
		return Result{Outcome: Already, Quiet: same, Say: "Incident " + inc.ID + " is already acknowledged by " + who + "."}
	}
	// Answered only once the ledger has it: a press the next leader
	// receives again finds it there and does nothing.
	if x.opts.Saved != nil {
		if err := x.opts.Saved.Wait(ctx, version); err != nil {
			return Result{Outcome: Failed, Say: "herald could not record the acknowledgement in time; press again."}
		}
	}
	if err := x.opts.Dispatch(ctx, n); err != nil {
		// Pending in the ledger: the sinks hear of it at the latest
		// from the next leader.
		x.opts.Logger.Warn("acknowledgement recorded, its notification is delayed", "incident", inc.ID, "error", err)
	}
	x.record(ctx, p, objectRef(inc), "Acknowledged", fmt.Sprintf("%s acknowledged incident %s (%s) from Slack", p.Actor.By(), inc.ID, inc.Reason))
	return Result{Outcome: Done, Say: "Acknowledged " + inc.ID + "."}
}

func (x *Executor) moreLogs(ctx context.Context, p Press, inc incident.Incident) Result {
	if x.opts.Logs == nil {
		return Result{Outcome: Refused, Say: "Crash context is off (context.enabled: false): herald reads no logs."}
	}
	logs, err := x.opts.Logs(ctx, inc, 100)
	if err != nil {
		return Result{Outcome: Refused, Say: "No more logs: " + err.Error()}
	}
	return Result{Outcome: Done, Logs: logs}
}

// record writes ev about what a press did, when herald records Events;
// failing to is logged, not fatal (the action is done).
func (x *Executor) record(ctx context.Context, p Press, on corev1.ObjectReference, reason, message string) {
	if x.opts.Events == nil || on.Name == "" {
		return
	}
	ns := on.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	now := metav1.NewTime(x.opts.Now())
	ev := &corev1.Event{
		// Named from the press: a second delivery's Event is the same.
		ObjectMeta:     metav1.ObjectMeta{Name: "herald-" + strings.TrimPrefix(SilenceName(p.Key+"/"+reason), "slack-"), Namespace: ns},
		InvolvedObject: on, Reason: reason, Message: message, Type: corev1.EventTypeNormal,
		Source: corev1.EventSource{Component: "herald"}, FirstTimestamp: now, LastTimestamp: now, Count: 1,
		ReportingController: "herald.io/herald", ReportingInstance: "herald",
	}
	if err := x.opts.Events(ctx, ev); err != nil && !apierrors.IsAlreadyExists(err) {
		x.opts.Logger.Warn("recording an Event of a Slack action", "reason", reason, "object", on.Kind+" "+on.Namespace+"/"+on.Name, "error", err)
	}
}

func silenceRef(s *unstructured.Unstructured) corev1.ObjectReference {
	return corev1.ObjectReference{APIVersion: s.GetAPIVersion(), Kind: s.GetKind(), Namespace: s.GetNamespace(), Name: s.GetName(), UID: s.GetUID()}
}

func objectRef(inc incident.Incident) corev1.ObjectReference {
	ref := corev1.ObjectReference{Kind: inc.Object.Kind, Namespace: inc.Object.Namespace, Name: inc.Object.Name, UID: types.UID(inc.Object.UID)}
	switch inc.Object.Kind {
	case "Pod", "Node", "Namespace":
		ref.APIVersion = "v1"
	case "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet":
		ref.APIVersion = "apps/v1"
	case "Job", "CronJob":
		ref.APIVersion = "batch/v1"
	}
	return ref
}

// apiReason is an API error in one line, without the request's URL.
func apiReason(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return status.Status().Message
	}
	return err.Error()
}

func words(d time.Duration) string {
	if d%time.Hour == 0 {
		return fmt.Sprintf("%d h", d/time.Hour)
	}
	return d.String()
}

// Lookup returns the incident a press names.
func (x *Executor) Lookup(id string) (incident.Incident, bool) { return x.opts.Incidents.Lookup(id) }
