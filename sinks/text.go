package sinks

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/herald-k8s/herald/internal/incident"
)

// Text helpers the integrations share to fit what pods say (any length,
// not always UTF-8) into their receivers' limits. Invalid UTF-8 becomes
// U+FFFD, and a cut is never inside a character and is marked with "…".

// Head keeps at most max bytes of the start of s.
func Head(s string, limit int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= limit {
		return s
	}
	i := max(limit-len("…"), 0)
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// Tail keeps at most max bytes of the end of s: for a log tail the last
// lines matter most.
func Tail(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= max {
		return s
	}
	i := len(s) - max + len("…")
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return "…" + s[i:]
}

// Truncate keeps at most n characters of the start of s, in one pass
// that stops at the (n+1)th: log tails can be large.
func Truncate(n int, s string) string {
	if n <= 0 {
		return ""
	}
	cut, count := len(s), 0
	for i := range s {
		if count == n-1 {
			cut = i
		}
		if count == n {
			return strings.ToValidUTF8(s[:cut], "\uFFFD") + "…"
		}
		count++
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// TruncateBytes keeps at most n bytes of the start of s, never half a
// UTF-8 sequence, ending in … (3 bytes, counted) when it cut.
func TruncateBytes(n int, s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	const ellipsis = "…"
	if n < len(ellipsis) {
		return ""
	}
	cut := n - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}

// TruncateEnd keeps at most n characters of the end of s.
func TruncateEnd(n int, s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if n <= 0 {
		return ""
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, count := len(s), 0
	for count < n-1 {
		_, size := utf8.DecodeLastRuneInString(s[:i])
		i -= size
		count++
	}
	return "…" + s[i:]
}

// EventLine is one of a pod's events in one line.
func EventLine(e incident.Event) string {
	return fmt.Sprintf("%s %s (×%d): %s", e.Type, e.Reason, e.Count, e.Message)
}
