// Package stdout prints one line per notification, for the demo, local
// trials and log-based pipelines.
package stdout

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/sinks"
)

// Sink writes to an io.Writer.
type Sink struct {
	name string
	json bool

	mu sync.Mutex
	w  io.Writer
}

// New makes a stdout sink writing to w; format is "text" or "json".
func New(name, format string, w io.Writer) *Sink {
	return &Sink{name: name, json: format == "json", w: w}
}

// Name implements sinks.Sink.
func (s *Sink) Name() string { return s.name }

// Send implements sinks.Sink.
func (s *Sink) Send(_ context.Context, n incident.Notification) error {
	var line string
	if s.json {
		p := sinks.NewPayload(n)
		b, err := p.AppendJSON(nil)
		if err != nil {
			return err
		}
		line = string(b)
	} else {
		line = Format(n)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := fmt.Fprintln(s.w, line)
	return err
}

// Format renders n as one readable line (a digest: one line per incident).
func Format(n incident.Notification) string {
	if n.Transition == incident.Digest {
		lines := []string{fmt.Sprintf("%s DIGEST   %s", n.Time.UTC().Format(time.RFC3339), sinks.DigestTitle(n))}
		for _, d := range n.Digest {
			lines = append(lines, "    - "+oneLine(d.Incident.Text))
		}
		return strings.Join(lines, "\n")
	}
	text := n.Incident.Text
	switch {
	case n.Transition == incident.Resolved:
		text = "resolved: " + n.Incident.Title
	case n.Change != "":
		text = n.Change + ": " + n.Incident.Title
	}
	line := fmt.Sprintf("%s %-8s %-8s %s  [rule=%s id=%s]",
		n.Time.UTC().Format(time.RFC3339), strings.ToUpper(string(n.Transition)), n.Incident.Severity, oneLine(text), n.Incident.Rule, n.ID())
	if c := n.Context; c != nil && n.Transition == incident.Firing {
		// The hint and the last 3 log lines: enough to see why.
		if c.Hint != "" {
			line += "\n    hint: " + oneLine(c.Hint)
		}
		if c.Logs != nil {
			for _, l := range c.Logs.Lines[max(len(c.Logs.Lines)-3, 0):] {
				line += "\n    | " + oneLine(l)
			}
		}
		if c.Unavailable != "" {
			line += "\n    context incomplete: " + oneLine(c.Unavailable)
		}
	}
	return line
}

// oneLine keeps text from the cluster on its line and out of the
// terminal: a new line in a title or log line must not forge a
// notification line for whoever reads or parses the output, nor an escape
// sequence recolour or rewrite it. Control characters (C0, DEL, C1), the
// Unicode line and paragraph separators and the bidirectional overrides
// print as \n, \r or \xNN / \uNNNN; tabs stay.
func oneLine(s string) string {
	if !strings.ContainsFunc(s, unsafeRune) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case !unsafeRune(r):
			b.WriteRune(r)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

func unsafeRune(r rune) bool {
	switch {
	case r == '\t':
		return false
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x2028, r == 0x2029, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}
