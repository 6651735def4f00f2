package actions

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/silence"
)

// The Silence buttons: a Silence made (once, whoever presses), and one a
// button made ended.

// SilenceName is the Silence a press creates: the same for every
// delivery of the press, so the second create fails as AlreadyExists.
func SilenceName(key string) string {
	h := sha256.Sum256([]byte(key))
	return "slack-" + hex.EncodeToString(h[:6])
}

func (x *Executor) silence(ctx context.Context, p Press, inc incident.Incident, d time.Duration) Result {
	defer x.silencing.lock(inc.ID)()
	if !inc.ResolvedAt.IsZero() {
		return Result{Outcome: Refused, Say: "Incident " + inc.ID + " has resolved: nothing to silence."}
	}
	ns := inc.Object.Namespace
	// This very press, delivered again (to the next leader, which may
	// have seen its silence mute the incident already): done, quietly.
	if ns != "" {
		if own, err := x.opts.Silences.Get(ctx, ns, SilenceName(p.Key)); err == nil {
			x.recordSilenced(ctx, p, inc, own) // idempotent: in case the first delivery died before it
			return Result{Outcome: Already, Quiet: true, Say: "Already silenced by this press (silence " + ns + "/" + own.GetName() + ")."}
		}
	}
	if inc.MutedBy != "" {
		// One mute at a time: pressing again (or a hundred times) must
		// not pile up Silences.
		return Result{Outcome: Already, Say: "Incident " + inc.ID + " is already muted by " + inc.MutedBy + "."}
	}
	if ns != "" {
		// Nor presses quicker than the mute takes effect.
		made, err := x.opts.Silences.List(ctx, ns, map[string]string{LabelIncident: inc.ID, LabelCreatedVia: p.Actor.Via})
		if err != nil {
			return Result{Outcome: Failed, Say: "herald could not read the silences of namespace " + ns + ": " + apiReason(err)}
		}
		for _, s := range made {
			if parsed, err := silence.Parse(&s); err == nil && parsed.State(x.opts.Now()) == "active" {
				return Result{Outcome: Already, Say: "Incident " + inc.ID + " is already silenced by silence " + ns + "/" + s.GetName() + "."}
			}
		}
	}
	if ns == "" {
		return Result{Outcome: Refused, Say: fmt.Sprintf("%s has no namespace: silencing it takes a ClusterSilence, which herald does not create from Slack: herald silence create --incident %s --all-namespaces --for 1h --comment \"why\".", inc.Object.Kind+" "+inc.Object.Name, inc.ID)}
	}
	m, err := silence.ForIncident(inc)
	if err != nil {
		return Result{Outcome: Refused, Say: err.Error()}
	}
	m.Namespace = ns // what a Silence mutes anyway, said where people read it
	now := x.opts.Now()
	end, how := now.Add(d), "for "+words(d)
	if d == 0 {
		m.Incident = inc.ID
		end, how = now.Add(x.opts.MaxSilence), "until it resolves"
	}
	comment := fmt.Sprintf("Silenced from Slack %s (incident %s)", how, inc.ID)
	obj, err := silence.NewSilence(ns, SilenceName(p.Key), m, now, end, comment, p.Actor.By(),
		map[string]string{"app.kubernetes.io/managed-by": "herald", LabelCreatedVia: p.Actor.Via, LabelIncident: inc.ID})
	if err != nil {
		return Result{Outcome: Failed, Say: "herald could not make the silence: " + err.Error()}
	}
	created, err := x.opts.Silences.Create(ctx, obj)
	switch {
	case apierrors.IsAlreadyExists(err):
		if own, err := x.opts.Silences.Get(ctx, ns, obj.GetName()); err == nil {
			x.recordSilenced(ctx, p, inc, own)
		}
		return Result{Outcome: Already, Quiet: true, Say: "Already silenced by this press (silence " + ns + "/" + obj.GetName() + ")."}
	case err != nil:
		return Result{Outcome: Failed, Say: "herald could not create the silence: " + apiReason(err)}
	}
	x.recordSilenced(ctx, p, inc, created)
	return Result{Outcome: Done, Say: fmt.Sprintf("Silenced %s: silence %s/%s mutes it %s.", inc.ID, ns, created.GetName(), how)}
}

// recordSilenced records the Event of p's silence s (once, whichever
// delivery of p gets here).
func (x *Executor) recordSilenced(ctx context.Context, p Press, inc incident.Incident, s *unstructured.Unstructured) {
	comment, _, _ := unstructured.NestedString(s.Object, "spec", "comment")
	x.record(ctx, p, silenceRef(s), "Silenced", p.Actor.By()+": "+comment)
}

func (x *Executor) unsilence(ctx context.Context, p Press, inc incident.Incident) Result {
	ref, ok := strings.CutPrefix(inc.MutedBy, "silence ")
	ns, name, _ := strings.Cut(ref, "/")
	switch {
	case inc.MutedBy == "":
		return Result{Outcome: Already, Say: "Incident " + inc.ID + " is not muted now."}
	case !ok || ns != inc.Object.Namespace:
		return Result{Outcome: Refused, Say: "Incident " + inc.ID + " is muted by " + inc.MutedBy + ", which a button does not end (kubectl, or herald silence)."}
	}
	// Only a silence a button made: one written by hand (a maintenance,
	// another team's) is ended where it was made, by whoever may.
	s, err := x.opts.Silences.Get(ctx, ns, name)
	switch {
	case apierrors.IsNotFound(err):
		return Result{Outcome: Already, Say: "Silence " + ref + " is already gone."}
	case err != nil:
		return Result{Outcome: Failed, Say: "herald could not read silence " + ref + ": " + apiReason(err)}
	case s.GetLabels()[LabelCreatedVia] != p.Actor.Via || s.GetLabels()[LabelIncident] != inc.ID:
		return Result{Outcome: Refused, Say: "Silence " + ref + " was not made from " + p.Actor.Via + " for this incident, so a button does not end it: kubectl delete silence -n " + ns + " " + name + " (or herald silence), if you may."}
	}
	err = x.opts.Silences.Delete(ctx, ns, name, s.GetUID())
	switch {
	case apierrors.IsNotFound(err):
		return Result{Outcome: Already, Say: "Silence " + ref + " is already gone."}
	case err != nil:
		return Result{Outcome: Failed, Say: "herald could not delete silence " + ref + ": " + apiReason(err)}
	}
	x.record(ctx, p, objectRef(inc), "Unsilenced", fmt.Sprintf("%s ended silence %s of incident %s from Slack", p.Actor.By(), ref, inc.ID))
	return Result{Outcome: Done, Say: "Deleted silence " + ref + ": incident " + inc.ID + " is heard again."}
}
