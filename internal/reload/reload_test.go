package reload

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/herald-k8s/herald/config"
)

// TestAChangeIsAppliedOnceItsWriterIsDone: a file written in place is
// read empty, then whole; it is applied once, whole, when two checks in
// a row read the same content.
func TestAChangeIsAppliedOnceItsWriterIsDone(t *testing.T) {
	t.Parallel()
	hash := func(s string) []byte { h := sha256.Sum256([]byte(s)); return h[:] }
	c := steadyChange{last: hash("v1")}
	for i, step := range []struct {
		read  string
		apply bool
	}{
		{"v1", false},
		{"", false},   // truncated: an empty file hashes too
		{"v2", false}, // written: not yet known to be whole
		{"v2", true},  // the same a check later: applied
		{"v2", false}, // and only once
		{"v3", false},
		{"v2", false}, // changed back before it settled: nothing to apply
		{"v2", false},
		{"v3", false},
		{"v1", false}, // changed again before it settled
		{"v1", true},
	} {
		if got := c.done(hash(step.read)); got != step.apply {
			t.Errorf("check %d (read %q): apply %v, want %v", i, step.read, got, step.apply)
		}
	}
	if c.done(nil) {
		t.Error("an unreadable file was applied")
	}
}

// TestWhatIsBuiltAtStartRefusesTheChange: each setting herald builds once
// is named when it changes, and rules and sinks are not.
func TestWhatIsBuiltAtStartRefusesTheChange(t *testing.T) {
	t.Parallel()
	const (
		rules = "rules:\n  - {name: crash, kind: Pod, detector: %s, sinks: [%s]}\n"
		sinks = "sinks:\n  - {name: %s, stdout: {}}\n" +
			"  - name: chat\n    slack:\n      token: {value: xoxb-reload-test, allowPlaintext: true}\n      channel: \"#alerts\"\n" +
			"      interactive:\n        appToken: {value: xapp-1-A0RELOAD-1-0123abcd, allowPlaintext: true}\n" +
			"        allow: [{namespaces: [default], silence: [%s]}]\n"
		intake = "intake:\n  alertmanager: {listen: \"127.0.0.1:9094\", token: {value: %s, allowPlaintext: true}}\n"
	)
	// doc is a configuration: its rule's detector and sink, who may
	// press Silence, the receiver's token, and what else it says.
	doc := func(detector, sink, presser, token, extra string) *config.Config {
		t.Helper()
		text := fmt.Sprintf(rules, detector, sink) + fmt.Sprintf(sinks, sink, presser) + fmt.Sprintf(intake, token) + extra
		cfg, err := config.Parse("herald.yaml", []byte(text))
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		return cfg
	}
	old := doc("crashloop", "out", "U0ANA1", "token-one-0123456789", "")
	for name, tc := range map[string]struct {
		cur  *config.Config
		want []string
	}{
		"nothing":   {doc("crashloop", "out", "U0ANA1", "token-one-0123456789", ""), nil},
		"workers":   {doc("crashloop", "out", "U0ANA1", "token-one-0123456789", "workers: 9\n"), []string{"workers"}},
		"incidents": {doc("crashloop", "out", "U0ANA1", "token-one-0123456789", "incidents: {startup: notify}\n"), []string{"incidents"}},
		"context":   {doc("crashloop", "out", "U0ANA1", "token-one-0123456789", "context: {wait: 3s}\n"), []string{"context"}},
		"two":       {doc("crashloop", "out", "U0ANA1", "token-one-0123456789", "workers: 3\ncontext: {wait: 3s}\n"), []string{"workers", "context"}},
		// Another person allowed to press a button; a new token.
		"buttons": {doc("crashloop", "out", "U0BOB2", "token-one-0123456789", ""), []string{"slack.interactive"}},
		"intake":  {doc("crashloop", "out", "U0ANA1", "token-two-0123456789", ""), []string{"intake"}},
		// Rules and sinks change at run time.
		"rules and sinks": {doc("oomkilled", "out2", "U0ANA1", "token-one-0123456789", ""), nil},
	} {
		if got := builtAtStart(old, tc.cur); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", name, got, tc.want)
		}
	}
	if got := changedRules(old, doc("oomkilled", "out", "U0ANA1", "token-one-0123456789", "")); !got["crash"] || len(got) != 1 {
		t.Errorf("changed rules: %v, want crash alone", got)
	}
}

// TestARotatedTokenIsNoChange: the receiver's token file rewritten with a
// new token (a Secret rotated) does not make the next change of the
// configuration a change of the receiver, which would refuse it whole.
func TestARotatedTokenIsNoChange(t *testing.T) {
	t.Parallel()
	token := filepath.Join(t.TempDir(), "token")
	doc := func(secret, extra string) *config.Config {
		t.Helper()
		if err := os.WriteFile(token, []byte(secret), 0o600); err != nil {
			t.Fatal(err)
		}
		text := fmt.Sprintf("intake:\n  alertmanager: {listen: \"127.0.0.1:9094\", token: {file: %q}}\n", token) +
			"rules:\n  - {name: crash, kind: Pod, detector: crashloop, sinks: [out]}\nsinks:\n  - {name: out, stdout: {}}\n" + extra
		cfg, err := config.Parse("herald.yaml", []byte(text))
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		return cfg
	}
	old := doc("token-one-0123456789", "")
	if got := builtAtStart(old, doc("token-two-0123456789", "routes: []\n")); got != nil {
		t.Errorf("the token rotated, then a change: %q, want nothing built at start changed", got)
	}
}

// TestNewRequiresItsHooks: a loop without a way to compile or to replace
// the sinks is refused at start, not a panic at the first change.
func TestNewRequiresItsHooks(t *testing.T) {
	t.Parallel()
	if _, err := New(Options{Path: "herald.yaml", Interval: time.Second}); err == nil {
		t.Error("a loop with nothing to compile with was made")
	}
}
