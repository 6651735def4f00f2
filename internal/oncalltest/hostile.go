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
		}}
}
