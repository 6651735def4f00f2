// Package incident turns findings into incidents with a lifecycle, so that
// a problem is announced once when it starts, updated when it materially
// changes, and announced once more when it is over, however many times the
// object changes in between, and whether or not herald restarted meanwhile:
// the tracker's state is what the ledger persists.
//
// # The tracker and its stages
//
// The Tracker owns the incidents and their identity (its book, book.go):
// fingerprints, open and resolved incidents, which objects are members of
// what, occurrence numbers, and the snapshot the ledger persists. Each
// policy that decides whether and when to speak is a stage: a type of
// its own, in its own file, holding its own state, tested alone on a fake
// clock (stages_test.go and the stage's own tests).
//
// # The order of the stages
//
// This is the one place the order is written (docs/architecture.md says
// it for people). Tracker.Reconcile, for each finding of an object:
//
//  1. an open incident of the finding's fingerprint continues: its
//     membership changes (and whether the member is settling, waits),
//     then its updates are paced (pacer, pacing.go) and its repeats are
//     quieted once acknowledged (Acks, ack.go);
//  2. a finding that only sustains a problem opens nothing;
//  3. pending: the rule's for: is waited out (waits, waits.go);
//  4. the namespace's cap (namespaceCap, overflow.go): past it, the
//     problem joins the namespace's overflow incident;
//  5. otherwise an incident opens, flap damping (flapping, flapping.go)
//     giving it its recent starts.
//
// For a finding no longer seen, its incident resolves after the hold-down
// — none if the member was settling (waits) — unless flap damping keeps
// it open (flapping). Every notification then passes muting — silences,
// windows, annotations, inhibition (muting, mute.go) — before it is
// numbered and recorded as pending for each sink (notify and record,
// record.go; deliveries, delivery.go, keeps what each sink still owes).
// Two are never held: the resolution of an incident that was announced
// (no message stays red), and an acknowledgement (a person's act, not
// news; Acks.Record records it directly).
package incident

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"time"

	"github.com/herald-k8s/herald/internal/links"
	"github.com/herald-k8s/herald/internal/rules"
)

// Transition is what happened to an incident.
type Transition string

const (
	Firing   Transition = "firing"
	Updated  Transition = "updated"
	Repeat   Transition = "repeat"
	Resolved Transition = "resolved"
	// Digest is a summary of many firing incidents sent as one message
	// (first start with startup: digest).
	Digest Transition = "digest"
	// Silenced says a silence (or an annotation, or a maintenance
	// window) now mutes an incident that was announced: its message can
	// say so, and that nothing more comes until the mute ends.
	Silenced Transition = "silenced"
)

// How an incident ended (Incident.Ended).
const (
	// EndedRecovered: the object is still there and no longer has the
	// problem.
	EndedRecovered = "recovered"
	// EndedDeleted: the object (for a grouped incident, its last
	// affected pod) was deleted.
	EndedDeleted = "deleted"
	// EndedRuleRemoved: a configuration reload removed its rule.
	EndedRuleRemoved = "rule-removed"
	// EndedRuleChanged: a configuration reload changed its rule (a new
	// exclude, condition or selector), which no longer finds the problem
	// — the problem itself may remain.
	EndedRuleChanged = "rule-changed"
)

