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
			lines = append(lines, "    - "+d.Incident.Text)
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
		n.Time.UTC().Format(time.RFC3339), strings.ToUpper(string(n.Transition)), n.Incident.Severity, text, n.Incident.Rule, n.ID())
	if c := n.Context; c != nil && n.Transition == incident.Firing {
		// The hint and the last 3 log lines: enough to see why.
		if c.Hint != "" {
			line += "\n    hint: " + c.Hint
		}
		if c.Logs != nil {
			for _, l := range c.Logs.Lines[max(len(c.Logs.Lines)-3, 0):] {
				line += "\n    | " + l
			}
		}
		if c.Unavailable != "" {
			line += "\n    context incomplete: " + c.Unavailable
		}
	}
	return line
}
