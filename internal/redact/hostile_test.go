package redact

import (
	"strings"
	"testing"
	"time"
)

// hostile are texts built to make a rule rescan the rest of a line at
// every match; each unit is repeated to the size asked.
var hostile = map[string]struct{ head, unit string }{
	"unclosed quotes":   {"", `password="a `},
	"URL heads":         {"", "x://y:"},
	"URL at signs":      {"x://y:", "a@"},
	"short flags":       {"mysql", " -p x"},
	"aws-like runs":     {"aws ", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY "},
	"BEGIN markers":     {"", "-----BEGIN PRIVATE KEY-----\n"},
	"END markers":       {"", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj\n-----END PRIVATE KEY-----\n"},
	"digest headers":    {"", "Authorization: Digest a=b "},
	"cookies":           {"", "Cookie: a=b "},
	"commas":            {"password=", "a,"},
	"escaped quotes":    {`password="`, `\"`},
	"one long line":     {"", "password=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"},
	"env pairs":         {"", `{"name":"DB_PASSWORD","value":"`},
	"bearer words":      {"", "bearer "},
	"keys, no values":   {"", "secret_token_key_"},
	"long base64 lines": {"", "QUJDRGVmZ2gxMjM0NTY3ODkwQUJDRGVmZ2gxMjM0NTY3ODkwQUJDRGVmZ2gxMjM0NTY3ODkw\n"},
}

func hostileText(name string, size int) string {
	h := hostile[name]
	return h.head + strings.Repeat(h.unit, size/len(h.unit))
}

// TestHostileInputsAreLinear: four times the text costs about four times
// the time, not sixteen (a rule that rescans the line at each match).
// Each time is an average over 30 ms of runs or more, so that both sizes
// see a busy machine's time slicing alike; an input has three tries (a
// rule that is quadratic fails all three, a busy machine seldom does).
func TestHostileInputsAreLinear(t *testing.T) {
	r, _ := New(nil)
	perRun := func(s string) time.Duration {
		start, n := time.Now(), 0
		for ; n < 3 || time.Since(start) < 30*time.Millisecond; n++ {
			r.Redact(s)
		}
		return time.Since(start) / time.Duration(n)
	}
	for name := range hostile {
		var small, large time.Duration
		for range 3 {
			small, large = perRun(hostileText(name, 16<<10)), perRun(hostileText(name, 64<<10))
			if large <= 9*small+5*time.Millisecond {
				break
			}
		}
		t.Logf("%s: 16 KB %s, 64 KB %s", name, small, large)
		if large > 9*small+5*time.Millisecond {
			t.Errorf("%s: 16 KB %s, 64 KB %s: not linear", name, small, large)
		}
	}
}
