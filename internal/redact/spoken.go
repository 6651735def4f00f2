package redact

import (
	"regexp"
	"slices"
	"strings"
)

// Secrets with a key word but no separator: what people write in prose,
// in shells and in .netrc files rather than as key=value.

// netrcRule: machine host login user password X (and "default login …
// password X"), the .netrc format curl, git and ftp read. The value is a
// secret whatever it looks like: the line's shape says so.
func netrcRule() rule {
	re := regexp.MustCompile(`(?i)\b(?:machine[ \t]+\S+|default)[ \t]+login[ \t]+\S+[ \t]+password[ \t]+(\S+)`)
	return rule{name: "netrc", triggers: []string{"login"}, find: group(re, Redacted, harmless)}
}

// userFlagRule: curl's -u user:password and --user user:password (and =):
// the part after the first colon.
// The user may be an e-mail address (-u ops@example.com:pw); a numeric
// user and group (docker's --user 1000:1000) is not a password.
func userFlagRule() rule {
	re := regexp.MustCompile(`(?:^|[\s'"])(?:-u|--user)(?:[ \t]+|=)['"]?([^\s:'"/]{1,128}):([^\s'"]+)`)
	return rule{name: "user-flag", triggers: []string{"-u"}, find: func(t *text, out []span) []span {
		for _, m := range re.FindAllStringSubmatchIndex(t.s, -1) {
			user, pw := t.s[m[2]:m[3]], t.s[m[4]:m[5]]
			// git's and rsync's -u take user@host:path, not a password.
			remote := strings.Contains(user, "@") && (strings.HasPrefix(pw, "/") || strings.HasPrefix(pw, "~") || strings.HasSuffix(pw, ".git"))
			if isPlaceholder(pw) || harmless(pw) || digits(user) && digits(pw) || remote {
				continue
			}
			out = append(out, span{m[4], m[5], Redacted})
		}
		return out
	}}
}

func digits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// spokenWords are the key words a secret follows after a space, in prose
// or a shell ("passwd s3cr3t", "set PGPASSWORD to …", "apikey …"). Not
// "secret", which names Kubernetes Secrets (secret "db-creds" not found).
var spokenKey = regexp.MustCompile(`(?i)(?:\b|_)(?:password|passwd|passphrase|pgpassword|mysql_pwd|api[ _-]?key|token)(?:[ \t]+(?:to|is|was|of))?[ \t]+`)

// spokenRule: a spoken key word, then a value that is quoted (any value:
// password 'correct horse') or looks like a secret (letters with a digit
// and a digit: "token expired" and "password for bob" stay). A pagination
// or counting token (next page token X, token 42) is not one.
func spokenRule() rule {
	return rule{name: "spoken", triggers: []string{"passw", "passp", "pgpassword", "mysql_pwd", "apikey", "api_key", "api-key", "api key", "token"},
		find: func(t *text, out []span) []span {
			s := t.s
			for _, m := range spokenKey.FindAllStringIndex(s, -1) {
				if notSecretBefore(s, m[0]) {
					continue
				}
				at := m[1]
				if at < len(s) && (s[at] == '\'' || s[at] == '"') {
					q := s[at]
					end := strings.IndexByte(s[at+1:], q)
					if end > 0 && end <= 256 && strings.IndexByte(s[at+1:at+1+end], '\n') < 0 {
						if v := s[at+1 : at+1+end]; len(v) >= 4 && !isPlaceholder(v) && !harmless(v) {
							out = append(out, span{at + 1, at + 1 + end, Redacted})
						}
						continue
					}
					at++ // a quote never closed: the value runs as if unquoted
				}
				end := at
				for end < len(s) && !strings.ContainsRune(" \t\r\n'\"", rune(s[end])) {
					end++
				}
				for end > at && strings.IndexByte(".,;:)]}!?", s[end-1]) >= 0 {
					end-- // the sentence's, not the value's
				}
				if end-at > 256 {
					continue
				}
				if v := s[at:end]; secretLooking(v) && !isPlaceholder(v) && !harmless(v) {
					out = append(out, span{at, end, Redacted})
				}
			}
			return out
		}}
}

// notSecretBefore says whether the word before the key word at i makes
// it a token of another kind (next page token, cancel token).
func notSecretBefore(s string, i int) bool {
	j := i
	for j > 0 && (s[j-1] == ' ' || s[j-1] == '\t' || s[j-1] == '_' || s[j-1] == '-') {
		j--
	}
	k := j
	for k > 0 && isWordByte(s[k-1]) {
		k--
	}
	prev := strings.ToLower(s[k:j])
	if i := strings.LastIndexAny(prev, "_-"); i >= 0 {
		prev = prev[i+1:] // next_page_token: the word is "page"
	}
	return prev == "unexpected" || slices.Contains(notSecretTokens, prev) // a parser's "Unexpected token '<'"
}

// secretLooking: at least 6 bytes with a letter and a digit — not a
// word, a number, a path, a URL or a key=value pair of its own (a "/"
// inside a long value without dots and "=" padding at the end, as base64
// has, are a secret's).
func secretLooking(v string) bool {
	body := strings.TrimRight(v, "=")
	path := strings.HasPrefix(v, "/") && !mixed(v) // "/Xk3pQ9Zr2b+Lw==" is base64
	if len(v) < 6 || strings.ContainsAny(body, "=<>") || path || strings.HasPrefix(v, ".") || strings.Contains(v, "://") {
		return false
	}
	if strings.Contains(v, "/") && (len(v) < 12 || strings.Contains(v, ".")) {
		return false // a path or a protocol (HTTP/1.1), not base64
	}
	var letter, digit bool
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			letter = true
		case c >= '0' && c <= '9':
			digit = true
		}
	}
	return letter && digit
}
