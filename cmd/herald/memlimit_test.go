package main

import (
	"runtime/debug"
	"strings"
	"testing"
)

// TestSetMemoryLimit: the container's limit (from the chart) becomes the
// runtime's soft limit at 85%; an explicit GOMEMLIMIT wins; a bad value is
// an error that names the variable, and sets nothing.
func TestSetMemoryLimit(t *testing.T) {
	beside(t)
	before := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(before)
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }

	got, err := setMemoryLimit(env(map[string]string{envMemoryLimit: "268435456"}))
	if err != nil || got != 228170137 {
		t.Fatalf("256 MiB limit: set %d (%v), want 228170137", got, err)
	}
	if now := debug.SetMemoryLimit(-1); now != got {
		t.Fatalf("runtime memory limit %d, want %d", now, got)
	}
	debug.SetMemoryLimit(before)

	if got, err := setMemoryLimit(env(map[string]string{envMemoryLimit: "268435456", "GOMEMLIMIT": "100MiB"})); err != nil || got != 0 {
		t.Fatalf("with GOMEMLIMIT: set %d (%v), want nothing", got, err)
	}
	if got, err := setMemoryLimit(env(nil)); err != nil || got != 0 {
		t.Fatalf("without a limit: set %d (%v), want nothing", got, err)
	}
	for _, bad := range []string{"256Mi", "-1", "0"} {
		got, err := setMemoryLimit(env(map[string]string{envMemoryLimit: bad}))
		if err == nil || got != 0 || !strings.Contains(err.Error(), envMemoryLimit) {
			t.Errorf("%q: set %d, error %v; want an error naming %s", bad, got, err, envMemoryLimit)
		}
		if now := debug.SetMemoryLimit(-1); now != before {
			t.Errorf("%q changed the runtime's limit to %d", bad, now)
		}
	}
}
