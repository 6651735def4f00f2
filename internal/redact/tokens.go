package redact

import (
	"encoding/base64"
	"regexp"
	"strings"
)

// Secrets named by where they stand: headers, URLs, DSNs, and tokens
// whose format says what they are.

var (
	authHead   = regexp.MustCompile(`(?i)\b(?:proxy-)?authorization` + closeQuote + `[ \t]*[:=][ \t]*`)
	authScheme = regexp.MustCompile(`(?i)^(?:bearer|basic|token|digest|negotiate|ntlm|dpop|apikey|api-key|sso|aws4-hmac-sha256|sharedkey|hoba|mutual|vapid|scram-sha-[0-9]+|gssapi)[ \t]+`)
)

// authorizationRule: Authorization: Bearer …, "authorization":"Basic …",
// Authorization:[Digest …] (Go's printing of a header). The scheme stays;
// a quoted value goes to its closing quote, an unquoted one is one word
// (Digest and AWS4 ones, lists of parameters, to the end of the line).
func authorizationRule() rule {
	return rule{name: "authorization", triggers: []string{"authorization"}, find: func(t *text, out []span) []span {
		s := t.s
		covered := 0
		for _, m := range authHead.FindAllStringIndex(s, -1) {
			if m[0] < covered {
				continue
			}
			at := m[1]
			close, n := openQuote(s, at)
			at += n
			scheme := authScheme.FindString(s[at:])
			at += len(scheme)
			var start, end int
			switch {
			case close != "":
				start, end = at, closing(s, at, close)
			case paramScheme(scheme):
				start, end = at, endOfLine(s, at, "]")
			default:
				start, end, _ = value(s, at)
				if v := s[start:end]; v != "" && scheme == "" && (harmless(v) || prose(v)) {
					continue
				}
			}
			if v := s[start:end]; v != "" && !isPlaceholder(v) {
				out, covered = append(out, span{start, end, Redacted}), end
			}
		}
		return out
	}}
}

// paramScheme: schemes whose credentials are a list of parameters.
func paramScheme(scheme string) bool {
	return scheme != "" && containsAny(strings.ToLower(scheme), []string{"digest", "aws4", "hoba", "mutual", "vapid", "scram"})
}

var bearer = regexp.MustCompile(`(?i)\bbearer[ \t]+([a-z0-9\-._~+/]+=*)`)

// bearerRule: "Bearer <token>" anywhere; a word ("bearer token") stays.
func bearerRule() rule {
	return rule{name: "bearer", triggers: []string{"bearer"}, find: group(bearer, Redacted, func(v string) bool {
		return len(v) < 8 || strings.ToLower(v) == v && strings.Trim(v, "abcdefghijklmnopqrstuvwxyz-") == ""
	})}
}

var basic = regexp.MustCompile(`(?i)\bbasic[ \t]+([a-z0-9+/]{4,}={0,2})`)

// basicRule: "Basic <base64>" anywhere, when it decodes to user:password.
func basicRule() rule {
	return rule{name: "basic", triggers: []string{"basic"}, find: group(basic, Redacted, func(v string) bool {
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			b, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(v, "="))
		}
		return err != nil || !strings.Contains(string(b), ":")
	})}
}

var cookieHead = regexp.MustCompile(`(?i)\b(?:set-)?cookie` + closeQuote + `[ \t]*[:=][ \t]*`)

// cookieRule: Cookie: and Set-Cookie: headers, their whole value.
func cookieRule() rule {
	return rule{name: "cookie", triggers: []string{"cookie"}, find: func(t *text, out []span) []span {
		s := t.s
		covered := 0
		for _, m := range cookieHead.FindAllStringIndex(s, -1) {
			if m[0] < covered {
				continue
			}
			at := m[1]
			close, n := openQuote(s, at)
			at += n
			end := endOfLine(s, at, `"]`)
			if close != "" {
				end = closing(s, at, close)
			}
			if v := strings.TrimSpace(s[at:end]); v != "" && !isPlaceholder(v) && !harmless(v) {
				out, covered = append(out, span{at, end, Redacted}), end
			}
		}
		return out
	}}
}

// urlRule: the password of a URL's user-info, any scheme, an empty user
// (redis://:pw@host), an @ in the password (postgres://u:p@ss@db).
func urlRule() rule {
	return rule{name: "url", triggers: []string{"://"}, find: func(t *text, out []span) []span {
		s := t.s
		for i := 0; ; {
			j := strings.Index(s[i:], "://")
			if j < 0 {
				break
			}
			at := passwordAt(s, i+j)
			i += j + 3
			if at < 0 {
				continue
			}
			for k := at; k < len(s) && k-at < maxURLPassword && !urlStop(s[k]) && !strings.HasPrefix(s[k:], "://"); k++ {
				if s[k] != '@' || !hostAt(s, k+1) {
					continue
				}
				if pw := s[at:k]; pw != "" && !isPlaceholder(pw) && !portThenPath(pw) {
					out = append(out, span{at, k, Redacted})
				}
				break
			}
		}
		return out
	}}
}

