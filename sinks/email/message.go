package email

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"html"
	"maps"
	"mime"
	"mime/quotedprintable"
	"net/mail"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/sinks"
)

// Bounds of a mail: every part of it is text from the cluster, and a
// mail is read on a phone too.
const (
	maxSubject   = 200
	maxLogBytes  = 16 << 10
	maxFactValue = 2000
)

// Compose writes n as an RFC 5322 message from from to to: a stable
// subject per incident ("Re: " after its first mail), its thread's
// headers, a plain and an HTML part. Everything from the cluster is
// made inert: no header can be injected (controls become spaces,
// non-ASCII is encoded), and the HTML part escapes every character
// that means something in HTML.
func Compose(n incident.Notification, from string, to []string, cluster string, now time.Time) ([]byte, error) {
	fromAddr, err := address(from)
	if err != nil {
		return nil, err
	}
	domain := fromAddr[strings.LastIndexByte(fromAddr, '@')+1:]
	var b bytes.Buffer
	header := func(k, v string) { fmt.Fprintf(&b, "%s: %s\r\n", k, v) }
	header("From", from)
	// Folded, one recipient a line: 50 on one line would pass the 998
	// characters an MTA may refuse a line of.
	header("To", strings.Join(to, ",\r\n "))
	topic := Topic(n, cluster)
	subject := topic
	if n.Transition != incident.Digest && n.Seq > 1 {
		subject = "Re: " + topic
	}
	header("Subject", mime.QEncoding.Encode("utf-8", subject))
	header("Thread-Topic", mime.QEncoding.Encode("utf-8", topic))
	header("Date", now.UTC().Format(time.RFC1123Z))
	header("Message-ID", messageID(n.ID(), domain))
	if n.Transition != incident.Digest && n.Seq > 1 {
		// Every later mail answers the incident's first one: the thread
		// holds even when a mail between them was lost or went
		// elsewhere.
		first := messageID(n.Incident.ID+"-1", domain)
		header("In-Reply-To", first)
		header("References", first)
	}
	header("Auto-Submitted", "auto-generated") // RFC 3834: no auto-replies
	header("X-Herald-Incident", headerSafe(n.Incident.ID))
	header("X-Herald-Transition", string(n.Transition))
	header("MIME-Version", "1.0")
	text, page := bodies(n, cluster, now)
	parts := []struct{ typ, body string }{{"text/plain", text}, {"text/html", page}}
	for i := range parts {
		var enc bytes.Buffer
		qp := quotedprintable.NewWriter(&enc)
		if _, err := qp.Write([]byte(strings.ReplaceAll(parts[i].body, "\n", "\r\n"))); err != nil {
			return nil, err
		}
		qp.Close()
		parts[i].body = enc.String()
	}
	boundary := boundaryFor(n.ID(), parts[0].body, parts[1].body)
	header("Content-Type", `multipart/alternative; boundary="`+boundary+`"`)
	b.WriteString("\r\n")
	for _, part := range parts {
		fmt.Fprintf(&b, "--%s\r\nContent-Type: %s; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n%s\r\n", boundary, part.typ, part.body)
	}
	fmt.Fprintf(&b, "--%s--\r\n", boundary)
	return b.Bytes(), nil
}

// boundaryFor is a MIME boundary that occurs in none of the encoded
// parts (RFC 2046 asks no less): the bodies hold log lines and messages
// from the cluster, whose authors can work out a boundary made from the
// notification's ID and write it into a log line to end herald's part
// and start one of their own. The first candidate the bodies do not
// hold is taken, so the same mail is the same bytes (its goldens), and
// no text can hold every candidate.
func boundaryFor(id string, bodies ...string) string {
	for k := 0; ; k++ {
		b := "herald-" + hash(id + "/" + strconv.Itoa(k))[:24]
		if !slices.ContainsFunc(bodies, func(body string) bool { return strings.Contains(body, b) }) {
			return b
		}
	}
}

// Topic is an incident's subject, the same for every mail of its thread
// (Outlook and Gmail group by it): "[herald] prod-eu · shop/checkout:
// CrashLoopBackOff"; a digest's says how many.
func Topic(n incident.Notification, cluster string) string {
	var s string
	if n.Transition == incident.Digest {
		s = sinks.DigestTitle(n)
	} else {
		s = sinks.Where(n.Incident) + ": " + n.Incident.Reason
	}
	if cluster != "" {
		s = cluster + " · " + s
	}
	return sinks.Head(headerSafe("[herald] "+s), maxSubject)
}

// messageID is a Message-ID made from a notification's ID: the same
// notification sent twice is the same mail to a client that dedupes.
func messageID(id, domain string) string {
	return "<herald." + hash(id)[:32] + "@" + domain + ">"
}

func hash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// headerSafe turns controls (a CR or LF would start a header of the
// cluster's choosing) and invalid UTF-8 into spaces.
func headerSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || r == unicode.ReplacementChar {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, " "))
}