// Incident is one problem on one object (and container), or on one
// workload's pods when its rule groups by workload, from first sight until
// it is over. It is what the ledger stores.
type Incident struct {
	// ID names this occurrence of the problem: the fingerprint and the
	// occurrence number. A problem that resolves and comes back later is
	// a new incident with a new ID, so receivers that drop redeliveries by
	// ID never drop its notifications; and since the number comes from the
	// ledger, a herald that restarts (or a new leader) before its last
	// ledger write gives the same problem the same ID again, so a
	// notification it repeats carries the same idempotency key.
	ID          string            `json:"id"`
	Occurrence  int               `json:"occ"`
	Fingerprint string            `json:"fp"`
	Rule        string            `json:"rule"`
	Severity    string            `json:"sev"`
	Reason      string            `json:"reason"`
	Object      rules.ObjectRef   `json:"obj"`
	Container   string            `json:"ctr,omitempty"`
	Facts       map[string]string `json:"facts,omitempty"`
	Title       string            `json:"title"`
	Text        string            `json:"text"`
	Sinks       []string          `json:"sinks"`
	FirstSeen   time.Time         `json:"first"`
	// Seq is the number of the last notification made, LastTransition
	// its transition.
	Seq            int        `json:"seq"`
	LastNotified   time.Time  `json:"notified"`
	LastTransition Transition `json:"lastTr,omitempty"`
	// Members are object keys that have the problem now, sorted: the
	// one object of a plain incident; of a grouped one (the affected
	// pods), the first MaxMemberSample (members.go). MemberCount is how
	// many have it.
	Members     []string `json:"members,omitempty"`
	MemberCount int      `json:"count,omitempty"`
	Grouped     bool     `json:"grouped,omitempty"`
	// Total is the pod count of a grouped incident's workload.
	Total int `json:"total,omitempty"`
	// NotifiedMembers and NotifiedRestarts are what the last notification
	// said, so that only a material change sends an update, also after a
	// restart.
	NotifiedMembers  int `json:"nMembers,omitempty"`
	NotifiedRestarts int `json:"nRestarts,omitempty"`
	// ResolvingSince is set while the problem is gone but the resolve
	// hold-down has not passed.
	ResolvingSince time.Time `json:"resolving,omitzero"`
	// HeldUntil is set while a change waits out the update interval: it
	// goes out then as one update saying what changed since the last
	// notification (pacing.go). Kept in the ledger, so a restart neither
	// loses the update nor sends it twice.
	HeldUntil time.Time `json:"held,omitzero"`
	// MutedBy says what holds the incident's notifications back (a
	// silence, a maintenance window, an inhibiting incident) and
	// MutedUntil until when (zero: while that lasts); empty when nothing
	// does. Kept in the ledger: a restart re-sends nothing and still
	// sends what is owed when the mute ends (mute.go).
	MutedBy    string    `json:"mutedBy,omitempty"`
	MutedUntil time.Time `json:"mutedUntil,omitzero"`
	// MutedBySource is the fingerprint of the incident that inhibits
	// this one (empty: not inhibited).
	MutedBySource string `json:"mutedSrc,omitempty"`
	// MutedWho is who asked for the mute (Mute.Who).
	MutedWho string `json:"mutedWho,omitempty"`
	// Covers is how many open incidents this one inhibits now, and
	// NotifiedCovers how many its last notification said: a node's
	// message says how many pods' incidents it explains.
	Covers         int `json:"covers,omitempty"`
	NotifiedCovers int `json:"nCovers,omitempty"`
	// Starts are when this problem's recent occurrences began, this one
	// included, within the flapping window (flapping.go).
	Starts []time.Time `json:"starts,omitempty"`
	// Flapping is set once the problem has come back too often: the
	// incident then resolves only after the flapping quiet time.
	Flapping   bool      `json:"flapping,omitempty"`
	ResolvedAt time.Time `json:"resolved,omitzero"`
	// Ended says how a resolved incident ended (EndedRecovered,
	// EndedDeleted), so that its message can say so rather than repeat
	// what was wrong.
	Ended string `json:"ended,omitempty"`
	// Gone marks a tombstone in the ledger's journal: the incident left
	// the ledger, and its older copies in other shards are not current
	// (journal.go). A tracker never holds one.
	Gone bool `json:"gone,omitempty"`
	// Pending lists notifications not yet accepted by every sink.
	Pending []Pending `json:"pending,omitempty"`
	// Channel routes chat sinks (the rule's, or a namespace's override).
	Channel string `json:"channel,omitempty"`
	// Route names the routes that chose Sinks (empty: the rule's sinks);
	// Dest is, by sink, the Slack channel or the named destination they
	// chose; Mentions are the Slack IDs (S…, U…, W…) to notify. Decided
	// when the incident fires and kept, so that every notification of it
	// goes where the first went.
	Route    string            `json:"route,omitempty"` // names joined with commas (Routes)
	Dest     map[string]string `json:"dest,omitempty"`
	Mentions []string          `json:"mention,omitempty"`
	// Refs are what sinks need to find their earlier message again, by
	// sink (Slack: channel and ts, to edit it in place).
	Refs map[string]string `json:"refs,omitempty"`
	// NoContext and NoLogs are the rule's context settings (context:
	// {enabled: false} or {logs: false}).
	NoContext bool `json:"noCtx,omitempty"`
	NoLogs    bool `json:"noLogs,omitempty"`
	// RunbookURL is the rule's link for this problem.
	RunbookURL string `json:"runbook,omitempty"`
	// Links are the rule's and the routes' links, filled at the last
	// reconcile (internal/links).
	Links []links.Link `json:"links,omitempty"`
	// Ack is who took the incident on, if anyone (ack.go).
	Ack *Ack `json:"ack,omitempty"`

	// ruleChanged: a reload changed the incident's rule and its finding
	// has not been seen since (RuleChanged); if it resolves now, that is
	// why.
	ruleChanged bool
	// members is every member (in memory only); unseen counts members
	// restored from the ledger and not seen since (members.go).
	members map[string]struct{}
	unseen  int

	repeat      time.Duration
	restartStep int
	updateEvery time.Duration
	// rev is the tracker's version at the incident's last change (0:
	// restored, not changed since); the ledger re-encodes only incidents
	// whose rev moved.
	rev uint64
	// snap is the ledger's copy of the incident as of snap.rev: reused
	// by Snapshot until the incident changes.
	snap *Incident
	// listed and ordered: the snapshots that last listed the incident and
	// last placed it in order (snaporder.go).
	listed, ordered uint64
}

