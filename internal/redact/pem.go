package redact

import (
	"regexp"
	"strings"
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
		for _, b := range pemBegin.FindAllStringIndex(s, -1) {
			if b[0] < covered {
				continue
			}
			covered = blockEnd(s, b, ends)
			out = append(out, span{b[0], covered, privateKey})
		}
		// An END no BEGIN reached: the text starts inside a key.
		blocks := out
		for _, e := range ends {
			if inSpans(blocks, e[0]) {
				continue
			}
			if start := materialBefore(s, e[0]); start < e[0] {
				out = append(out, span{start, e[1], privateKey})
			}
		}
		return out
	}}
}

func inSpans(spans []span, i int) bool {
	for _, sp := range spans {
		if sp.label == privateKey && sp.start <= i && i < sp.end {
			return true
		}
	}
	return false
}

// blockEnd is where the block that begins at b ends: its END marker when
// the lines up to it are key material, else the end of its material.
func blockEnd(s string, b []int, ends [][]int) int {
	eol := endOfLine(s, b[1], "")
	prefix := len(strings.Fields(s[lineStart(s, b[0]):b[0]]))
	for _, e := range ends {
		if e[0] < b[1] {
			continue
		}
		if e[0] < eol {
			return e[1] // on one line
		}
		ok, lines := true, 0
		for at := eol + 1; at < lineStart(s, e[0]); at = endOfLine(s, at, "") + 1 {
			if lines++; lines > maxKeyLines || !material(s[at:endOfLine(s, at, "")], prefix, false) {
				ok = false
				break
			}
		}
		if ok {
			return e[1]
		}
		break
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
func materialBefore(s string, e int) int {
	start := e
	for start > 0 && (isB64(s[start-1]) || s[start-1] == '=' || s[start-1] == '\\') {
		start--
	}
	ls := lineStart(s, e)
	prefix := len(strings.Fields(s[ls:start]))
	for lines := 0; ls > 0 && lines < maxKeyLines; lines++ {
		prev := lineStart(s, ls-1)
		line := s[prev : ls-1]
		if !material(line, prefix, true) {
			break
		}
		f := strings.Fields(line)
		start = prev + strings.LastIndex(line, f[len(f)-1])
		ls = prev
	}
	return start
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
	for _, h := range []string{"Proc-Type:", "DEK-Info:", "Comment:", "Version:"} {
		if strings.Contains(line, h) {
			return true
		}
	}
	last := f[len(f)-1]
	if len(f) != 1 && len(f) != prefix+1 || !isB64Field(last) {
		return false
	}
	return !strict || len(last) >= 40 || mixed(last)
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
