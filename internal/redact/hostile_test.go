package redact

import (
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
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
//
// The time is the CPU time of the goroutine's own thread, not the wall
// clock: on a busy machine the wall clock counts the time other
// processes ran, and a short measurement is more likely to fall in a
// quiet moment than a long one. (Measured by the wall clock under the
// race detector beside other packages' tests, one case once took 13.7 ms
// and 134 ms, ten times, for a rule the idle machine times at 0.56 ms
// and 2.1 ms.) Each time is an average over 30 ms of CPU or more, and
// each size's time the least of up to five such averages taken in turn
// with the other size's, while a rule that is quadratic is sixteen times
// slower in every round.
func TestHostileInputsAreLinear(t *testing.T) {
	r, _ := New(nil)
	perRun := func(t *testing.T, s string) time.Duration {
		start, n := threadCPU(t), 0
		for ; n < 3 || threadCPU(t)-start < 30*time.Millisecond; n++ {
			r.Redact(s)
		}
		return (threadCPU(t) - start) / time.Duration(n)
	}
	for name := range hostile {
		t.Run(name, func(t *testing.T) {
			// The thread is this goroutine's alone while it is locked, so
			// its CPU time is the redactor's (and the garbage collector's
			// assists).
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			linear(t, func(s string) time.Duration { return perRun(t, s) }, name)
		})
	}
}

// threadCPU is the CPU time the calling thread has used.
func threadCPU(t *testing.T) time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		t.Fatalf("reading the thread's CPU clock: %v", err)
	}
	return time.Duration(ts.Nano())
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
