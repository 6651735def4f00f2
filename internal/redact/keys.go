package redact

import (
	"regexp"
	"slices"
	"strings"
)

// Secrets named by a key: key=value pairs, command-line flags and
// Kubernetes env entries. The keys that hold one of the words below are
// found from the words' occurrences; secretKey then decides, by the
// key's parts, whether it names a secret (DB_PASSWORD_B64, clientSecret,
// ENCRYPTION_KEY) or something about one (secretName, token_ttl,
// max_tokens).

// keyWords: every secret key holds one of them (the triggers).
var keyWords = []string{"pass", "pwd", "pw", "secret", "token", "cred", "key", "sig", "sess"}

func isKeyByte(c byte) bool { return isWordByte(c) || c == '.' || c == '-' }

// keys returns the spans of the keys (runs of letters, digits, _ . -)
// that hold a key word, in order, each once.
func (t *text) keySpans() [][2]int {
	if t.keysDone {
		return t.keys
	}
	t.keysDone = true
	var at []int
	for _, w := range keyWords {
		for i := 0; ; {
			j := strings.Index(t.lower[i:], w)
			if j < 0 {
				break
			}
			at = append(at, i+j)
			i += j + len(w)
		}
	}
	slices.Sort(at)
	end := -1
	for _, i := range at {
		if i < end {
			continue // in the key found last
		}
		start := i
		for start > 0 && isKeyByte(t.s[start-1]) {
			start--
		}
		end = i
		for end < len(t.s) && isKeyByte(t.s[end]) {
			end++
		}
		t.keys = append(t.keys, [2]int{start, end})
	}
	return t.keys
}

// separator reads what follows a key at i: a closing quote (", ', `, \",
// \\\", %22, &quot;), spaces, a separator (= : => := %3D %3A), spaces.
// between is the quote and spaces before the separator; at is where the
// value starts; ok is false if there is no separator.
func separator(s string, i int) (between, sep string, at int, ok bool) {
	j, k := i, i
	for k < len(s) && k-i < 3 && s[k] == '\\' {
		k++
	}
	if k < len(s) && (s[k] == '"' || s[k] == '\'' || s[k] == '`') {
		j = k + 1
	} else {
		for _, q := range []string{"%22", "%27", "&quot;", "&#34;"} {
			if hasPrefixFold(s[j:], q) {
				j += len(q)
				break
			}
		}
	}
	for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
		j++
	}
	between = s[i:j]
	switch rest := s[j:]; {
	case strings.HasPrefix(rest, "=>") || strings.HasPrefix(rest, ":="):
		sep = rest[:2]
	case rest != "" && (rest[0] == ':' || rest[0] == '='):
		sep = rest[:1]
	case hasPrefixFold(rest, "%3a") || hasPrefixFold(rest, "%3d"):
		sep = rest[:3]
	default:
		return "", "", 0, false
	}
	at = j + len(sep)
	for at < len(s) && (s[at] == ' ' || s[at] == '\t') {
		at++
	}
	return between, sep, at, true
}

// keyValueRule: password=…, "clientSecret": "…", DB_PASSWORD_B64: …,
// {\"password\":\"…\"}, password%3D… (URL-encoded), X-Api-Key: ….
func keyValueRule() rule {
	return rule{name: "key-value", triggers: keyWords, find: func(t *text, out []span) []span {
		s := t.s
		covered := 0 // a value redacted already runs to here
		for _, k := range t.keySpans() {
			if k[0] < covered {
				continue
			}
			between, sep, at, ok := separator(s, k[1])
			if !ok || sep == ":" && at < len(s) && (s[at] == ':' || strings.HasPrefix(s[at:], "//")) || k[0] > 0 && s[k[0]-1] == '/' {
				continue // a path (a::b, registry/secret:1.2) or a URL (scheme://)
			}
			key := s[k[0]:k[1]]
			if !secretKey(key) || key == "PASS" && sep == ":" {
				continue // (--- PASS: TestX is a test passing)
			}
			// "a-secret" : x is a quoted name, not a key ("key" : "v" of
			// pretty-printed JSON has a quoted value).
			quotedName := strings.TrimRight(between, " \t") != between && strings.Trim(between, " \t") != ""
			if at < len(s) && (s[at] == '{' || s[at] == '(') {
				continue // a structure (its own pairs are found); not read
			}
			start, end, quoted, long := shortValue(s, at)
			if long {
				// Past maxValue bytes a value is a secret, whatever it
				// looks like: read whole, it is read once.
				start, end, _ = value(s, at)
				out, covered = append(out, span{start, end, Redacted}), end
				continue
			}
			v := s[start:end]
			if v == "" || isPlaceholder(v) || harmless(v) || shellDir(key, v) {
				continue
			}
			if !quoted && (sep == ":" && prose(v) || quotedName) {
				continue // words, or a quoted name
			}
			out, covered = append(out, span{start, end, Redacted}), end
		}
		return out
	}}
}

// flagRule: --password x, --client-secret "a b", -token x.
func flagRule() rule {
	return rule{name: "flag", triggers: keyWords, find: func(t *text, out []span) []span {
		s := t.s
		covered := 0
		for _, k := range t.keySpans() {
			if k[0] < covered || s[k[0]] != '-' || k[0] > 0 && strings.IndexByte(" \t\n\"'=[,(", s[k[0]-1]) < 0 {
				continue
			}
			at := k[1]
			for at < len(s) && (s[at] == ' ' || s[at] == '\t') {
				at++
			}
			if at == k[1] || at >= len(s) || s[at] == '-' || !secretKey(s[k[0]:k[1]]) {
				continue
			}
			if start, end := secretValue(s, at); start >= 0 {
				out, covered = append(out, span{start, end, Redacted}), end
			}
		}
		return out
	}}
}

