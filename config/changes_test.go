package config

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestChangesConfig: context.changes is on by default for the three
// workload kinds with a 30 min window; a window out of range, a kind
// herald cannot record, and an empty kind list are refused where they
// are written.
func TestChangesConfig(t *testing.T) {
	const base = "rules: [{name: r, kind: Pod, detector: crashloop, sinks: [h]}]\nsinks: [{name: h, webhook: {url: 'http://x'}}]\n"
	cfg, err := Parse("c.yaml", []byte(base))
	if err != nil {
		t.Fatal(err)
	}
	cc := cfg.Context.Changes
	if !cc.On() || cc.Window != 30*time.Minute || !slices.Equal(cc.Kinds, ChangeKinds) || !*cc.ConfigObjects {
		t.Errorf("defaults: %+v", cc)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"context: {changes: {window: 10s}}\n", "c.yaml:1:29: context.changes.window: must be between 1m and 24h, got 10s"},
		{"context: {changes: {kinds: [Deployment, Job]}}\n", `context.changes.kinds[1]: must be one of Deployment, StatefulSet, DaemonSet; got "Job"`},
		{"context: {changes: {kinds: []}}\n", "context.changes.kinds: names no kind"},
	} {
		_, err := Parse("c.yaml", []byte(tc.yaml+base))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.yaml, err, tc.want)
		}
	}
	if cfg, err := Parse("c.yaml", []byte("context: {changes: {enabled: false, kinds: []}}\n"+base)); err != nil || cfg.Context.Changes.On() {
		t.Errorf("turned off: %v", err)
	}
}
