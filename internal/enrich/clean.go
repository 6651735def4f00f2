package enrich

import (
	"bytes"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/herald-k8s/herald/internal/redact"
)

// Terminal escapes: CSI sequences (colours, cursor moves), OSC sequences
// (titles, links) and the two-byte ones. A log read in a chat tool shows
// them as garbage.
var ansi = regexp.MustCompile(`\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]`)

// maxLine bounds one log line: a 10 MB JSON line must not become the
// alert. Its start is kept (timestamp, level, message come first).
const maxLine = 1000

const lineCut = " … (line cut)"

// cleanTail turns the end of a container log into at most maxLines lines of at
// most maxBytes in all: valid UTF-8, no terminal escapes or control
// characters, secrets redacted, each line bounded. Older lines are cut
// first; the newest line is always kept (cut if it alone is too long).
// truncated says whether anything was cut.
func cleanTail(raw []byte, maxLines, maxBytes int, r *redact.Redactor) (lines []string, truncated bool) {
	// What was fetched is bounded already (limitBytes); bound it here too,
	// so the work below is, whatever a source returns.
	if limit := maxBytes * fetchFactor; len(raw) > limit {
		midLine := raw[len(raw)-limit-1] != '\n'
		raw, truncated = raw[len(raw)-limit:], true
		if midLine {
			// The cut fell inside a line: what is left of it has lost
			// its start, the key name that says a secret follows
			// (password=…), so no pattern would know it. It goes.
			if i := bytes.IndexByte(raw, '\n'); i >= 0 {
				raw = raw[i+1:]
			} else {
				raw = []byte(strings.TrimSpace(lineCut)) // one huge line
			}
		}
	}
	text := strings.ToValidUTF8(string(raw), "\uFFFD")
	text = ansi.ReplaceAllString(text, "")
	text = strings.Map(func(c rune) rune {
		if c == '\n' || c == '\t' || (c >= 0x20 && c != 0x7f && !(c >= 0x80 && c < 0xa0)) {
			return c
		}
		return -1 // NUL, CR, other controls
	}, text)
	all := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if len(all) == 1 && all[0] == "" {
		return nil, false
	}
	if len(all) > maxLines {
		all = all[len(all)-maxLines:]
		truncated = true
	}
	// Redact before cutting lines: a cut could leave part of a secret
	// that no pattern recognises any more. (A PEM key over several lines
	// becomes one line; the lines after it stay.)
	all = strings.Split(r.Redact(strings.Join(all, "\n")), "\n")
	size := 0
	for i := len(all) - 1; i >= 0; i-- {
		line := all[i]
		if len(line) > maxLine {
			line, truncated = cutRunes(line, maxLine)+lineCut, true
		}
		if size+len(line)+1 > maxBytes && len(lines) > 0 {
			truncated = true
			break
		}
		if len(line) > maxBytes { // the newest line alone is too long
			line, truncated = cutRunes(line, maxBytes-len(lineCut))+lineCut, true
		}
		size += len(line) + 1
		lines = append(lines, line)
	}
	for i, j := 0, len(lines)-1; i < j; i, j = i+1, j-1 {
		lines[i], lines[j] = lines[j], lines[i]
	}
	return lines, truncated
}

// cutRunes cuts s to at most n bytes without splitting a character.
func cutRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
