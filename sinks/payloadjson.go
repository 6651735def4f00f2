package sinks

import (
	"fmt"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/herald-k8s/herald/internal/incident"
)

// AppendJSON appends p's JSON to b: the bytes json.Marshal makes of p
// (same field order, omissions, escaping and time format), without its
// reflection. Every webhook, NATS message and stdout line is one, and
// encoding/json spent more CPU on them than the rest of the send
// (docs/performance.md); TestAppendJSONIsEncodingJSON holds the two to the
// same output.
func (p *Payload) AppendJSON(b []byte) ([]byte, error) {
	var err error
	b = append(b, `{"version":`...)
	b = appendString(b, p.Version)
	b = append(b, `,"id":`...)
	b = appendString(b, p.ID)
	b = append(b, `,"transition":`...)
	b = appendString(b, p.Transition)
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, int64(p.Seq), 10)
	b = append(b, `,"time":`...)
	if b, err = appendTime(b, p.Time); err != nil {
		return nil, err
	}
	b = appendOptional(b, `,"cluster":`, p.Cluster)
	b = appendOptional(b, `,"epoch":`, p.Epoch)
	b = append(b, `,"incident":{"id":`...)
	in := &p.Incident
	b = appendString(b, in.ID)
	b = append(b, `,"fingerprint":`...)
	b = appendString(b, in.Fingerprint)
	b = append(b, `,"rule":`...)
	b = appendString(b, in.Rule)
	b = append(b, `,"severity":`...)
	b = appendString(b, in.Severity)
	b = append(b, `,"reason":`...)
	b = appendString(b, in.Reason)
	b = append(b, `,"firstSeen":`...)
	if b, err = appendTime(b, in.FirstSeen); err != nil {
		return nil, err
	}
	if in.Flapping {
		b = append(b, `,"flapping":true`...)
	}
	b = appendOptional(b, `,"runbookURL":`, in.RunbookURL)
	if len(in.Links) > 0 {
		b = append(b, `,"links":[`...)
		for i, l := range in.Links {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"name":`...)
			b = appendString(b, l.Name)
			b = append(b, `,"url":`...)
			b = append(appendString(b, l.URL), '}')
		}
		b = append(b, ']')
	}
	b = appendOptional(b, `,"ended":`, in.Ended)
	b = append(b, `},"object":{"kind":`...)
	b = appendString(b, p.Object.Kind)
	b = appendOptional(b, `,"namespace":`, p.Object.Namespace)
	b = append(b, `,"name":`...)
	b = appendString(b, p.Object.Name)
	b = append(b, `,"uid":`...)
	b = appendString(b, p.Object.UID)
	b = append(b, '}')
	b = appendOptional(b, `,"container":`, p.Container)
	b = append(b, `,"title":`...)
	b = appendString(b, p.Title)
	b = append(b, `,"text":`...)
	b = appendString(b, p.Text)
	if len(p.Facts) > 0 {
		b = append(b, `,"facts":{`...)
		keys := make([]string, 0, len(p.Facts))
		for k := range p.Facts {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			b = appendString(b, p.Facts[k])
		}
		b = append(b, '}')
	}
	b = appendOptional(b, `,"change":`, p.Change)
	b = appendOptional(b, `,"unmuted":`, p.Unmuted)
	if a := p.Ack; a != nil {
		b = append(b, `,"ack":{"by":`...)
		b = appendString(b, a.By)
		b = appendOptional(b, `,"name":`, a.Name)
		b = append(b, `,"at":`...)
		if b, err = appendTime(b, a.At); err != nil {
			return nil, err
		}
		b = append(b, '}')
	}
	if p.Context != nil {
		b = append(b, `,"context":`...)
		if b, err = appendContext(b, p.Context); err != nil {
			return nil, err
		}
	}
	if p.Changes != nil {
		b = append(b, `,"changes":`...)
		if b, err = appendChanges(b, p.Changes); err != nil {
			return nil, err
		}
	}
	if len(p.Digest) > 0 {
		b = append(b, `,"digest":[`...)
		for i := range p.Digest {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = p.Digest[i].AppendJSON(b); err != nil {
				return nil, err
			}
		}
		b = append(b, ']')
	}
	return append(b, '}'), nil
}

func appendContext(b []byte, c *incident.Context) ([]byte, error) {
	var err error
	b = append(b, '{')
	first := true
	sep := func() {
		if !first {
			b = append(b, ',')
		}
		first = false
	}
	if l := c.Logs; l != nil {
		sep()
		b = append(b, `"logs":{"container":`...)
		b = appendString(b, l.Container)
		b = append(b, `,"previous":`...)
		b = strconv.AppendBool(b, l.Previous)
		b = append(b, `,"lines":`...)
		if l.Lines == nil {
			b = append(b, "null"...)
		} else {
			b = append(b, '[')
			for i, line := range l.Lines {
				if i > 0 {
					b = append(b, ',')
				}
				b = appendString(b, line)
			}
			b = append(b, ']')
		}
		if l.Truncated {
			b = append(b, `,"truncated":true`...)
		}
		b = append(b, '}')
	}
	if len(c.Events) > 0 {
		sep()
		b = append(b, `"events":[`...)
		for i, e := range c.Events {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"type":`...)
			b = appendString(b, e.Type)
			b = append(b, `,"reason":`...)
			b = appendString(b, e.Reason)
			b = append(b, `,"message":`...)
			b = appendString(b, e.Message)
			b = append(b, `,"count":`...)
			b = strconv.AppendInt(b, int64(e.Count), 10)
			b = append(b, `,"lastSeen":`...)
			if b, err = appendTime(b, e.LastSeen); err != nil {
				return nil, err
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if n := c.Node; n != nil {
		sep()
		b = append(b, `"node":{"name":`...)
		b = appendString(b, n.Name)
		if len(n.Conditions) > 0 {
			b = append(b, `,"conditions":[`...)
			for i, cond := range n.Conditions {
				if i > 0 {
					b = append(b, ',')
				}
				b = appendString(b, cond)
			}
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	for _, f := range [...]struct{ key, value string }{{"hint", c.Hint}, {"pod", c.Pod}, {"unavailable", c.Unavailable}} {
		if f.value != "" {
			sep()
			b = append(b, '"')
			b = append(b, f.key...)
			b = append(b, `":`...)
			b = appendString(b, f.value)
		}
	}
	return append(b, '}'), nil
}

// appendOptional appends key and s unless s is empty (omitempty).
func appendOptional(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return appendString(append(b, key...), s)
}

// appendTime appends t as time.Time's MarshalJSON does (RFC 3339 with
// nanoseconds), and fails where it fails: a year outside 0–9999, or an
// offset RFC 3339 cannot write.
func appendTime(b []byte, t time.Time) ([]byte, error) {
	_, offset := t.Zone()
	if y := t.Year(); y < 0 || y > 9999 || offset%60 != 0 || offset <= -24*3600 || offset >= 24*3600 {
		if _, err := t.MarshalJSON(); err != nil {
			return nil, fmt.Errorf("json: error calling MarshalJSON for type time.Time: %w", err)
		}
	}
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"'), nil
}

// jsonEscapes holds, for each ASCII byte, what a JSON string holds in
// its place, or "" where the byte stands for itself. RFC 8259 §7 requires
// the quotation mark, the reverse solidus and U+0000–U+001F to be escaped
// (two-character forms where it has them, \u00XX otherwise); encoding/json
// also escapes <, > and & (json.Marshal's HTMLEscape), and so does this
// table, so that the bytes are json.Marshal's.
var jsonEscapes = func() (t [utf8.RuneSelf]string) {
	for c := range 0x20 {
		t[c] = fmt.Sprintf(`\u%04x`, c)
	}
	short := map[byte]string{'\b': `\b`, '\t': `\t`, '\n': `\n`, '\f': `\f`, '\r': `\r`, '"': `\"`, '\\': `\\`,
		'<': `\u003c`, '>': `\u003e`, '&': `\u0026`}
	for c, e := range short {
		t[c] = e
	}
	return t
}()

// appendString appends s as json.Marshal writes a string: quoted, with
// jsonEscapes' replacements, each byte that begins no valid UTF-8
// sequence written as \ufffd (the replacement character), and U+2028 and
// U+2029 escaped (JavaScript reads them as line ends). Everything else,
// valid multibyte sequences included, is copied as it is. s is taken as
// alternating runs: bytes copied as they are, then bytes replaced.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	for {
		n := literalPrefix(s)
		b = append(b, s[:n]...)
		if n == len(s) {
			return append(b, '"')
		}
		b, s = appendEscapes(b, s[n:])
	}
}

// appendEscapes appends the replacements for the bytes s begins with, up
// to the first one that stands for itself, and returns the rest of s.
func appendEscapes(b []byte, s string) ([]byte, string) {
	for s != "" {
		if c := s[0]; c < utf8.RuneSelf {
			e := jsonEscapes[c]
			if e == "" {
				break
			}
			b = append(b, e...)
			s = s[1:]
			continue
		}
		r, width := utf8.DecodeRuneInString(s)
		var e string
		switch {
		case width == 1: // not UTF-8
			e = `\ufffd`
		case r == '\u2028':
			e = `\u2028`
		case r == '\u2029':
			e = `\u2029`
		default:
			return b, s
		}
		b = append(b, e...)
		s = s[width:]
	}
	return b, s
}

// literalPrefix returns how many of s's leading bytes appendString copies
// unchanged: ASCII without an entry in jsonEscapes, and whole valid UTF-8
// sequences other than U+2028 and U+2029.
func literalPrefix(s string) int {
	n := 0
	for n < len(s) {
		if s[n] < utf8.RuneSelf {
			if jsonEscapes[s[n]] != "" {
				break
			}
			n++
			continue
		}
		r, width := utf8.DecodeRuneInString(s[n:])
		if width == 1 || r == '\u2028' || r == '\u2029' {
			break
		}
		n += width
	}
	return n
}
