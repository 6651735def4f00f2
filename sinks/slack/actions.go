package slack

import (
	"slices"
	"strconv"
	"time"

	"github.com/slack-go/slack"

	"github.com/herald-k8s/herald/internal/incident"
)

// Buttons. With Socket Mode configured (Options.Interactive), a message
// about an open incident ends with buttons to act on it from the channel:
// silence it, acknowledge it, read more of its logs, or, once muted,
// unsilence it. Every button's value is the incident's ID; Slack sends the
// press (action_id and value) to herald's Socket Mode receiver, which
// reads it with ParseAction and decides whether the presser may. A press
// is never trusted beyond that: the value names an incident, the receiver
// looks it up in the ledger.

// The action_id of each of herald's buttons, and the block_id of the
// block that holds them.
const (
	ActionSilence1h       = "herald_silence_1h"
	ActionSilence4h       = "herald_silence_4h"
	ActionSilenceResolved = "herald_silence_resolved"
	ActionAck             = "herald_ack"
	ActionMoreLogs        = "herald_more_logs"
	ActionUnsilence       = "herald_unsilence"

	ActionsBlockID = "herald_actions"
)

// Op is what a button asks herald to do.
type Op int

const (
	// OpSilence: create a Silence for the incident (Action.For long, or
	// until it resolves).
	OpSilence Op = iota + 1
	// OpAck: acknowledge the incident (incident.Acks.Record).
	OpAck
	// OpMoreLogs: post more of the container's log lines in the thread.
	OpMoreLogs
	// OpUnsilence: end the silence that mutes the incident.
	OpUnsilence
)

// Action is one of herald's buttons.
type Action struct {
	// ID is its action_id (one of the Action… constants).
	ID string
	// Label is what the button says.
	Label string
	Op    Op
	// For is how long a silence lasts (OpSilence); zero with
	// UntilResolved.
	For time.Duration
	// UntilResolved: the silence matches this one incident
	// (matchers.incident), so it ends in effect when the incident does.
	UntilResolved bool
}

// actions are herald's buttons, in the order an open incident's message
// shows them.
var actions = [...]Action{
	{ID: ActionSilence1h, Label: "Silence 1 h", Op: OpSilence, For: time.Hour},
	{ID: ActionSilence4h, Label: "Silence 4 h", Op: OpSilence, For: 4 * time.Hour},
	{ID: ActionSilenceResolved, Label: "Silence until resolved", Op: OpSilence, UntilResolved: true},
	{ID: ActionAck, Label: "Acknowledge", Op: OpAck},
	{ID: ActionMoreLogs, Label: "More logs", Op: OpMoreLogs},
	{ID: ActionUnsilence, Label: "Unsilence", Op: OpUnsilence},
}

// ParseAction reads a press's action_id: the button it names, and false
// when it is none of herald's.
func ParseAction(actionID string) (Action, bool) {
	for _, a := range actions {
		if a.ID == actionID {
			return a, true
		}
	}
	return Action{}, false
}

// Slack's limits on an actions block (Block Kit reference).
const (
	maxElements    = 25
	maxButtonText  = 75
	maxButtonValue = 2000
	maxActionID    = 255
)

// actionsBlock is the buttons n's message ends with (above its footer),
// or nil: an open incident's message offers to silence it, to
// acknowledge it until someone has, and more logs when it names a
// container herald can read logs of (a pod's, or a grouped workload's
// pods'); a muted one's, to unsilence it. A resolved message and a digest
// have none: there is nothing left to act on, or too many incidents for
// one set of buttons.
func actionsBlock(n incident.Notification, noSilence bool) slack.Block {
	inc := n.Incident
	if inc.ID == "" || len(inc.ID) > maxButtonValue {
		return nil // no value a press could name the incident by
	}
	var ids []string
	switch n.Transition {
	case incident.Acknowledged, incident.Firing, incident.Updated, incident.Repeat:
		if inc.MutedBy != "" {
			// Acknowledged while muted (an acknowledgement is said
			// under a mute): the muted message's one button.
			ids = []string{ActionUnsilence}
			break
		}
		if !noSilence {
			ids = []string{ActionSilence1h, ActionSilence4h, ActionSilenceResolved}
		}
		if inc.Ack == nil {
			ids = append(ids, ActionAck)
		}
		if inc.Container != "" && (inc.Object.Kind == "Pod" || inc.Grouped) {
			ids = append(ids, ActionMoreLogs)
		}
	case incident.Silenced:
		ids = []string{ActionUnsilence}
	default:
		return nil
	}
	if noSilence {
		ids = slices.DeleteFunc(ids, func(id string) bool { return id == ActionUnsilence })
	}
	if len(ids) == 0 {
		return nil
	}
	elements := make([]slack.BlockElement, 0, len(ids))
	for _, id := range ids {
		a, _ := ParseAction(id)
		b := slack.NewButtonBlockElement(a.ID, inc.ID, slack.NewTextBlockObject(slack.PlainTextType, a.Label, false, false))
		if a.Op == OpAck {
			b = b.WithStyle(slack.StylePrimary)
		}
		elements = append(elements, b)
	}
	return slack.NewActionBlock(ActionsBlockID, elements...)
}

// LinksBlockID names the block of the incident's own links (a dashboard,
// a log search), and LinkActionPrefix their buttons' action IDs: Slack
// tells an interactive app of a press on a link button too, and the
// receiver lets those go.
const (
	LinksBlockID     = "herald_links"
	LinkActionPrefix = "herald_link_"
)

// linksBlock is a row of link buttons, one per link of the incident's
// rule and routes (nil: none). A button opens its URL; the text is the
// link's name from the configuration, never text from the cluster.
func linksBlock(inc incident.Incident) slack.Block {
	if len(inc.Links) == 0 {
		return nil
	}
	elements := make([]slack.BlockElement, 0, len(inc.Links))
	for i, l := range inc.Links {
		b := slack.NewButtonBlockElement(LinkActionPrefix+strconv.Itoa(i), "", slack.NewTextBlockObject(slack.PlainTextType, l.Name, false, false))
		elements = append(elements, b.WithURL(l.URL))
	}
	return slack.NewActionBlock(LinksBlockID, elements...)
}
