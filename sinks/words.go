package sinks

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/herald-k8s/herald/internal/incident"
)

// The words every chat-like sink (Slack, Teams, stdout) says about a
// notification, so that one incident reads the same wherever it lands.
// They return plain text: each sink escapes it for its own format, late.
// docs/messages.md shows them as they read in each channel.

// Where is the object an incident is about, as its namespace and name
// ("shop/checkout" for a grouped incident's workload, the pod's own name
// otherwise); a cluster-scoped object has no namespace.
func Where(inc incident.Incident) string {
	if inc.Object.Namespace == "" {
		return inc.Object.Name
	}
	return inc.Object.Namespace + "/" + inc.Object.Name
}

// Locator is the incident's object as on-call tools place it:
// "<namespace>/<kind>/<name>" (a Node's without a namespace).
func Locator(inc incident.Incident) string {
	var parts []string
	for _, p := range []string{inc.Object.Namespace, strings.ToLower(inc.Object.Kind), inc.Object.Name} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, "/")
}

// What is the problem in a few words: the reason, and for a grouped
// incident how many of the workload's pods have it.
func What(inc incident.Incident) string {
	s := inc.Reason
	if inc.Grouped && inc.Total > 0 {
		s = fmt.Sprintf("%s (%d/%d pods)", inc.Reason, inc.MemberCount, inc.Total)
	}
	if inc.Covers > 0 && inc.ResolvedAt.IsZero() {
		s += fmt.Sprintf(", explains %d other %s", inc.Covers, plural(inc.Covers, "incident", "incidents"))
	}
	return s
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// CoversChange says whether an update's change is only how many
// incidents it explains, which What already says.
func CoversChange(change string) bool { return strings.HasPrefix(change, "explains ") }

var podsChange = regexp.MustCompile(`^\d+ → \d+ of \d+ pods$`)

// saidByWhat: the change is one What already says (a grouped incident's
// pod count, the incidents it explains), so a headline need not repeat it.
func saidByWhat(change string) bool { return CoversChange(change) || podsChange.MatchString(change) }

// Headline is the push text: what a phone's lock screen and a screen
// reader say, so it leads with the cluster and the object, then what
// happened ("prod-eu · shop/checkout: CrashLoopBackOff (3/10 pods)").
func Headline(n incident.Notification, cluster string, now time.Time) string {
	var s string
	if n.Transition == incident.Digest {
		s = DigestTitle(n)
	} else {
		inc := n.Incident
		s = Where(inc) + ": " + State(n, now)
	}
	if cluster != "" {
		s = cluster + " · " + s
	}
	return s
}

// State says what the notification announces, after the object's name.
func State(n incident.Notification, now time.Time) string {
	inc := n.Incident
	switch {
	case n.Transition == incident.Resolved:
		return "resolved after " + Duration(Lasted(n, now)) + " (was " + inc.Reason + ")"
	case n.Transition == incident.Silenced:
		return What(inc) + ", muted"
	case n.Transition == incident.Acknowledged:
		return What(inc) + ", acknowledged"
	case n.Unmuted != "":
		return What(inc) + ", no longer muted"
	case n.Transition == incident.Repeat:
		return What(inc) + " for " + Duration(now.Sub(inc.FirstSeen))
	case n.Transition == incident.Updated && n.Change != "" && !saidByWhat(n.Change):
		return What(inc) + " · " + n.Change
	}
	return What(inc)
}

// Lasted is how long the incident lasted (until now when it is open).
func Lasted(n incident.Notification, now time.Time) time.Duration {
	end := now
	if !n.Incident.ResolvedAt.IsZero() {
		end = n.Incident.ResolvedAt
	}
	return end.Sub(n.Incident.FirstSeen)
}

// titlePrefix matches the default title a finding's text begins with
// ("CrashLoopBackOff: Pod shop/web container app: "): the text of a
// grouped incident is one pod's, whose title is not the incident's.
var titlePrefix = regexp.MustCompile(`^[A-Za-z]+: [A-Za-z]+ (\S+)( container \S+)?: `)

// Detail is the incident's text without the title it repeats: the
// detector's sentence ("restarted 5 times, last exit code 1 (Error)"),
// or a rule's own text as it is. Empty when the text says no more than
// the title. A grouped incident's text is one pod's: the sentence then
// names the pod, so that no one reads a pod's restarts as the workload's.
func Detail(inc incident.Incident) string {
	t := inc.Text
	switch {
	case t == inc.Title:
		return ""
	case strings.HasPrefix(t, inc.Title+": "):
		return strings.TrimPrefix(t, inc.Title+": ")
	case strings.HasPrefix(t, inc.Reason+": "):
		if m := titlePrefix.FindStringSubmatchIndex(t); m != nil {
			if inc.Grouped {
				obj := t[m[2]:m[3]]
				return obj[strings.LastIndex(obj, "/")+1:] + ": " + t[m[1]:]
			}
			return t[m[1]:]
		}
	}
	return t
}

// Ended says how a resolved incident ended, for its message: "the pod
// was deleted", "the container has run without restarting". Empty when
// the ledger did not record it (an incident resolved before herald
// recorded endings).
func Ended(inc incident.Incident) string {
	kind := strings.ToLower(inc.Object.Kind)
	switch inc.Ended {
	case incident.EndedRuleRemoved:
		return "not a recovery: its rule was removed from the configuration"
	case incident.EndedRuleChanged:
		return "not a recovery: its rule changed (a configuration reload) and no longer reports it; the problem may remain"
	case incident.EndedDeleted:
		if inc.Grouped {
			return "its last affected pod was deleted"
		}
		return "the " + kind + " was deleted"
	case incident.EndedRecovered:
		if inc.Grouped {
			return "no pod has it any more"
		}
		switch inc.Reason {
		case "CrashLoopBackOff", "Restarting":
			return "the container has run without restarting"
		case "OOMKilled":
			return "no new out-of-memory kill"
		case "ImagePullBackOff":
			return "the image was pulled"
		case "CreateContainerConfigError", "CreateContainerError", "RunContainerError":
			return "the container started"
		case "NotReady":
			return "the container is ready"
		case "PodPending":
			return "the pod started"
		case "NodeNotReady":
			return "the node is Ready"
		case "ReplicasUnavailable", "ProgressDeadlineExceeded":
			return "every replica is available"
		case "PVCPending":
			return "the claim is bound"
		case "AtMaxReplicas":
			return "the autoscaler no longer wants more than its maximum"
		case "MissedSchedule":
			return "a run started, or the CronJob was suspended"
		case "JobRunningLong":
			return "the Job finished or was suspended"
		case "CertificateExpiring":
			return "the certificate was renewed"
		case "CertificateNotReady":
			return "the certificate is Ready"
		case "NoReadyEndpoints":
			return "the Service has a ready endpoint"
		case "VolumeFillingUp":
			return volumeEnded(inc.Facts)
		case "VolumeAlmostFull":
			if c := inc.Facts["critical"]; c != "" {
				return "the volume is less than " + c + "% full"
			}
			return "the volume is below its critical threshold"
		}
		return "the " + kind + " no longer has it"
	}
	return ""
}

// Resolution is the resolved message's sentence: "Resolved after 42 min:
// the pod was deleted".
func Resolution(n incident.Notification, now time.Time) string {
	s := "Resolved after " + Duration(Lasted(n, now))
	if e := Ended(n.Incident); e != "" {
		s += ": " + e
	}
	return s
}

// ResolvedLead is a resolved message's first line under its headline,
// which already says how long it lasted: how it ended ("The container
// has run without restarting"), or the resolution when that is unknown.
func ResolvedLead(n incident.Notification, now time.Time) string {
	if e := Ended(n.Incident); e != "" {
		return strings.ToUpper(e[:1]) + e[1:]
	}
	return Resolution(n, now)
}

// ChangeLine is what an update's "Changed:" line says, "" when the
// headline already says it (State) or What does (the incidents it
// explains): a grouped incident's pod count keeps its line, since the
// headline says only the count now.
func ChangeLine(n incident.Notification) string {
	if n.Transition != incident.Updated || n.Change == "" || CoversChange(n.Change) || !saidByWhat(n.Change) {
		return ""
	}
	return n.Change
}

// Muted says what mutes the incident, who asked for it when someone did,
// and until when: "Muted by silence shop/deploy-checkout (by alice) until
// 2026-11-22 02:00 UTC (in 1 h 48 min)"; nothing more is said until then
// unless it resolves.
func Muted(n incident.Notification, now time.Time) string {
	inc := n.Incident
	if inc.MutedBy == "" {
		return "Muted: " + n.Change // a notification from before MutedBy was kept
	}
	by := inc.MutedBy
	s := "Muted by " + by
	if rest, ok := strings.CutPrefix(by, incident.InhibitedBy); ok {
		s = "Muted: explained by " + rest
	}
	if w := MutedWho(inc); w != "" {
		s += " (by " + w + ")"
	}
	if inc.MutedUntil.IsZero() {
		return s + ", while that lasts"
	}
	return s + " until " + inc.MutedUntil.UTC().Format("2006-01-02 15:04 MST") + " (in " + Duration(inc.MutedUntil.Sub(now)) + ")"
}

// Unmuted says the mute the channel was told of is over.
func Unmuted(n incident.Notification) string {
	return "No longer muted: " + n.Unmuted + " ended"
}

// Covers says how many other incidents an incident explains (a node's
// NotReady explains its pods'): they are muted while it is open.
func Covers(inc incident.Incident) string {
	if inc.Covers == 0 {
		return ""
	}
	return fmt.Sprintf("Explains %d other %s, muted while this one is open", inc.Covers, plural(inc.Covers, "incident", "incidents"))
}

// Age says how long an open incident has been going: "for 12 min".
func Age(n incident.Notification, now time.Time) string {
	if n.Incident.FirstSeen.IsZero() {
		return ""
	}
	return "for " + Duration(now.Sub(n.Incident.FirstSeen))
}

// Fact is one labelled value of a message's facts.
type Fact struct{ Title, Value string }

// Facts are the labelled facts a message shows below its lead: only what
// the headline and the one sentence (Detail) do not already say, with
// titles for people ("Exit code", not exitCode).
func Facts(n incident.Notification, now time.Time) []Fact {
	inc := n.Incident
	detail := Detail(inc)
	var out []Fact
	add := func(title, value string) {
		if value != "" {
			out = append(out, Fact{title, value})
		}
	}
	add("Container", inc.Container)
	if !strings.Contains(detail, inc.Facts["image"]) {
		add("Image", inc.Facts["image"])
	}
	if !strings.Contains(detail, "restarted") {
		add("Restarts", inc.Facts["restartCount"])
	}
	if !strings.Contains(detail, "exit code") {
		add("Exit code", inc.Facts["exitCode"])
	}
	if inc.Grouped && len(inc.Members) > 0 {
		pods := make([]string, len(inc.Members))
		for i, m := range inc.Members {
			pods[i] = m[strings.LastIndex(m, "/")+1:]
		}
		more := ""
		if rest := inc.MemberCount - len(pods); rest > 0 {
			more = fmt.Sprintf(", … and %d more", rest)
		}
		add("Pods", strings.Join(pods, ", ")+more)
	}
	if c := n.Context; c != nil && c.Node != nil {
		node := c.Node.Name
		if len(c.Node.Conditions) > 0 {
			node += " (" + strings.Join(c.Node.Conditions, ", ") + ")"
		}
		add("Node", node)
	}
	add("Severity", inc.Severity)
	// One problem seen by two: herald's own check and an alert taken in
	// from Alertmanager (internal/intake) made one incident.
	add("Also seen by", inc.Facts["agrees"])
	if !inc.FirstSeen.IsZero() && n.Transition != incident.Repeat {
		add("Started", Ago(inc.FirstSeen, now))
	}
	return out
}

// Termination is the container's termination message, unless the log
// lines shown already end with it (terminationMessagePolicy
// FallbackToLogsOnError makes it the last log line).
func Termination(n incident.Notification) string {
	last := strings.TrimSpace(n.Incident.Facts["lastMessage"])
	if c := n.Context; last != "" && c != nil && c.Logs != nil && len(c.Logs.Lines) > 0 {
		if strings.TrimSpace(c.Logs.Lines[len(c.Logs.Lines)-1]) == last {
			return ""
		}
	}
	return last
}

// MaxLogLines is how many log lines a message's first screen shows: the
// last few say why a container died; the rest is what kubectl logs is
// for.
const MaxLogLines = 5

// LastLines are the log lines a message shows, and whether older ones
// were cut.
func LastLines(l *incident.Logs) (lines []string, truncated bool) {
	if l == nil {
		return nil, false
	}
	if len(l.Lines) > MaxLogLines {
		return l.Lines[len(l.Lines)-MaxLogLines:], true
	}
	return l.Lines, l.Truncated
}

// LogsHead says whose log lines these are: "the crashed app container
// (pod shop/x)", the pod named only when it is not the incident's object.
func LogsHead(n incident.Notification) string {
	c := n.Context
	which := "current"
	if c.Logs.Previous {
		which = "crashed"
	}
	s := "the " + which + " " + c.Logs.Container + " container"
	if c.Pod != "" && c.Pod != Where(n.Incident) {
		s += " (pod " + c.Pod + ")"
	}
	return s
}

// volumeEnded says how a volume's VolumeFillingUp ended, with the rule's
// figures its facts carry.
func volumeEnded(f map[string]string) string {
	below := "the volume is below its threshold"
	if t := f["threshold"]; t != "" {
		below = "the volume is less than " + t + "% full"
	}
	if h := f["horizon"]; h != "" {
		return below + " and not forecast to be full within " + h
	}
	return below
}