// passwordAt: where the password of the URL whose "://" is at i starts
// (after scheme://user:), or -1 when it has no user-info with a colon.
func passwordAt(s string, i int) int {
	start := i
	for start > 0 && (isWordByte(s[start-1]) && s[start-1] != '_' || strings.IndexByte("+.-", s[start-1]) >= 0) {
		start--
	}
	for start < i && !('a' <= s[start]|0x20 && s[start]|0x20 <= 'z') {
		start++
	}
	if start == i {
		return -1
	}
	for k := i + 3; k < len(s); k++ {
		switch c := s[k]; {
		case c == ':':
			return k + 1
		case strings.IndexByte(" \t\r\n/?#@\"'<>[]\\", c) >= 0:
			return -1
		}
	}
	return -1
}

// maxURLPassword bounds the search for the @ that ends a password, so a
// long line of scheme://user: does not cost its length squared.
const maxURLPassword = 256

func urlStop(c byte) bool { return strings.IndexByte(" \t\r\n\"'<>\\`", c) >= 0 }

// hostAt: a host (and port) starts at i and ends where a URL's authority
// does — so that in u:p@ss@db the first @ is the password's.
func hostAt(s string, i int) bool {
	j := i
	for j < len(s) && (isWordByte(s[j]) || strings.IndexByte(".-~%[]:", s[j]) >= 0) {
		j++
	}
	return j > i && (j == len(s) || urlStop(s[j]) || strings.IndexByte("/?#,;)]", s[j]) >= 0)
}

// portThenPath: host:8080/a@b is a port and a path, not user:password.
func portThenPath(pw string) bool {
	i := 0
	for i < len(pw) && '0' <= pw[i] && pw[i] <= '9' {
		i++
	}
	return i > 0 && i < len(pw) && pw[i] == '/'
}

var dsn = regexp.MustCompile(`(?:^|[\s"'=(])[A-Za-z0-9_.\-]*:([^\s"']+?)@(?:tcp|udp|unix)\(`)

// dsnRule: Go MySQL data source names, user:password@tcp(host:3306)/db.
func dsnRule() rule {
	return rule{name: "dsn", triggers: []string{"@tcp(", "@udp(", "@unix("}, find: group(dsn, Redacted, nil)}
}

var b64run40 = regexp.MustCompile(`[A-Za-z0-9/+]{40,}`)

// awsSecretRule: a 40-character AWS secret access key with no key name,
// on a line that speaks of AWS or secrets. Hex (a commit) is not one.
func awsSecretRule() rule {
	return rule{name: "aws-secret-key", triggers: []string{"aws", "secret", "akia", "asia"}, minRun: 40, find: func(t *text, out []span) []span {
		s := t.s
		var line lineOf
		for _, m := range b64run40.FindAllStringIndex(s, -1) {
			if m[1]-m[0] != 40 || m[1] < len(s) && s[m[1]] == '=' || !mixed(s[m[0]:m[1]]) {
				continue
			}
			if line.mentions(t, m[0], mentionsAWS) {
				out = append(out, span{m[0], m[1], "<redacted AWS secret key>"})
			}
		}
		return out
	}}
}

// openQuote: the quote a value opens with at i (its closing form, and
// its length), if any.
func openQuote(s string, i int) (close string, n int) {
	for _, q := range quotes {
		if strings.HasPrefix(s[i:], q.open) {
			return q.close, len(q.open)
		}
	}
	return "", 0
}

// closing: where the quoted value from i ends: its closing quote (one
// that is not escaped: "a \"b\" c"), or the end of the line.
func closing(s string, i int, close string) int {
	escapes := close == `"` || close == `'`
	for j := i; j < len(s); j++ {
		switch {
		case s[j] == '\n':
			return j
		case escapes && s[j] == '\\':
			j++ // the next character is escaped
		case s[j] == close[0] && strings.HasPrefix(s[j:], close):
			return j
		}
	}
	return len(s)
}

// endOfLine: the end of the line from i, or the first of stops before it.
func endOfLine(s string, i int, stops string) int {
	for j := i; j < len(s); j++ {
		if s[j] == '\n' || strings.IndexByte(stops, s[j]) >= 0 {
			return j
		}
	}
	return len(s)
}
