package redact

import (
	"strings"
	"unicode/utf8"
)

// Bound returns at most n bytes of s, valid UTF-8, for a Redactor to read:
// a text from the cluster can be megabytes, and the redactor should see
// more than is finally kept, but not all of it. When it has to cut, the
// word the cut falls in goes too (DropCutWord).
func Bound(s string, n int) string {
	if len(s) <= n {
		return strings.ToValidUTF8(s, "\uFFFD")
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return DropCutWord(strings.ToValidUTF8(s[:n], "\uFFFD"))
}

// DropCutWord removes the last word of a text that was cut short: back to
// the last space, tab or line break (all of it when there is none). A
// secret cut in two is a shape no rule knows, and redacting what comes
// before it shortens the text, which can pull the fragment into the part
// that is kept.
func DropCutWord(s string) string {
	i := strings.LastIndexAny(s, " \t\r\n")
	if i < 0 {
		return ""
	}
	return s[:i]
}