// address parses one address, "Name <a@b>" or "a@b", to its address.
func address(s string) (string, error) {
	a, err := mail.ParseAddress(s)
	if err != nil {
		return "", err
	}
	if !strings.Contains(a.Address, "@") {
		return "", errors.New("no domain in " + strconv.Quote(a.Address))
	}
	return a.Address, nil
}

func keys(m map[string][]string) []string { return slices.Sorted(maps.Keys(m)) }

// bodies are the mail's plain and HTML bodies, the same lines in both.
func bodies(n incident.Notification, cluster string, now time.Time) (text, page string) {
	var t, h strings.Builder
	para := func(s string) {
		t.WriteString(s + "\n\n")
		h.WriteString("<p>" + html.EscapeString(s) + "</p>\n")
	}
	pre := func(title string, lines []string) {
		t.WriteString(title + "\n")
		h.WriteString("<p><b>" + html.EscapeString(title) + "</b></p>\n<pre>")
		for _, l := range lines {
			t.WriteString("  | " + l + "\n")
			h.WriteString(html.EscapeString(l) + "\n")
		}
		t.WriteString("\n")
		h.WriteString("</pre>\n")
	}
	h.WriteString("<!DOCTYPE html>\n<html><body style=\"font-family: sans-serif\">\n")
	headline := sinks.Headline(n, cluster, now)
	t.WriteString(strings.ToUpper(string(n.Transition)) + " · " + headline + "\n\n")
	h.WriteString("<h2>" + html.EscapeString(strings.ToUpper(string(n.Transition))+" · "+headline) + "</h2>\n")
	inc := n.Incident
	switch n.Transition {
	case incident.Digest:
		var lines []string
		for _, d := range n.Digest {
			line := sinks.Where(d.Incident) + ": " + sinks.What(d.Incident)
			if s := sinks.Detail(d.Incident); s != "" {
				line += " — " + s
			}
			lines = append(lines, line)
		}
		pre("Incidents", lines)
	case incident.Resolved:
		para(sinks.ResolvedLead(n, now))
	case incident.Silenced:
		para(sinks.Muted(n, now))
	default:
		if n.Change != "" && !sinks.CoversChange(n.Change) && !strings.Contains(headline, n.Change) {
			para("Changed: " + n.Change)
		}
		if s := sinks.Detail(inc); s != "" {
			para(s)
		}
		if a := sinks.Acked(n, now); a != "" {
			para(a)
		}
		if c := n.Context; c != nil {
			if c.Hint != "" {
				para("Hint: " + c.Hint)
			}
			if lines, _ := sinks.LastLines(c.Logs); len(lines) > 0 {
				pre("Last log lines of "+sinks.LogsHead(n), tailBytes(lines, maxLogBytes))
			}
		}
		if c := sinks.Changed(n); c != nil {
			lines := sinks.ChangeLines(c)
			if c.Undo != "" && !sinks.NothingChanged(c) {
				lines = append(lines, "Undo: "+c.Undo)
			}
			pre("What changed", lines)
		}
		var facts []string
		for _, f := range sinks.Facts(n, now) {
			facts = append(facts, f.Title+": "+sinks.Head(f.Value, maxFactValue))
		}
		if len(facts) > 0 {
			pre("Facts", facts)
		}
	}
	if n.Transition != incident.Digest {
		links(&t, &h, inc)
	}
	foot := "herald · rule " + inc.Rule + " · " + string(n.Transition) + " · " + n.ID()
	t.WriteString("-- \n" + foot + "\n")
	h.WriteString("<p style=\"color: #888; font-size: small\">" + html.EscapeString(foot) + "</p>\n</body></html>\n")
	return t.String(), h.String()
}

// links are the runbook and the rule's and routes' links: URLs from the
// configuration (filled and checked by internal/links), names too.
func links(t, h *strings.Builder, inc incident.Incident) {
	type link struct{ name, url string }
	var ls []link
	if inc.RunbookURL != "" {
		ls = append(ls, link{"Runbook", inc.RunbookURL})
	}
	for _, l := range inc.Links {
		ls = append(ls, link{l.Name, l.URL})
	}
	if len(ls) == 0 {
		return
	}
	var parts []string
	for _, l := range ls {
		t.WriteString(l.name + ": " + l.url + "\n")
		if u := strings.ToLower(l.url); !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "http://") {
			// A runbook template may read the object: only web links
			// become links.
			parts = append(parts, html.EscapeString(l.name+": "+l.url))
			continue
		}
		parts = append(parts, `<a href="`+html.EscapeString(l.url)+`">`+html.EscapeString(l.name)+`</a>`)
	}
	t.WriteString("\n")
	h.WriteString("<p>" + strings.Join(parts, " · ") + "</p>\n")
}

// tailBytes keeps the last lines within max bytes.
func tailBytes(lines []string, max int) []string {
	total := 0
	for i := len(lines) - 1; i >= 0; i-- {
		total += len(lines[i]) + 1
		if total > max {
			return lines[i+1:]
		}
	}
	return lines
}
