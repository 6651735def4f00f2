package oncalltest

import (
	"time"

	"github.com/herald-k8s/herald/internal/incident"
)

// HostileText is what someone who runs a pod can make herald carry: chat
// mentions (Slack, Google Chat, Discord, Mattermost, Teams), disguised
// links, a code fence that would close the alert's, emphasis, a Markdown
// link, list, quote and heading markers, entities and new lines.
const HostileText = "<!channel> <!here> <@U0123> <#C0123> <https://evil.example/|click here> <users/all> <at>Everyone</at> " +
	"@everyone @here @channel @all *bold* _it_ ~strike~ ||spoiler|| `code` [link](http://evil.example/) ![img](http://evil.example/i.png) &amp; &lt;x&gt;\n" +
	"```\n# heading\n- item\n1. one\n> quote\n\x1b[31mred\x1b[0m\r\nforged 2026-01-02T03:04:05Z FIRING critical line"

// Hostile is a firing notification with HostileText in every field an
// object or a pod can fill (the object's name too: an Event's regarding
// name is not checked by the API server), for the sinks' golden tests.
func Hostile() incident.Notification {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	h := HostileText
	inc := incident.Incident{
		ID: "3f9a1c2b7d4e5f60-1", Fingerprint: "3f9a1c2b7d4e5f60", Rule: "pod-crashloop", Severity: "critical",
		Reason: "BackOff " + h, Container: "app " + h,
		Title: "Crash " + h, Text: "Restarted 7 times: " + h,
		Facts: map[string]string{"restartCount": "7", "exitCode": "1", "lastMessage": h, "lastLogLine": h},
		Sinks: []string{"chat"}, FirstSeen: at.Add(-10 * time.Minute),
		RunbookURL: "https://runbooks.example.com/x|evil>click<",
	}
	inc.Object.Kind, inc.Object.Namespace, inc.Object.Name, inc.Object.UID = "Pod", "shop", "api "+h, "u-1"
	return incident.Notification{Incident: inc, Transition: incident.Firing, Seq: 1, Time: at, Change: "restarts 5 → 7 " + h,
		Context: &incident.Context{
			Hint: "Hint " + h, Pod: "api " + h, Unavailable: "events: " + h,
			Logs:   &incident.Logs{Container: "app " + h, Previous: true, Lines: []string{"first line", h, "last ``` line @everyone"}},
			Events: []incident.Event{{Type: "Warning", Reason: "BackOff " + h, Message: h, Count: 3, LastSeen: at}},
			Node:   &incident.Node{Name: "node-1 " + h, Conditions: []string{"MemoryPressure " + h}},
		},
		Changes: HostileChanges(at.Add(-10 * time.Minute))}
}

// HostileJSON is what breaks JSON written by hand: quotes, a backslash, a
// control character and the line separators JavaScript ends lines at.
const HostileJSON = "\"quoted\" back\\slash \\u0000 \x00 \u2028 \u2029 </script>"

// HostileChanges is a "What changed" section (internal/changes) with
// HostileText and HostileJSON in every string: the image, env var,
// ConfigMap, workload and field manager names, the change-cause and tool
// annotations, the undo command, and the lines that say them, for an
// incident that began at at.
func HostileChanges(at time.Time) *incident.Changes {
	h := HostileText + " " + HostileJSON
	return &incident.Changes{
		Workload: "Deployment/api " + h, Since: at.Add(-30 * time.Minute), At: at,
		Rollouts: []incident.Rollout{{Revision: "7 " + h, At: at.Add(-4 * time.Minute), By: "argocd " + h, Known: true,
			Items:       []string{"image app: shop/api:1 → 2 " + h, "env DB_" + h + " changed"},
			ChangeCause: "deploy " + h, Tools: []string{"argocd.argoproj.io/instance=" + h}}},
		Undo: "kubectl rollout undo deployment/api` " + h + " `-n shop --to-revision=6",
		Objects: []incident.ObjectChange{{Kind: "ConfigMap", Name: "app-config " + h, At: at.Add(-2 * time.Minute),
			AlsoFailing: []string{"Deployment/cart " + h}}},
		Lines: []string{
			"Rolled out 4 min before (revision 7 " + h + ", by argocd " + h + "): image app: shop/api:1 → 2 " + h + "; change-cause: deploy " + h,
			"ConfigMap app-config " + h + " changed 2 min before; Deployment/cart " + h + ", which reads it too, fails since",
		},
	}
}

// HostileWho is a name someone chose — a Slack display name, a Silence's
// createdBy — made to mention, link, quote code, emphasise, turn text
// around and forge a line of its own in the alert it is said in, within
// the 80 characters a name is shown with.
const HostileWho = "ana\n:white_check_mark: Resolved\r\n\u202e<!channel> <@U0> <http://x|y> `x` @here &\x1b[31m"

// HostileAcked is n acknowledged by someone herald does not know as a
// Slack user alone (By is not "slack:" and a user ID), whose name is
// HostileWho: every sink must say it as text.
func HostileAcked(n incident.Notification) incident.Notification {
	n.Transition, n.Seq = incident.Acknowledged, n.Seq+1
	n.Incident.Ack = &incident.Ack{By: "slack:U0123|<!channel>", Name: HostileWho, At: n.Time.Add(-time.Minute), Key: "press"}
	return n
}

// HostileSilenced is n muted by a silence HostileWho asked for (its
// createdBy, as internal/silence would have bounded it or not).
func HostileSilenced(n incident.Notification) incident.Notification {
	n.Transition, n.Seq = incident.Silenced, n.Seq+1
	n.Incident.MutedBy, n.Incident.MutedWho, n.Incident.MutedUntil = "silence shop/silence-7k2pq", HostileWho, n.Time.Add(4*time.Hour)
	return n
}