var (
	userFlag = regexp.MustCompile(`(?:^|\s)(?:-u|--user|--username)[\s=]`)
	portLike = regexp.MustCompile(`^[0-9]+(?::[0-9]+)*(?:/[a-z]+)?$`)
)

// shortFlagRule: -p x / -pSECRET of the clients where -p is a password
// (mysql, mongo, sshpass, or beside a -u user flag; not docker's
// -p 8080:80), -a x of redis-cli.
func shortFlagRule() rule {
	return rule{name: "short-flag", triggers: []string{"-p", "-a"}, find: func(t *text, out []span) []span {
		s := t.s
		var line lineOf
		for _, flag := range []string{"-p", "-a"} {
			covered := 0 // a value redacted already runs to here
			for i := 0; ; {
				j := strings.Index(s[i:], flag)
				if j < 0 {
					break
				}
				f := i + j
				i = f + 2
				if f < covered || f > 0 && strings.IndexByte(" \t\n", s[f-1]) < 0 {
					continue
				}
				at := f + 2
				for at < len(s) && (s[at] == ' ' || s[at] == '\t') {
					at++
				}
				if at >= len(s) || s[at] == '-' {
					continue
				}
				// The line's answers first: a value is read only where
				// it may be a password.
				var client bool
				if flag == "-a" {
					if !line.mentions(t, f, mentionsAClient) {
						continue
					}
					client = true
				} else if client = line.mentions(t, f, mentionsPClient); !client && !line.mentions(t, f, mentionsUser) {
					continue
				}
				start, end, _, long := shortValue(s, at)
				if long {
					start, end, _ = value(s, at) // a secret (secretValue)
				} else if v := s[start:end]; v == "" || isPlaceholder(v) || !client && portLike.MatchString(v) {
					continue
				}
				out, covered = append(out, span{start, end, Redacted}), end
			}
		}
		return out
	}}
}

// secretValue: the value at i, or start < 0 if it is kept (nothing, a
// placeholder, harmless). A value longer than maxValue is a secret,
// whatever it looks like: only it is read whole, and it is redacted (so
// read once).
func secretValue(s string, i int) (start, end int) {
	start, end, _, long := shortValue(s, i)
	if long {
		start, end, _ = value(s, i)
		return start, end
	}
	if v := s[start:end]; v == "" || isPlaceholder(v) || harmless(v) {
		return -1, -1
	}
	return start, end
}

// closeQuote is a quote that may end a quoted name: ", ', `, \", \\\",
// %22, &quot;.
const closeQuote = `(?:\\{0,3}["'` + "`" + `]|%22|%27|&quot;|&#34;)?`

var envPair = regexp.MustCompile(`(?i)\bname` + closeQuote + `[ \t]*[:=][ \t]*\\{0,3}["']?([a-z0-9_.\-]+)` + closeQuote + `[ \t]*,?\s*\\{0,3}["']?value` + closeQuote + `[ \t]*[:=][ \t]*`)

// envPairRule: a container's env printed as data: {"name":"DB_PASSWORD",
// "value":"…"}, or name: DB_PASSWORD / value: … in YAML.
func envPairRule() rule {
	return rule{name: "env-pair", triggers: []string{"value"}, find: func(t *text, out []span) []span {
		s := t.s
		if !strings.Contains(t.lower, "name") {
			return out
		}
		covered := 0
		for _, m := range envPair.FindAllStringSubmatchIndex(s, -1) {
			if m[0] < covered || !secretKey(s[m[2]:m[3]]) {
				continue
			}
			if start, end := secretValue(s, m[1]); start >= 0 {
				out, covered = append(out, span{start, end, Redacted}), end
			}
		}
		return out
	}}
}

// lineOf is the line around a match and what it mentions, worked out
// once per line however many matches it holds.
type lineOf struct {
	start, end int
	known      bool
	answers    [4]int8 // by question: 0 not asked, 1 yes, -1 no
}

// Questions a rule asks of a line.
const (
	mentionsPClient = iota // mysql, mongo, sshpass: -p is a password
	mentionsAClient        // redis-cli: -a is a password
	mentionsAWS            // aws, secret, an access key id
	mentionsUser           // a -u/--user flag
)

var questions = [...][]string{
	mentionsPClient: {"mysql", "mariadb", "mongo", "sshpass"},
	mentionsAClient: {"redis-cli", "keydb-cli"},
	mentionsAWS:     {"aws", "secret", "akia", "asia"},
}

// mentions answers question q about the line of t holding position i.
func (l *lineOf) mentions(t *text, i, q int) bool {
	if !l.known || i < l.start || i >= l.end {
		l.start = strings.LastIndexByte(t.s[:i], '\n') + 1
		l.end = endOfLine(t.s, i, "")
		l.known, l.answers = true, [4]int8{}
	}
	if l.answers[q] == 0 {
		l.answers[q] = -1
		if q == mentionsUser && userFlag.MatchString(t.lower[l.start:l.end]) ||
			q != mentionsUser && containsAny(t.lower[l.start:l.end], questions[q]) {
			l.answers[q] = 1
		}
	}
	return l.answers[q] == 1
}

// shellDir: PWD=/app is the shell's working directory, not ODBC's
// password (Pwd=…).
func shellDir(key, v string) bool {
	k := strings.ToLower(strings.TrimLeft(key, "-"))
	return (k == "pwd" || k == "oldpwd") && (v[0] == '/' || v[0] == '~')
}
