package redact

import (
	"math"
	"strings"
	"testing"
	"time"
)

// hostile are texts built to make a rule rescan the rest of a line at
// every match; each unit is repeated to the size asked.
var hostile = map[string]struct{ head, unit string }{
	"unclosed quotes": {"", `password="a `},
	"URL heads":       {"", "x://y:"},
	"URL at signs":    {"x://y:", "a@"},
	"short flags":     {"mysql", " -p x"},
	// No client on the line: each -p asks whether it has a -u flag.
	"short flags, no client":        {"", " -p x"},
	"short flags, unclosed quotes":  {"mysql", ` -p "a`},
	"short flags, no client quoted": {"", ` -p "a`},
	"key flags, harmless":           {"", ` --password ${a}`},
	"aws-like runs":                 {"aws ", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY "},
	"BEGIN markers":                 {"", "-----BEGIN PRIVATE KEY-----\n"},
	// BEGIN markers on one line, each ended by a quote.
	"BEGIN markers, quoted": {"", "-----BEGIN PRIVATE KEY-----'"},
	"BEGIN and END pairs":   {"", "-----BEGIN PRIVATE KEY-----\n-----END PRIVATE KEY-----\n"},
	// END markers with no newline; and after a line of key material.
	"END markers, one line":      {"", "-----END PRIVATE KEY-----"},
	"END markers after material": {"MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj\n", "-----END PRIVATE KEY-----"},
	"END markers":                {"", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj\n-----END PRIVATE KEY-----\n"},
	"digest headers":             {"", "Authorization: Digest a=b "},
	"cookies":                    {"", "Cookie: a=b "},
	"commas":                     {"password=", "a,"},
	"escaped quotes":             {`password="`, `\"`},
	"one long line":              {"", "password=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"},
	"env pairs":                  {"", `{"name":"DB_PASSWORD","value":"`},
	"env pairs, harmless":        {"", `{"name":"DB_PASSWORD","value":"${a}`},
	// Values skipped (a structure, a reference) that run to the line's end.
	"open braces":       {"", "password={"},
	"references":        {"", `password="${a}`},
	"placeholder heads": {"", "password=<redacted "},
	"bearer words":      {"", "bearer "},
	"keys, no values":   {"", "secret_token_key_"},
	"long base64 lines": {"", "QUJDRGVmZ2gxMjM0NTY3ODkwQUJDRGVmZ2gxMjM0NTY3ODkwQUJDRGVmZ2gxMjM0NTY3ODkw\n"},
	// Every vendor format's literal, none followed by a token.
	"vendor literals": {"", `ghp_x glpat-x xoxb-x SKx pul-x dapix EAAAx glc_x sha256~x AIzax AKIAx LTAIx 8Q~x "auth":"x" %3A%2F%2Fa%3Ab eyJx.y API-x pat.x `},
}

func hostileText(name string, size int) string {
	h := hostile[name]
	return h.head + strings.Repeat(h.unit, size/len(h.unit))
}

// TestHostileInputsAreLinear: four times the text costs about four times
// the time, not sixteen (a rule that rescans the line at each match).
// Each time is an average over 30 ms of runs or more, and each size's
// time the least of up to five such averages taken in turn with the
// other size's: a busy machine only ever adds time, so the least is the
// closest to the cost itself (one pair of averages, under the race
// detector beside other packages' tests, once took 3.4 ms and 40.7 ms,
// where the idle machine takes about 2 ms and 13 ms), while a
// rule that is quadratic is sixteen times slower in every round.
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
		t.Run(name, func(t *testing.T) { linear(t, perRun, name) })
	}
}

func linear(t *testing.T, perRun func(string) time.Duration, name string) {
	small, large := time.Duration(math.MaxInt64), time.Duration(math.MaxInt64)
	for range 5 {
		small, large = min(small, perRun(hostileText(name, 16<<10))), min(large, perRun(hostileText(name, 64<<10)))
		if large <= 9*small+5*time.Millisecond {
			break
		}
	}
	t.Logf("%s: 16 KB %s, 64 KB %s", name, small, large)
	if large > 9*small+5*time.Millisecond {
		t.Errorf("%s: 16 KB %s, 64 KB %s: not linear", name, small, large)
	}
}

// TestPlaceholdersAreExact: only herald's own placeholders are kept as
// one; a value past maxValue is redacted whole.
func TestPlaceholdersAreExact(t *testing.T) {
	r, _ := New(nil)
	for in, want := range map[string]string{
		"password=<redactedhunter2>":                          "password=<redacted>>", // (a value's trailing > is punctuation)
		"password=<redacted>":                                 "password=<redacted>",
		"password=<redacted private key> x":                   "password=<redacted private key> x",
		"token: <redacted GitHub token>":                      "token: <redacted GitHub token>",
		`password="${` + strings.Repeat("a", maxValue) + `}"`: `password="<redacted>"`,
	} {
		if got := r.Redact(in); got != want {
			t.Errorf("%.60q → %.60q, want %.60q", in, got, want)
		}
	}
}
