package redact

import "strings"

// quotes a value can open with, longest first: JSON inside a JSON string
// (\" and \\\"), URL-encoded and HTML-escaped quotes, and Go's printing
// of an http.Header (Key:[value]).
var quotes = []struct{ open, close string }{
	{`\\\"`, `\\\"`}, {`\"`, `\"`}, {`\'`, `\'`},
	{"&quot;", "&quot;"}, {"&#34;", "&#34;"}, {"%22", "%22"}, {"%27", "%27"},
	{`"`, `"`}, {`'`, `'`}, {"`", "`"}, {"[", "]"},
}

// value finds the value that starts at i (after a key and its separator):
// a quoted one runs to its closing quote (spaces and all; to the end of
// the line if there is none), an unquoted one to the first space or
// quote, an & (URL query), or a ',' or ';' that starts another key=…
// pair, without trailing punctuation. quoted says which.
func value(s string, i int) (start, end int, quoted bool) {
	start, end, quoted, _ = valueWithin(s, i, len(s))
	return start, end, quoted
}

// maxValue bounds the scan of a value a rule may yet keep (harmless, a
// placeholder, a structure): a text of many keys, each of whose value
// runs to the end of the line, is read in linear time.
const maxValue = 4 << 10

// shortValue is value, read no further than maxValue bytes: long says it
// stopped there (the value is longer; value reads it whole).
func shortValue(s string, i int) (start, end int, quoted, long bool) {
	return valueWithin(s, i, maxValue)
}

// valueWithin is value read no further than limit bytes from i; long
// says the limit stopped it before the end of s.
func valueWithin(s string, i, limit int) (start, end int, quoted, long bool) {
	if n := placeholderAt(s, i); n > 0 {
		return i, i + n, false, false
	}
	lim := len(s)
	if limit < len(s)-i {
		lim = i + limit
	}
	if close, n := openQuote(s, i); n > 0 {
		end = closing(s[:max(lim, i+n)], i+n, close)
		return i + n, end, true, end >= lim && lim < len(s)
	}
	end = i
scan:
	for ; end < lim; end++ {
		switch c := s[end]; c {
		case ' ', '\t', '\r', '\n', '"', '\'', '`', '&':
			break scan
		case '\\':
			// An escape of the string around: \" \n \t ...
			if end+1 < len(s) && strings.IndexByte(`"'nrt\`, s[end+1]) >= 0 {
				break scan
			}
		case ',', ';':
			if startsPair(s[end+1:]) {
				break scan
			}
		case '%':
			// URL-encoded & or space: the value of a form ends there.
			if rest := s[end:]; hasPrefixFold(rest, "%26") || hasPrefixFold(rest, "%20") {
				break scan
			}
		}
	}
	if end == lim && lim < len(s) {
		return i, end, false, true
	}
	for end > i && strings.IndexByte(",;.)}]>:", s[end-1]) >= 0 {
		end--
	}
	return i, end, false, false
}

// placeholderAt: the length of the placeholder at i (a redaction's), or 0.
// Only the first maxPlaceholder bytes are read.
func placeholderAt(s string, i int) int {
	if !strings.HasPrefix(s[i:], "<redacted") {
		return 0
	}
	j := strings.IndexByte(s[i:min(len(s), i+maxPlaceholder)], '>')
	if j < 0 || !isPlaceholder(s[i:i+j+1]) {
		return 0
	}
	return j + 1
}

// startsPair says whether s starts (after spaces) with key= or key:.
func startsPair(s string) bool {
	s = strings.TrimLeft(s, " ")
	n := 0
	for n < len(s) && (isWordByte(s[n]) || s[n] == '.' || s[n] == '-') {
		n++
	}
	return n > 0 && n < len(s) && (s[n] == '=' || s[n] == ':')
}

func isWordByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_'
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// harmless values say nothing secret: booleans, nothing, a mask, a
// reference to where the secret is ($VAR, ${VAR}, {{ .x }}).
func harmless(v string) bool {
	if len(v) <= len("[filtered]") {
		switch strings.ToLower(v) {
		case "", "true", "false", "null", "nil", "<nil>", "none", "yes", "no", "on", "off",
			"enabled", "disabled", "undefined", "empty", "set", "unset", "required", "optional",
			"redacted", "[redacted]", "[filtered]", "[hidden]", "<hidden>", "{}", "[]", "-":
			return true
		}
	}
	if strings.Trim(v, "*") == "" || len(v) >= 3 && strings.Trim(v, "xX") == "" {
		return true
	}
	if strings.HasPrefix(v, "${") && strings.HasSuffix(v, "}") || strings.HasPrefix(v, "{{") && strings.HasSuffix(v, "}}") {
		return true
	}
	if v[0] == '$' && len(v) > 1 {
		for i := 1; i < len(v); i++ {
			if !isWordByte(v[i]) {
				return false
			}
		}
		return true
	}
	return false
}

// proseWords follow "key: " in error chains and sentences, not secrets:
// "failed to refresh token: context deadline exceeded", "password: must
// be 8 characters". A value of lower-case letters only that is one of
// them is kept after ": " (never after "=", never quoted).
var proseWords = map[string]bool{
	"a": true, "an": true, "the": true, "is": true, "was": true, "are": true, "has": true, "have": true,
	"not": true, "no": true, "must": true, "should": true, "cannot": true, "can": true, "could": true,
	"will": true, "would": true, "did": true, "does": true, "too": true, "for": true, "of": true,
	"to": true, "in": true, "on": true, "at": true, "from": true, "with": true, "by": true, "and": true,
	"or": true, "but": true, "if": true, "when": true, "then": true, "this": true, "that": true,
	"it": true, "its": true, "be": true, "been": true, "got": true, "get": true, "use": true,
	"context": true, "deadline": true, "timeout": true, "timed": true, "expired": true, "expires": true,
	"invalid": true, "missing": true, "empty": true, "unknown": true, "unexpected": true,
	"unauthorized": true, "forbidden": true, "denied": true, "failed": true, "failure": true,
	"error": true, "errors": true, "unable": true, "open": true, "read": true, "write": true,
	"dial": true, "connection": true, "connect": true, "permission": true, "access": true,
	"request": true, "response": true, "exec": true, "executable": true, "malformed": true,
	"required": true, "ok": true, "found": true, "refused": true, "reset": true, "closed": true,
	"eof": true, "crypto": true, "tls": true, "http": true, "rpc": true, "oauth": true,
	"verification": true, "verify": true, "signature": true, "mismatch": true, "rejected": true,
	"revoked": true, "disabled": true, "enabled": true, "updated": true, "rotated": true,
	"created": true, "deleted": true, "loaded": true, "changed": true, "saved": true, "ignored": true,
	"skipping": true, "using": true, "retrying": true, "refreshing": true, "parsing": true,
	"decoding": true, "reading": true, "writing": true, "loading": true, "fetching": true,
	"such": true, "file": true, "directory": true, "value": true, "field": true, "key": true,
	"token": true, "credentials": true, "length": true,
	"characters": true, "format": true, "allowed": true, "granted": true, "type": true, "none": true, "nil": true, "provided": true,
}

// prose says whether an unquoted value after ": " reads as words.
func prose(v string) bool {
	for i := 0; i < len(v); i++ {
		if v[i] < 'a' || v[i] > 'z' {
			return false
		}
	}
	return proseWords[v]
}