// Pending is one notification and the sinks that have not accepted it.
type Pending struct {
	Seq        int        `json:"seq"`
	Transition Transition `json:"tr"`
	Change     string     `json:"change,omitempty"`
	Unmuted    string     `json:"unmuted,omitempty"`
	Time       time.Time  `json:"time"`
	Sinks      []string   `json:"sinks"`
}

// Notification is one message about an incident.
type Notification struct {
	Incident   Incident
	Transition Transition
	// Seq counts the incident's notifications from 1; with the incident
	// ID it is the idempotency key.
	Seq  int
	Time time.Time
	// Change says what an update (or a flapping mark) changed since the
	// incident's previous notification: "2 → 10 of 10 pods".
	Change string
	// Unmuted names what had muted the incident (Mute.By) when this
	// notification is the first since that mute ended and the last one
	// said "silenced": the channel must learn the silence is over, or the
	// message would keep saying it is.
	Unmuted string
	// Context is the crash context internal/enrich attached (nil: none
	// was wanted, or none could be had).
	Context *Context
	// Changes says what changed just before the incident began
	// (internal/changes; nil: not a workload herald records).
	Changes *Changes
	// Digest holds the notifications a Digest summarises.
	Digest []Notification
}

// ID is the idempotency key receivers use to drop redeliveries: the same
// notification sent twice has the same ID, two different ones never do.
func (n Notification) ID() string {
	if n.Transition == Digest {
		id := "digest-" + strconv.FormatInt(n.Time.UnixMilli(), 36) + "-" + strings.Join(n.Incident.Sinks, ",")
		for _, s := range n.Incident.Sinks { // one digest per destination
			if d := n.Incident.Dest[s]; d != "" {
				id += "-" + d
			}
		}
		return id
	}
	return n.Incident.ID + "-" + strconv.Itoa(n.Seq)
}

// Fingerprint identifies the incident a finding belongs to. It is stable
// across herald restarts: it hashes only what names the problem. A grouped
// finding is identified by its workload instead of its pod.
func Fingerprint(f rules.Finding) string {
	who := f.Object.UID
	switch {
	case f.Identity != "":
		who = "identity:" + f.Identity
	case f.GroupByWorkload && f.Group != nil:
		who = "workload:" + f.Group.Namespace + "/" + f.Group.Kind + "/" + f.Group.Name
	}
	h := sha256.Sum256([]byte(strings.Join([]string{f.Rule, who, f.Container, f.Reason}, "\x00")))
	return hex.EncodeToString(h[:8])
}

// Problem is the reason of herald's own checks for what the incident is
// about: its reason, or, for an alert taken in from outside whose
// problem herald knows (KubePodCrashLooping is a CrashLoopBackOff), that
// one, so that its crash context and hint are a crash loop's.
func (inc *Incident) Problem() string {
	if p := inc.Facts["problem"]; p != "" {
		return p
	}
	return inc.Reason
}

// Routes lists the names of the routes that chose the incident's sinks
// (Route holds them joined with commas; route names have none).
func (inc *Incident) Routes() []string {
	if inc.Route == "" {
		return nil
	}
	return strings.Split(inc.Route, ",")
}
