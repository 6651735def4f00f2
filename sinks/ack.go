package sinks

import (
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/herald-k8s/herald/internal/incident"
)

// The words every chat-like sink says about who acted on an incident:
// who acknowledged it (Slack's Acknowledge button) and who asked for the
// silence that mutes it. Both names are written by people herald does not
// trust (a Slack display name, a Silence's createdBy): they come back as
// one visible line of bounded length, and each sink escapes them for its
// own format, as it does any cluster text.

// maxWho bounds a name beside an alert, as internal/silence bounds a
// Silence's createdBy.
const maxWho = 80

// Who is a name as one visible line of at most maxWho characters, as
// internal/silence makes a createdBy: a line break, a control character
// or a bidi override in a display name must not write a line of its own
// into the message (a forged "Resolved") nor turn the text around it;
// each is a space, and runs of spaces one. A backtick, which Slack's
// mrkdwn has no escape for, must not open code: it reads as a quote.
func Who(s string) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r == utf8.RuneError, r == '\u2028', r == '\u2029', unicode.IsControl(r), unicode.Is(unicode.Bidi_Control, r):
			return ' '
		case r == '`':
			return '\''
		}
		return r
	}, s)
	return Truncate(maxWho, strings.Join(strings.Fields(s), " "))
}

// AckName is how people read who acknowledged: their name, else the
// actor herald knows ("slack:U0123ABC").
func AckName(a incident.Ack) string {
	if n := Who(a.Name); n != "" {
		return n
	}
	return Who(a.By)
}

// AckedBy is the acknowledgement's line, "Acknowledged by ana · 3 min
// ago", with who as the sink writes the person: AckName escaped for its
// format, or a mention. Everything else in it is herald's words, which
// need no escaping in any chat format.
func AckedBy(who string, a incident.Ack, now time.Time) string {
	return "Acknowledged by " + who + " · " + Ago(a.At, now)
}

// Acked is the acknowledgement's line in plain text (AckedBy with
// AckName), for an incident still open; "" when nobody acknowledged it or
// it resolved (a resolved message says how it ended, not who was on it).
func Acked(n incident.Notification, now time.Time) string {
	a := n.Incident.Ack
	if a == nil || n.Transition == incident.Resolved || n.Transition == incident.Digest {
		return ""
	}
	return AckedBy(AckName(*a), *a, now)
}

// MutedWho is who asked for the silence that mutes the incident, as one
// visible line ("slack:U0AB12CD (ana)", "alice"); "" when nobody did.
func MutedWho(inc incident.Incident) string { return Who(inc.MutedWho) }
