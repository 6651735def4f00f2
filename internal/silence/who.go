package silence

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxWho bounds a silence's createdBy as messages repeat it: the CRD
// allows 256 characters, more than a name needs beside an alert.
const maxWho = 80

// oneLine is s, written by whoever created the silence, as one visible
// line of at most max characters: a line break or a bidi control in a
// createdBy must not write lines of its own into an alert ("Muted by …
// until …" followed by a forged one).
func oneLine(s string, max int) string {
	var b strings.Builder
	n := 0
	for _, r := range s {
		if n == max {
			b.WriteString("…")
			break
		}
		switch {
		case r == utf8.RuneError, unicode.IsControl(r), unicode.Is(unicode.Bidi_Control, r), r == '\u2028', r == '\u2029':
			r = ' '
		}
		b.WriteRune(r)
		n++
	}
	return strings.Join(strings.Fields(b.String()), " ")
}
