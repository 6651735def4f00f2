package sinks

import (
	"fmt"
	"time"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/links"
)

// PayloadVersion is the schema version of Payload; docs/payload.md
// documents it. Add fields freely; renaming or removing one needs a new
// version.
const PayloadVersion = "herald.v1"

// Payload is the JSON document webhooks (and later NATS) receive.
type Payload struct {
	Version string `json:"version"`
	// ID is the idempotency key: the same notification delivered twice
	// has the same ID.
	ID         string    `json:"id"`
	Transition string    `json:"transition"`
	Seq        int       `json:"seq"`
	Time       time.Time `json:"time"`
	// Cluster is the configuration's clusterName (omitted when unset):
	// receivers that hear from many clusters tell them apart by it.
	Cluster string `json:"cluster,omitempty"`
	// Epoch names the leader's term that sent it ("transitions.ledger",
	// docs/payload.md): a receiver may refuse a notification of an older
	// epoch than one it has seen. Omitted without leader election.
	Epoch     string            `json:"epoch,omitempty"`
	Incident  PayloadIncident   `json:"incident"`
	Object    PayloadObject     `json:"object"`
	Container string            `json:"container,omitempty"`
	Title     string            `json:"title"`
	Text      string            `json:"text"`
	Facts     map[string]string `json:"facts,omitempty"`
	// Change says what an update changed since the incident's previous
	// notification ("2 → 10 of 10 pods", "restarts 5 → 25", "flapping:
	// …"); updates are paced, so one update may merge many changes.
	Change string `json:"change,omitempty"`
	// Unmuted names what had muted the incident when this is the first
	// notification since that mute ended (the last one said silenced).
	Unmuted string `json:"unmuted,omitempty"`
	// Ack says who acknowledged the incident and when (Slack's
	// Acknowledge button): on the acknowledged notification and on every
	// later one of the incident.
	Ack *PayloadAck `json:"ack,omitempty"`
	// Context is the crash context: log lines, events, node, hint
	// (docs/payload.md).
	Context *incident.Context `json:"context,omitempty"`
	// Changes says what changed in the workload just before the incident
	// began: rollouts, ConfigMaps and Secrets, the undo command, and the
	// whole in words (docs/payload.md); absent when herald keeps no
	// record of the object's workload.
	Changes *incident.Changes `json:"changes,omitempty"`
	// Digest lists the incidents a digest summarises (transition digest).
	Digest []Payload `json:"digest,omitempty"`
}

// PayloadIncident identifies the incident.
type PayloadIncident struct {
	ID          string    `json:"id"`
	Fingerprint string    `json:"fingerprint"`
	Rule        string    `json:"rule"`
	Severity    string    `json:"severity"`
	Reason      string    `json:"reason"`
	FirstSeen   time.Time `json:"firstSeen"`
	// Flapping: the problem keeps coming back; the incident stays open
	// until it has been quiet for the flapping quiet time.
	Flapping bool `json:"flapping,omitempty"`
	// RunbookURL is the rule's runbook link for this problem.
	RunbookURL string `json:"runbookURL,omitempty"`
	// Links are the team's own links for this incident (its rule's and
	// routes' links:), filled from it: a dashboard, a log search.
	Links []links.Link `json:"links,omitempty"`
	// Ended says how a resolved incident ended: "recovered" (the object
	// no longer has the problem) or "deleted" (it is gone).
	Ended string `json:"ended,omitempty"`
}

// PayloadAck is who took the incident on. By is the actor as herald
// knows it ("slack:U0123ABC"), Name their name for people (a Slack
// display name: written by them, escape it like any cluster text).
type PayloadAck struct {
	By   string    `json:"by"`
	Name string    `json:"name,omitempty"`
	At   time.Time `json:"at"`
}

// PayloadObject names the Kubernetes object.
type PayloadObject struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
}

// NewPayloadIn builds the payload of n from the named cluster: the
// digest's members say it too, so each stands on its own when a receiver
// splits a digest.
func NewPayloadIn(n incident.Notification, cluster string) Payload {
	p := NewPayload(n)
	p.Cluster = cluster
	for i := range p.Digest {
		p.Digest[i].Cluster = cluster
	}
	return p
}

// NewPayload builds the payload of n, without a cluster.
func NewPayload(n incident.Notification) Payload {
	if n.Transition == incident.Digest {
		p := Payload{Version: PayloadVersion, ID: n.ID(), Transition: string(n.Transition), Time: n.Time.UTC(),
			Title: DigestTitle(n), Text: DigestTitle(n)}
		for _, d := range n.Digest {
			p.Digest = append(p.Digest, NewPayload(d))
		}
		return p
	}
	inc := n.Incident
	var ack *PayloadAck
	if a := inc.Ack; a != nil {
		ack = &PayloadAck{By: a.By, Name: a.Name, At: a.At.UTC()}
	}
	return Payload{
		Version:    PayloadVersion,
		ID:         n.ID(),
		Transition: string(n.Transition),
		Seq:        n.Seq,
		Time:       n.Time.UTC(),
		Incident: PayloadIncident{
			ID: inc.ID, Fingerprint: inc.Fingerprint, Rule: inc.Rule, Severity: inc.Severity,
			Reason: inc.Reason, FirstSeen: inc.FirstSeen.UTC(), Flapping: inc.Flapping, RunbookURL: inc.RunbookURL, Links: inc.Links, Ended: inc.Ended,
		},
		Object:    PayloadObject{Kind: inc.Object.Kind, Namespace: inc.Object.Namespace, Name: inc.Object.Name, UID: inc.Object.UID},
		Container: inc.Container,
		Title:     inc.Title,
		Text:      inc.Text,
		Facts:     inc.Facts,
		Change:    n.Change,
		Unmuted:   n.Unmuted,
		Ack:       ack,
		Context:   n.Context,
		Changes:   n.Changes,
	}
}

// DigestTitle summarises a digest in one line.
func DigestTitle(n incident.Notification) string {
	return fmt.Sprintf("herald started: %d open %s", len(n.Digest), map[bool]string{true: "incident", false: "incidents"}[len(n.Digest) == 1])
}
