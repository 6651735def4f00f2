package reload

import (
	"crypto/sha256"
	"slices"
	"testing"

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
	parse := func(doc string) *config.Config {
		t.Helper()
		cfg, err := config.Parse("herald.yaml", []byte(doc))
		if err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		return cfg
	}
	const base = "rules:\n  - {name: crash, kind: Pod, detector: crashloop, sinks: [out]}\nsinks:\n  - {name: out, stdout: {}}\n"
	old := parse(base)
	for extra, want := range map[string][]string{
		"":                                  nil,
		"workers: 9\n":                      {"workers"},
		"incidents: {startup: notify}\n":    {"incidents"},
		"context: {wait: 3s}\n":             {"context"},
		"workers: 3\ncontext: {wait: 3s}\n": {"workers", "context"},
	} {
		if got := builtAtStart(old, parse(base+extra)); !slices.Equal(got, want) {
			t.Errorf("with %q: %q, want %q", extra, got, want)
		}
	}
	// Rules and sinks change at run time.
	other := parse("rules:\n  - {name: crash, kind: Pod, detector: oomkilled, sinks: [out2]}\nsinks:\n  - {name: out2, stdout: {}}\n")
	if got := builtAtStart(old, other); got != nil {
		t.Errorf("rules and sinks changed: %q, want nothing", got)
	}
	if got := changedRules(old, other); !got["crash"] || len(got) != 1 {
		t.Errorf("changed rules: %v, want crash alone", got)
	}
}
