package enrich

import (
	"fmt"
	"regexp"
)

// redaction is one pattern and what replaces it.
type redaction struct {
	re   *regexp.Regexp
	with string
}

// builtIn are the secrets logs most often print. Each keeps what says
// what it was (the key, the scheme) and replaces only the value.
var builtIn = []redaction{
	// PEM private keys, to their END line or the end of the text (a tail
	// that starts inside one is handled by the base64 rule below).
	{regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\z)`), "<redacted private key>"},
	// Authorization headers and bearer tokens.
	{regexp.MustCompile(`(?i)(authorization["']?\s*[:=]\s*["']?)(?:(?:bearer|basic|token|negotiate)\s+)?[^\s"',;]+`), "${1}<redacted>"},
	{regexp.MustCompile(`(?i)\b(bearer\s+)[A-Za-z0-9\-._~+/]+=*`), "${1}<redacted>"},
	// Passwords in URLs: scheme://user:password@host.
	{regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.-]*://[^:/@\s]*:)[^@\s/]+@`), "${1}<redacted>@"},
	// key=value and key: value pairs whose key names a secret.
	{regexp.MustCompile(`(?i)\b((?:[a-z0-9_-]*(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|client[_-]?secret|credentials?))["']?\s*[:=]\s*["']?)[^\s"',;&}]+`), "${1}<redacted>"},
	// AWS access key IDs.
	{regexp.MustCompile(`\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}\b`), "<redacted AWS key id>"},
	// JSON Web Tokens.
	{regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`), "<redacted JWT>"},
	// A line of nothing but base64, as long as a PEM body line: the
	// middle of a key whose BEGIN line was before the tail.
	{regexp.MustCompile(`(?m)^[A-Za-z0-9+/]{60,}={0,2}$`), "<redacted base64>"},
}

// Redactor removes secrets from text before it leaves herald.
type Redactor struct {
	rules []redaction
}

// NewRedactor makes a redactor of the built-in patterns and extra ones
// (Go regular expressions; each match is replaced whole).
func NewRedactor(extra []string) (*Redactor, error) {
	r := &Redactor{rules: append([]redaction(nil), builtIn...)}
	for i, e := range extra {
		re, err := regexp.Compile(e)
		if err != nil {
			return nil, fmt.Errorf("redact[%d]: %w", i, err)
		}
		r.rules = append(r.rules, redaction{re, "<redacted>"})
	}
	return r, nil
}

// Redact returns text with every secret the patterns find replaced.
func (r *Redactor) Redact(text string) string {
	for _, rule := range r.rules {
		text = rule.re.ReplaceAllString(text, rule.with)
	}
	return text
}
