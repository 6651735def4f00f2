// Package termsafe keeps text from the cluster from acting on a terminal.
//
// Titles, Event messages, log lines, silence comments and names are
// written by people herald does not trust. Printed raw, an escape
// sequence in them can recolour or rewrite what an operator reads, clear
// the screen, set the clipboard (OSC 52) or hide a link behind other text
// (OSC 8); a new line can forge a line of output. Control characters (C0
// but tab, DEL, C1), the Unicode line and paragraph separators and the
// bidirectional overrides print as visible escapes instead.
package termsafe

import (
	"fmt"
	"io"
	"strings"
)

// Line keeps s on one line: new lines print as \n and \r.
func Line(s string) string { return escape(s, false) }

// Text keeps s's new lines (a multi-line message), escaping the rest.
func Text(s string) string { return escape(s, true) }

func escape(s string, keepNewlines bool) string {
	unsafe := func(r rune) bool { return Unsafe(r) && !(keepNewlines && r == '\n') }
	if !strings.ContainsFunc(s, unsafe) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case !unsafe(r):
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

// Unsafe says whether r must not reach a terminal as it is.
func Unsafe(r rune) bool {
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

// JSON makes encoding/json's output inert: it escapes C0 controls but
// leaves DEL, C1, the bidi overrides and the line separators raw inside
// strings; this writes each as a \uXXXX escape, which keeps the JSON valid
// and the same (they only occur inside strings).
func JSON(b []byte) []byte {
	s := string(b)
	unsafe := func(r rune) bool { return Unsafe(r) && r != '\n' && r != '\t' && r >= 0x20 }
	if !strings.ContainsFunc(s, unsafe) {
		return b
	}
	var out strings.Builder
	for _, r := range s {
		if unsafe(r) {
			fmt.Fprintf(&out, `\u%04x`, r)
			continue
		}
		out.WriteRune(r)
	}
	return []byte(out.String())
}

// Writer escapes what is written through it as Text does: for a
// command's whole output, so that nothing printed from the cluster
// reaches the terminal raw, whichever line prints it.
type Writer struct{ W io.Writer }

func (w Writer) Write(p []byte) (int, error) {
	if _, err := io.WriteString(w.W, Text(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
