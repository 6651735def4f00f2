package redact

import (
	"strings"
	"testing"
)

// shapes a secret V stands in; FuzzRedactInContext puts each in
// arbitrary surroundings.
var shapes = []string{
	"password=V",
	"DB_PASSWORD_B64: V",
	`{"clientSecret":"V"}`,
	`{\"password\":\"V\"}`,
	"Authorization: Bearer V",
	"postgres://app:V@db:5432/shop",
	"--password V",
	"Cookie: V",
	"V",
	"-----BEGIN PRIVATE KEY-----\nV\n-----END PRIVATE KEY-----",
}

// FuzzRedactInContext: a value the redactor removes from a simple line
// (password=V) it removes from that line in any surroundings (any text
// before and after it on the same line); and redacting twice is
// redacting once.
func FuzzRedactInContext(f *testing.F) {
	for i := range shapes {
		f.Add(uint8(i), "hunter2-Pa55", "2026-11-22T10:00:05Z INFO", "sslmode=require")
	}
	f.Add(uint8(8), "ghp_R2d2C3poL0ngT0kenF0rT3st1ngAbcd12345", `{"msg":"`, `"}`)
	f.Add(uint8(1), "correct horse", `"`, "")
	f.Add(uint8(5), "p@ss", "dial", "@db/x")
	f.Add(uint8(9), "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj", "2026 stderr F", "panic")
	r, _ := New(nil)
	f.Fuzz(func(t *testing.T, shape uint8, v, prefix, suffix string) {
		simple := strings.ReplaceAll(shapes[int(shape)%len(shapes)], "V", v)
		// V is one word (the rest of a partly redacted "a b" could meet
		// the suffix and spell it again), the surroundings one line.
		if v == "" || strings.ContainsAny(v, " \t\r\n\f\v") || strings.Contains(prefix+" "+suffix, v) || strings.ContainsAny(prefix+suffix, "\n") {
			return
		}
		if strings.Contains(bare(r.Redact(simple)), v) {
			return // not redacted in the simple line either
		}
		wide := prefix + " " + simple + " " + suffix
		out := r.Redact(wide)
		if strings.Contains(bare(out), v) {
			t.Errorf("%q is redacted in\n%q\nbut not in\n%q\n→ %q", v, simple, wide, out)
		}
		if again := r.Redact(out); again != out {
			t.Errorf("redacting twice changes\n%q\n→ %q", out, again)
		}
	})
}

// bare is text without its placeholders (a value may be part of one).
func bare(s string) string { return placeholder.ReplaceAllString(s, "\x00") }
