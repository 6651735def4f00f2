package slackact

import (
	"fmt"
	"strings"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/sinks"
)

// maxReply bounds a More logs reply: Slack takes 40,000 characters, a
// phone shows far fewer; 100 lines of a few hundred fit.
const maxReply = 12000

// escape keeps text herald did not write (a name, a reason) from becoming
// Slack markup: no mention, no link, no code fence.
func escape(s string) string { return sinks.SlackEscape(sinks.Unfence(s)) }

// logsReply is More logs' thread reply: the lines (already redacted) in
// a code block, the newest kept when they do not all fit.
func logsReply(id string, logs *incident.Logs) string {
	which := "current"
	if logs.Previous {
		which = "previous (crashed)"
	}
	head := fmt.Sprintf("*Last %d log lines* of container `%s`, %s instance (incident %s, redacted):", len(logs.Lines), strings.ReplaceAll(escape(logs.Container), "`", "'"), which, escape(id))
	if len(logs.Lines) == 0 {
		return head + "\n_the log is empty_"
	}
	body := escape(strings.Join(logs.Lines, "\n"))
	if len(body) > maxReply {
		body = "… (older lines cut)\n" + strings.ToValidUTF8(body[len(body)-maxReply:], "")
	}
	return head + "\n```" + body + "```"
}
