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
// the last space, tab or line break. A secret cut in two is a shape no
// rule knows, and redacting what comes before it shortens the text, which
// can pull the fragment into the part that is kept. A text with no
// whitespace at all (one long JSON line, a query string) is cut back to
// its last separator instead — a quote, a bracket, a comma, "=", ":",
// "&" — which a token does not hold: what follows it goes, the key before
// it stays (all of it goes when there is none).
func DropCutWord(s string) string {
	if i := strings.LastIndexAny(s, " \t\r\n"); i >= 0 {
		return s[:i]
	}
	if i := strings.LastIndexAny(s, separators); i >= 0 {
		return s[:i+1]
	}
	return ""
}

// separators end a key or a value in text without whitespace; a token
// holds none of them.
const separators = `"',;{}[]()<>&|=:`
