package redact

import (
	"regexp"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Private keys in PEM (and PGP armour, SSH2) blocks, of any key type, on
// one line (JSON with \n escapes) or many, with log prefixes. Only the
// block is redacted: a BEGIN line whose END is not in the text (a log
// tail cut, a message quoting the marker) takes the key material lines
// after it and stops at the first line that is not one, so the lines
// that say why a container crashed stay.

var (
	pemBegin = regexp.MustCompile(`-{4,5} ?BEGIN (?:[A-Z0-9]+ )*(?:PRIVATE|SECRET) KEY(?: BLOCK)? ?-{4,5}`)
	pemEnd   = regexp.MustCompile(`-{4,5} ?END (?:[A-Z0-9]+ )*(?:PRIVATE|SECRET) KEY(?: BLOCK)? ?-{4,5}`)
)

// maxKeyLines bounds a block: a 16384-bit RSA key in PEM is ~200 lines.
const maxKeyLines = 400

func pemRule() rule {
	return rule{name: "pem", triggers: []string{"private key", "secret key"}, find: func(t *text, out []span) []span {
		s := t.s
		ends := pemEnd.FindAllStringIndex(s, -1)
		covered := 0
		first := len(out)
		var line lineFields // the BEGIN markers' line
		for _, b := range pemBegin.FindAllStringIndex(s, -1) {
			if b[0] < covered {
				continue
			}
			covered = blockEnd(s, b, ends, &line)
			out = append(out, span{b[0], covered, privateKey})
		}
		// An END no BEGIN reached: the text starts inside a key. The
		// blocks are in order, as are the ENDs.
		blocks, next := out[first:], 0
		line = lineFields{}
		var above linesAbove
		for _, e := range ends {
			for next < len(blocks) && blocks[next].end <= e[0] {
				next++
			}
			if next < len(blocks) && blocks[next].start <= e[0] {
				continue // in a block
			}
			if start := materialBefore(s, e[0], &line, &above); start < e[0] {
				out = append(out, span{start, e[1], privateKey})
			}
		}
		return out
	}}
}

// lineFields is the line of a position and the number of fields
// (strings.Fields) from its start to the position, worked out once per
// line for positions asked in order (many markers on one line).
type lineFields struct {
	start, end int // the line; end 0: none yet
	at, fields int // fields in [start, at)
	inField    bool
}

// of returns the start and end of the line holding i, and the number of
// fields in s[start:i]. i is at or after the previous one asked, and on
// an ASCII byte or at the end of s.
func (l *lineFields) of(s string, i int) (start, end, fields int) {
	if l.end == 0 || i < l.at || i > l.end {
		*l = lineFields{start: lineStart(s, i), end: endOfLine(s, i, "")}
		l.at = l.start
	}
	for l.at < i {
		r, n := utf8.DecodeRuneInString(s[l.at:])
		space := unicode.IsSpace(r)
		if !space && !l.inField {
			l.fields++
		}
		l.inField = !space
		l.at += n
	}
	return l.start, l.end, l.fields
}

// blockEnd is where the block that begins at b ends: its END marker when
// the lines up to it are key material, else the end of its material.
func blockEnd(s string, b []int, ends [][]int, line *lineFields) int {
	_, eol, prefix := line.of(s, b[0])
	// The first END after the BEGIN.
	if n := sort.Search(len(ends), func(n int) bool { return ends[n][0] >= b[1] }); n < len(ends) {
		e := ends[n]
		if e[0] < eol {
			return e[1] // on one line
		}
		ok, lines, endStart := true, 0, lineStart(s, e[0])
		for at := eol + 1; at < endStart; at = endOfLine(s, at, "") + 1 {
			if lines++; lines > maxKeyLines || !material(s[at:endOfLine(s, at, "")], prefix, false) {
				ok = false
				break
			}
		}
		if ok {
			return e[1]
		}
	}
	// No END, or lines that are not key material before it: the rest of
	// the BEGIN line up to a quote, then the material lines after it.
	end := endOfLine(s, b[1], `"'`)
	if end < eol {
		return end
	}
	for lines := 0; end < len(s) && lines < maxKeyLines; lines++ {
		at := end + 1
		lineEnd := endOfLine(s, at, "")
		if !material(s[at:lineEnd], prefix, true) {
			break
		}
		end = lineEnd
	}
	return end
}

// materialBefore: where the key material that ends at the END marker at
// e starts (e itself when there is none): on its line, base64 (and \n
// escapes) just before it; then whole material lines above.
func materialBefore(s string, e int, line *lineFields, above *linesAbove) int {
	start := e
	for start > 0 && (isB64(s[start-1]) || s[start-1] == '=' || s[start-1] == '\\') {
		start--
	}
	// start is past the END before it: the line is read once.
	ls, _, prefix := line.of(s, start)
	if above.ls != ls {
		*above = linesAbove{ls: ls}
	}
	for n := 0; n < maxKeyLines; n++ {
		l, ok := above.line(s, n)
		if !ok || !l.material(prefix) {
			break
		}
		start = l.last
	}
	return start
}

// linesAbove are the lines above the line that starts at ls, each read
// once however many END markers that line holds.
type linesAbove struct {
	ls    int
	lines []aboveLine
}

// aboveLine is what material (strict) needs to know of a line.
type aboveLine struct {
	start  int
	fields int  // strings.Fields
	header bool // a PEM header
	b64    bool // its last field is key material, as strict wants
	last   int  // where its last field starts
}

func (l aboveLine) material(prefix int) bool {
	return l.fields > 0 && (l.header || l.b64 && (l.fields == 1 || l.fields == prefix+1))
}

// line returns the n-th line above (0: the one just above), read when
// first asked for; ok is false above the text's first line.
func (a *linesAbove) line(s string, n int) (aboveLine, bool) {
	for len(a.lines) <= n {
		ls := a.ls
		if k := len(a.lines); k > 0 {
			ls = a.lines[k-1].start
		}
		if ls == 0 {
			return aboveLine{}, false
		}
		prev := lineStart(s, ls-1)
		text := s[prev : ls-1]
		f := strings.Fields(text)
		l := aboveLine{start: prev, fields: len(f), header: pemHeader(text)}
		if len(f) > 0 {
			last := f[len(f)-1]
			l.last = prev + strings.LastIndex(text, last)
			l.b64 = isB64Field(last) && (len(last) >= 40 || mixed(last))
		}
		a.lines = append(a.lines, l)
	}
	return a.lines[n], true
}

func lineStart(s string, i int) int { return strings.LastIndexByte(s[:i], '\n') + 1 }

// material says whether a line is part of a key block: a log prefix of
// the marker line's width (or none), then base64; or a PEM header. Strict
// (no END in sight) also wants the base64 to look generated: long, or of
// mixed case with a digit or symbol (a word like "database" is not).
func material(line string, prefix int, strict bool) bool {
	f := strings.Fields(line)
	if len(f) == 0 {
		return !strict
	}
	if pemHeader(line) {
		return true
	}
	last := f[len(f)-1]
	if len(f) != 1 && len(f) != prefix+1 || !isB64Field(last) {
		return false
	}
	return !strict || len(last) >= 40 || mixed(last)
}

// pemHeader: the line holds a PEM header (Proc-Type:, DEK-Info:, ...).
func pemHeader(line string) bool {
	for _, h := range []string{"Proc-Type:", "DEK-Info:", "Comment:", "Version:"} {
		if strings.Contains(line, h) {
			return true
		}
	}
	return false
}

// isB64Field: base64 characters, then at most two '='.
func isB64Field(f string) bool {
	f = strings.TrimSuffix(strings.TrimSuffix(f, "="), "=")
	for i := 0; i < len(f); i++ {
		if !isB64(f[i]) {
			return false
		}
	}
	return f != ""
}

// base64Rule: 60 or more base64 characters that look generated, standing
// alone (a field, a quoted value) — a key's body from before the tail
// began, an encrypted blob. Hex (digests, hashes), paths (/a/b, dir/a/b) and runs
// inside a longer name (a-b_c.d) are not.
func base64Rule() rule {
	return rule{name: "base64", minRun: 60, find: func(t *text, out []span) []span {
		s := t.s
		for i := 0; i < len(s); {
			if !isB64(s[i]) {
				i++
				continue
			}
			j := i
			for j < len(s) && isB64(s[j]) {
				j++
			}
			end := j
			for end < len(s) && end-j < 2 && s[end] == '=' {
				end++
			}
			if end-i >= 60 && !pathLike(s[i:j]) && !joined(s, i, end) && mixed(s[i:j]) {
				out = append(out, span{i, end, base64Blob})
			}
			i = max(j, i+1)
		}
		return out
	}}
}

// pathLike: /a/b, or dir/a/b (a lower-case name, then two slashes or
// more); random base64 starts so well under 1% of the time.
func pathLike(run string) bool {
	if run[0] == '/' {
		return true
	}
	first := strings.IndexByte(run, '/')
	if first <= 0 || strings.Count(run, "/") < 2 {
		return false
	}
	for i := 0; i < first; i++ {
		if run[i] < 'a' || run[i] > 'z' {
			return false
		}
	}
	return true
}

// joined: the run [i, end) is part of a longer name (a-b, a_b, a.b, %2F).
func joined(s string, i, end int) bool {
	return i > 0 && strings.IndexByte("-_.%", s[i-1]) >= 0 || end < len(s) && strings.IndexByte("-_.%", s[end]) >= 0
}
