// Package stdout prints one line per notification, for the demo, local
// trials and log-based pipelines.
package stdout

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/termsafe"
	"github.com/herald-k8s/herald/sinks"
)

// Sink writes to an io.Writer.
type Sink struct {
	name    string
	json    bool
	cluster string
	now     func() time.Time

	mu sync.Mutex
	w  io.Writer
}

// New makes a stdout sink writing to w; format is "text" or "json";
// cluster is the configuration's clusterName (may be empty).
func New(name, format, cluster string, w io.Writer) *Sink {
	return &Sink{name: name, json: format == "json", cluster: cluster, now: time.Now, w: w}
}

// Name implements sinks.Sink.
func (s *Sink) Name() string { return s.name }

// Send implements sinks.Sink.
func (s *Sink) Send(_ context.Context, n incident.Notification) error {
	var line string
	if s.json {
		p := sinks.NewPayloadIn(n, s.cluster)
		b, err := p.AppendJSON(nil)
		if err != nil {
			return err
		}
		line = string(b)
	} else {
		line = Format(n, s.cluster, s.now())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := fmt.Fprintln(s.w, line)
	return err
}

// logLines is how many log lines a firing shows: a terminal line each.
const logLines = 3

// Format renders n as one readable line, the headline any chat sink
// pushes then what it says first (a digest: one line per incident), and
// for a firing its hint, last log lines and what changed just before
// indented below.
func Format(n incident.Notification, cluster string, now time.Time) string {
	stamp := n.Time.UTC().Format(time.RFC3339)
	if n.Transition == incident.Digest {
		lines := []string{fmt.Sprintf("%s DIGEST   %s", stamp, oneLine(sinks.Headline(n, cluster, now)))}
		for _, d := range n.Digest {
			lines = append(lines, "    - "+oneLine(sinks.Where(d.Incident)+": "+sinks.What(d.Incident)+withDetail(d.Incident)))
		}
		return strings.Join(lines, "\n")
	}
	inc := n.Incident
	text := sinks.Headline(n, cluster, now)
	switch {
	case n.Transition == incident.Resolved:
		if e := sinks.Ended(inc); e != "" {
			text += " — " + e
		}
	case n.Transition == incident.Silenced:
		text += " — " + sinks.Muted(n, now)
	case n.Transition == incident.Acknowledged:
		text += " — " + cmp.Or(sinks.Acked(n, now), "Acknowledged") + withDetail(inc)
	case n.Unmuted != "":
		text += " — " + n.Unmuted + " ended" + withDetail(inc)
	default:
		if n.Change != "" && !strings.Contains(text, n.Change) && !sinks.CoversChange(n.Change) {
			text += " — " + n.Change // the headline says only what it is now
		}
		text += withDetail(inc)
	}
	if a := sinks.Acked(n, now); a != "" && n.Transition != incident.Acknowledged {
		text += " — " + a // who took it on: said while it is open
	}
	route := ""
	if inc.Route != "" {
		route = " route=" + oneLine(inc.Route) // which team's route sent it here
	}
	line := fmt.Sprintf("%s %-8s %-8s %s  [rule=%s%s id=%s]",
		stamp, strings.ToUpper(string(n.Transition)), inc.Severity, oneLine(text), oneLine(inc.Rule), route, oneLine(n.ID()))
	if c := n.Context; c != nil && n.Transition == incident.Firing {
		// The hint and the last log lines: enough to see why.
		if c.Hint != "" {
			line += "\n    hint: " + oneLine(c.Hint)
		}
		if c.Logs != nil {
			for _, l := range c.Logs.Lines[max(len(c.Logs.Lines)-logLines, 0):] {
				line += "\n    | " + oneLine(l)
			}
		}
		if c.Unavailable != "" {
			line += "\n    context incomplete: " + oneLine(c.Unavailable)
		}
	}
	if c := sinks.Changed(n); c != nil && n.Transition == incident.Firing {
		// What changed just before, one change a line, and how to undo
		// it: shown with the crash context, on the firing.
		for _, l := range sinks.ChangeLines(c) {
			line += "\n    what changed: " + oneLine(l)
		}
		if c.Undo != "" && !sinks.NothingChanged(c) {
			line += "\n    undo: " + oneLine(c.Undo)
		}
	}
	if len(inc.Links) > 0 && n.Transition == incident.Firing {
		var ls []string
		for _, l := range inc.Links {
			ls = append(ls, oneLine(l.Name)+" "+oneLine(l.URL))
		}
		line += "\n    links: " + strings.Join(ls, " · ")
	}
	return line
}

// withDetail is " — " and the incident's one sentence, if it has one.
func withDetail(inc incident.Incident) string {
	if d := sinks.Detail(inc); d != "" {
		return " — " + d
	}
	return ""
}

// oneLine keeps text from the cluster on its line and out of the
// terminal: a new line in a title or log line must not forge a
// notification line for whoever reads or parses the output, nor an escape
// sequence recolour or rewrite it (termsafe.Line).
func oneLine(s string) string { return termsafe.Line(s) }
